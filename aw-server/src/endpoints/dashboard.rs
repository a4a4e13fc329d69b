//! The built-in dashboard: static files compiled into the binary from `aw-server/webui/`,
//! served at `/` (its `index.html`) and `/static/…` whenever no `--webpath` is given.

use rocket::http::ContentType;

/// One embedded file: its path below `webui/` and its bytes.
struct Embedded {
    path: &'static str,
    bytes: &'static [u8],
}

macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$(Embedded { path: $path, bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/webui/", $path)) }),*]
    };
}

/// Every file of the dashboard. A new file must be listed here to be served.
const FILES: &[Embedded] = embed!["index.html", "style.css"];

/// The embedded file at `path` (relative to `webui/`, e.g. `index.html` or `app.js`), with
/// its content type from the extension.
pub fn embedded(path: &str) -> Option<(ContentType, &'static [u8])> {
    let file = FILES.iter().find(|f| f.path == path)?;
    let ext = path.rsplit('.').next().unwrap_or("");
    let content_type = ContentType::from_extension(ext).unwrap_or(ContentType::Binary);
    Some((content_type, file.bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_assets_are_embedded() {
        let (ct, bytes) = embedded("index.html").unwrap();
        assert_eq!(ct, ContentType::HTML);
        assert!(!bytes.is_empty());
        assert!(embedded("style.css").is_some());
        assert!(embedded("../Cargo.toml").is_none());
    }
}
