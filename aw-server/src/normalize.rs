//! Path normalisation: empty path segments are ignored, as in the reference (Rocket 0.5
//! routing), so `/api/0/buckets`, `/api/0/buckets/` and `//api//0/buckets` are one route.

use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::uri::Origin;
use rocket::{Data, Request};

/// Rewrites request paths without empty segments (percent-encoding is kept as sent).
pub(crate) struct NormalizePath;

/// `path` without empty segments; `None` when it is already normal.
pub(crate) fn normalized(path: &str) -> Option<String> {
    if path == "/" || (!path.contains("//") && !path.ends_with('/')) {
        return None;
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    Some(format!("/{}", segments.join("/")))
}

#[rocket::async_trait]
impl Fairing for NormalizePath {
    fn info(&self) -> Info {
        Info {
            name: "Ignore empty path segments",
            kind: Kind::Request,
        }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        let Some(path) = normalized(req.uri().path().as_str()) else {
            return;
        };
        let uri = match req.uri().query() {
            Some(q) => format!("{path}?{}", q.as_str()),
            None => path,
        };
        if let Ok(origin) = Origin::parse_owned(uri) {
            req.set_uri(origin);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::normalized;

    #[test]
    fn empty_segments_are_dropped() {
        assert_eq!(normalized("/api/0/buckets/"), Some("/api/0/buckets".into()));
        assert_eq!(
            normalized("//api//0/buckets"),
            Some("/api/0/buckets".into())
        );
        assert_eq!(normalized("/api/0/buckets"), None);
        assert_eq!(normalized("/"), None);
        assert_eq!(normalized("//"), Some("/".into()));
    }
}
