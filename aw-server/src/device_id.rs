//! The stable id of this installation, kept in `<data_dir>/device_id`.

use std::io;
use std::path::Path;

/// Reads the device id from `path`, creating it with a new random UUID v4 when absent.
/// The file's content is used verbatim, as the reference does.
pub(crate) fn load_or_create(path: &Path) -> io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(id) => Ok(id),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let id = uuid::Uuid::new_v4().hyphenated().to_string();
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, &id)?;
            Ok(id)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_stable() {
        let dir = std::env::temp_dir().join(format!("aw-device-id-{}", std::process::id()));
        let path = dir.join("device_id");
        let a = load_or_create(&path).unwrap();
        assert_eq!(a.len(), 36);
        assert_eq!(load_or_create(&path).unwrap(), a);
        let _ = std::fs::remove_dir_all(dir);
    }
}
