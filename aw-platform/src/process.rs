//! Whether another process still runs: for an owner file that names one
//! (`aw_datastore`'s lock where `flock` fails).

/// Whether the process `pid` exists (`kill(pid, 0)`); `None` where that cannot be told.
pub fn is_running(pid: u32) -> Option<bool> {
    #[cfg(unix)]
    {
        let pid = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return Some(true);
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EPERM) => Some(true),
            Some(libc::ESRCH) => Some(false),
            _ => None,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_runs_and_a_reaped_child_does_not() {
        assert_eq!(super::is_running(std::process::id()), Some(true));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(super::is_running(pid), Some(false));
    }
}
