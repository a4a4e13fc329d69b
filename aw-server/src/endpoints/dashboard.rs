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
const FILES: &[Embedded] = embed![
    "index.html",
    "style.css",
    "favicon.svg",
    "app.js",
    "api.js",
    "dom.js",
    "format.js",
    "colors.js",
    "queries.js",
    "default-classes.js",
    "browsers.js",
    "period.js",
    "combine-hosts.js",
    "components/barlist.js",
    "components/daychart.js",
    "components/importer.js",
    "components/roving.js",
    "components/stackbar.js",
    "components/history_edit.js",
    "components/storage.js",
    "components/bucket_edit.js",
    "components/privacy_rules.js",
    "components/storage_upkeep.js",
    "components/retention_rules.js",
    "views/activity.js",
    "views/trends.js",
    "views/timeline.js",
    "views/buckets.js",
    "views/query.js",
    "views/categories.js",
    "views/settings.js",
];

/// The embedded file at `path` (relative to `webui/`, e.g. `index.html` or `app.js`), with
/// its content type from the extension.
pub(crate) fn embedded(path: &str) -> Option<(ContentType, &'static [u8])> {
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

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(embedded("app.js").unwrap().0, ContentType::JavaScript);
        assert_eq!(
            embedded("views/activity.js").unwrap().0,
            ContentType::JavaScript
        );
        assert_eq!(embedded("style.css").unwrap().0, ContentType::CSS);
        assert_eq!(embedded("favicon.svg").unwrap().0, ContentType::SVG);
    }

    /// Every module the dashboard imports (`from './x.js'`) and every `/static/` file
    /// `index.html` names is embedded: a file missing from `FILES` would only show up as a
    /// broken page.
    #[test]
    fn every_referenced_file_is_embedded() {
        let mut missing = Vec::new();
        let mut checked = 0;
        for file in FILES {
            let text = std::str::from_utf8(file.bytes).unwrap_or("");
            let dir = file.path.rsplit_once('/').map_or("", |(d, _)| d);
            for marker in ["from '", "from \"", "\"/static/"] {
                for (at, _) in text.match_indices(marker) {
                    let rest = &text[at + marker.len()..];
                    let quoted = &rest[..rest.find(['\'', '"']).unwrap_or(rest.len())];
                    let target = if marker.contains("/static/") {
                        quoted.to_string()
                    } else {
                        resolve(dir, quoted)
                    };
                    checked += 1;
                    if embedded(&target).is_none() {
                        missing.push(format!("{} -> {target}", file.path));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not embedded: {missing:?}");
        assert!(checked > FILES.len(), "only {checked} references found");
    }

    /// `rel` (`./x.js`, `../x.js`) relative to directory `dir` of `webui/`.
    fn resolve(dir: &str, rel: &str) -> String {
        let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        for seg in rel.split('/') {
            match seg {
                "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        parts.join("/")
    }
}
