//! The device's name.

/// This machine's host name, as bucket ids (`aw-watcher-window_<hostname>`), `/api/0/info`
/// and sync folders name the device. A name that is not valid UTF-8 keeps its valid parts
/// (invalid bytes become U+FFFD) rather than turning into one shared placeholder, so two
/// such devices still get different names.
pub fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}
