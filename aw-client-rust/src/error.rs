//! The client's error type.
//!
//! Callers need to tell apart "the server is not running" (retry later), "the server said no"
//! (HTTP status plus the server's own explanation) and "I passed something unusable", so each
//! is its own variant and keeps the details that explain it.

use std::time::Duration;

/// Everything that can go wrong when talking to an ActivityWatch server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No connection could be made (server not running, wrong port, DNS failure, connect
    /// timeout). `url` is the request URL so the message says where the client looked.
    #[error("cannot connect to the ActivityWatch server at {url}: {reason}")]
    Connect {
        /// The URL of the failed request.
        url: String,
        /// The underlying cause, e.g. `Connection refused (os error 111)`.
        reason: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// The server accepted the connection but did not answer within the request timeout.
    #[error("request to {url} timed out: {reason}")]
    Timeout {
        /// The URL of the request that timed out.
        url: String,
        /// The underlying cause.
        reason: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// The server answered with an error status (anything but 2xx and 304).
    #[error("{method} {url} failed with HTTP {status}: {message}")]
    Http {
        /// The request method, e.g. `GET`.
        method: String,
        /// The request URL.
        url: String,
        /// The HTTP status code, e.g. 404.
        status: u16,
        /// The server's `message` (or the best text found in the error body).
        message: String,
    },

    /// The connection broke or the request failed in some other way at the transport level.
    #[error("request to {url} failed: {reason}")]
    Request {
        /// The request URL.
        url: String,
        /// The underlying cause.
        reason: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// The server answered successfully but the body is not what this endpoint returns.
    #[error("unexpected response body from {url}: {reason}")]
    Decode {
        /// The request URL.
        url: String,
        /// What did not parse, with the beginning of the body.
        reason: String,
    },

    /// An argument cannot be sent (e.g. an empty bucket id, a non-finite pulsetime, an invalid
    /// host or API key). Nothing was sent to the server.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidArgument {
        /// Which argument, e.g. `bucket id`.
        what: &'static str,
        /// The rejected value.
        value: String,
        /// Why it was rejected.
        reason: String,
    },

    /// [`wait_for_start`](crate::AwClient::wait_for_start) gave up.
    #[error(
        "the ActivityWatch server at {url} did not answer within {:.1} s (last error: {last_error})",
        .waited.as_secs_f64()
    )]
    NotStarted {
        /// The URL that was polled.
        url: String,
        /// How long the client waited.
        waited: Duration,
        /// The last failure seen while polling.
        #[source]
        last_error: Box<ClientError>,
    },

    /// The blocking client could not start its background runtime or thread.
    #[error("cannot start the blocking client's background runtime: {0}")]
    Runtime(#[source] std::io::Error),

    /// The blocking client's background thread is gone (it can only stop by panicking,
    /// which it is written never to do).
    #[error("the blocking client's background thread stopped unexpectedly")]
    WorkerGone,
}

impl ClientError {
    /// The HTTP status the server answered with, if the error is an HTTP error status.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's explanation (its JSON `message`), if the error is an HTTP error status.
    pub fn message(&self) -> Option<&str> {
        match self {
            ClientError::Http { message, .. } => Some(message),
            _ => None,
        }
    }

    /// The URL of the failed request, when the error concerns one.
    pub fn url(&self) -> Option<&str> {
        match self {
            ClientError::Connect { url, .. }
            | ClientError::Timeout { url, .. }
            | ClientError::Http { url, .. }
            | ClientError::Request { url, .. }
            | ClientError::Decode { url, .. }
            | ClientError::NotStarted { url, .. } => Some(url),
            _ => None,
        }
    }

    /// Whether the server answered 404 (e.g. unknown bucket).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Whether the server could not be reached at all (worth retrying later).
    pub fn is_connect(&self) -> bool {
        matches!(self, ClientError::Connect { .. })
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }

    /// Classifies a transport error from reqwest.
    pub(crate) fn from_transport(url: &str, source: reqwest::Error) -> Self {
        let url = url.to_string();
        let reason = root_cause(&source);
        if source.is_connect() {
            ClientError::Connect {
                url,
                reason,
                source,
            }
        } else if source.is_timeout() {
            ClientError::Timeout {
                url,
                reason,
                source,
            }
        } else {
            ClientError::Request {
                url,
                reason,
                source,
            }
        }
    }

    /// An error status with the server's message extracted from the body.
    pub(crate) fn from_status(method: &str, url: &str, status: u16, body: &[u8]) -> Self {
        ClientError::Http {
            method: method.to_string(),
            url: url.to_string(),
            status,
            message: server_message(status, body),
        }
    }

    /// A success body that does not parse.
    pub(crate) fn decode(url: &str, error: impl std::fmt::Display, body: &[u8]) -> Self {
        ClientError::Decode {
            url: url.to_string(),
            reason: format!("{error}; body starts with {:?}", snippet(body)),
        }
    }

    /// An argument that cannot be sent.
    pub(crate) fn invalid(what: &'static str, value: &str, reason: impl Into<String>) -> Self {
        ClientError::InvalidArgument {
            what,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// The innermost cause of an error chain: reqwest's own text is a generic "error sending
/// request", the useful part ("Connection refused", "timed out") is at the bottom.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// At most 200 characters of a body, for messages.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The best human-readable explanation in an error body: the handler shape
/// `{"message": …}`, else the framework shape `{"error": {"reason", "description"}}`, else
/// the plain-text body, else the status's reason phrase. HTML error pages are replaced by the
/// reason phrase since their markup helps nobody.
pub(crate) fn server_message(status: u16, body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(message) = value.get("message").and_then(|m| m.as_str()) {
            return message.to_string();
        }
        if let Some(error) = value.get("error") {
            let field = |name: &str| error.get(name).and_then(|v| v.as_str());
            match (field("reason"), field("description")) {
                (Some(reason), Some(description)) => return format!("{reason}: {description}"),
                (Some(text), None) | (None, Some(text)) => return text.to_string(),
                (None, None) => {}
            }
        }
    }
    let text = snippet(body);
    if !text.is_empty() && !text.starts_with('<') {
        return text;
    }
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(str::to_string)
        .unwrap_or_else(|| format!("HTTP status {status}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_from_handler_error_body() {
        let body = br#"{"message":"The requested bucket 'x' does not exist"}"#;
        assert_eq!(
            server_message(404, body),
            "The requested bucket 'x' does not exist"
        );
    }

    #[test]
    fn message_from_framework_error_body() {
        let body = br#"{"error":{"code":422,"reason":"Unprocessable Entity","description":"semantic errors."}}"#;
        assert_eq!(
            server_message(422, body),
            "Unprocessable Entity: semantic errors."
        );
    }

    #[test]
    fn message_falls_back_to_text_then_reason_phrase() {
        assert_eq!(server_message(500, b"  boom \n"), "boom");
        assert_eq!(server_message(404, b"<html>nope</html>"), "Not Found");
        assert_eq!(server_message(404, b""), "Not Found");
        assert_eq!(server_message(599, b""), "HTTP status 599");
    }

    #[test]
    fn snippet_is_bounded() {
        let long = "é".repeat(500);
        let s = snippet(long.as_bytes());
        assert_eq!(s.chars().count(), 201);
    }

    #[test]
    fn accessors() {
        let e = ClientError::from_status("GET", "http://h/x", 404, br#"{"message":"m"}"#);
        assert_eq!(e.status(), Some(404));
        assert_eq!(e.message(), Some("m"));
        assert_eq!(e.url(), Some("http://h/x"));
        assert!(e.is_not_found());
        assert_eq!(e.to_string(), "GET http://h/x failed with HTTP 404: m");
    }
}
