//! Request URLs: the base URL from host and port, percent-encoded path segments and query
//! strings.
//!
//! Bucket ids, setting keys and event ids are user data that end up inside URL paths. The
//! server decodes exactly one path segment per parameter, so every byte outside the RFC 3986
//! "unreserved" set is percent-encoded (`a b/c` becomes `a%20b%2Fc`); URLs are assembled as
//! text and parsed once, so no later normalisation can undo the encoding.

use reqwest::Url;

use crate::error::ClientError;

/// Builds a base URL `http://host:port/` (or `https://…` when `host` starts with a scheme).
/// IPv6 literals get their brackets added when missing.
pub(crate) fn base_url(host: &str, port: u16) -> Result<Url, ClientError> {
    let host = host.trim();
    let (scheme, rest) = match host.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => ("http", rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => ("https", rest),
        Some(_) => {
            return Err(ClientError::invalid(
                "host",
                host,
                "only http:// and https:// are supported",
            ))
        }
        None => ("http", host),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return Err(ClientError::invalid(
            "host",
            host,
            "expected a host name or IP address without path, e.g. 127.0.0.1",
        ));
    }
    let bracketed = if rest.contains(':') && !rest.starts_with('[') {
        format!("[{rest}]")
    } else {
        rest.to_string()
    };
    let text = format!("{scheme}://{bracketed}:{port}/");
    Url::parse(&text).map_err(|e| ClientError::invalid("host", host, e.to_string()))
}

/// Percent-encodes one path segment or query value: everything except `A-Z a-z 0-9 - . _ ~`
/// becomes `%XX` (UTF-8 bytes, upper-case hex).
pub fn encode_component(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
    out
}

/// Builder for one API URL: `base` + `api/0` + segments + optional query string.
#[derive(Debug)]
pub(crate) struct ApiUrl {
    text: String,
    has_query: bool,
}

impl ApiUrl {
    /// Starts at `<base>api/0`.
    pub(crate) fn new(base: &Url) -> Self {
        let mut text = base.as_str().to_string();
        if !text.ends_with('/') {
            text.push('/');
        }
        text.push_str("api/0");
        ApiUrl {
            text,
            has_query: false,
        }
    }

    /// Appends a fixed segment such as `buckets` (taken as is).
    pub(crate) fn lit(mut self, segment: &'static str) -> Self {
        self.text.push('/');
        self.text.push_str(segment);
        self
    }

    /// Appends a user-supplied segment, percent-encoded. Empty, `.` and `..` segments are
    /// rejected: they would address a different route (`buckets/` is the bucket list) or be
    /// removed by URL normalisation.
    pub(crate) fn seg(mut self, what: &'static str, segment: &str) -> Result<Self, ClientError> {
        match segment {
            "" => return Err(ClientError::invalid(what, segment, "must not be empty")),
            "." | ".." => {
                return Err(ClientError::invalid(
                    what,
                    segment,
                    "'.' and '..' cannot be used in a URL path",
                ))
            }
            _ => {}
        }
        self.text.push('/');
        self.text.push_str(&encode_component(segment));
        Ok(self)
    }

    /// Ends the path with `/` (as the canonical list routes `buckets/` and `query/` do).
    pub(crate) fn slash(mut self) -> Self {
        self.text.push('/');
        self
    }

    /// Appends `key=value` to the query string, the value percent-encoded.
    pub(crate) fn query(mut self, key: &'static str, value: &str) -> Self {
        self.text.push(if self.has_query { '&' } else { '?' });
        self.has_query = true;
        self.text.push_str(key);
        self.text.push('=');
        self.text.push_str(&encode_component(value));
        self
    }

    /// The finished URL.
    pub(crate) fn build(self) -> Result<Url, ClientError> {
        Url::parse(&self.text).map_err(|e| ClientError::invalid("URL", &self.text, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        base_url("127.0.0.1", 5666).unwrap()
    }

    #[test]
    fn encodes_reserved_characters() {
        assert_eq!(encode_component("a b/c"), "a%20b%2Fc");
        assert_eq!(encode_component("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode_component("?#%+&=ü"), "%3F%23%25%2B%26%3D%C3%BC");
        assert_eq!(
            encode_component("2024-01-01T00:00:00+00:00"),
            "2024-01-01T00%3A00%3A00%2B00%3A00"
        );
    }

    #[test]
    fn builds_paths_with_encoded_segments() {
        let url = ApiUrl::new(&base())
            .lit("buckets")
            .seg("bucket id", "a b/c")
            .unwrap()
            .lit("events")
            .query("limit", "5")
            .query("start", "x y")
            .build()
            .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:5666/api/0/buckets/a%20b%2Fc/events?limit=5&start=x%20y"
        );
    }

    #[test]
    fn dot_segments_survive_or_are_rejected() {
        let url = ApiUrl::new(&base())
            .lit("buckets")
            .seg("bucket id", "...")
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(url.path(), "/api/0/buckets/...");
        for bad in ["", ".", ".."] {
            assert!(
                ApiUrl::new(&base()).seg("bucket id", bad).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn base_urls() {
        assert_eq!(base().as_str(), "http://127.0.0.1:5666/");
        assert_eq!(
            base_url("localhost", 5600).unwrap().as_str(),
            "http://localhost:5600/"
        );
        assert_eq!(
            base_url("::1", 8080).unwrap().as_str(),
            "http://[::1]:8080/"
        );
        assert_eq!(base_url("[::1]", 1).unwrap().as_str(), "http://[::1]:1/");
        assert_eq!(
            base_url("https://aw.example.org/", 443).unwrap().as_str(),
            "https://aw.example.org/"
        );
        for bad in ["", "a/b", "ftp://x", "user@host", "a b"] {
            assert!(base_url(bad, 1).is_err(), "{bad:?}");
        }
    }
}
