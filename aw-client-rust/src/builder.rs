//! Client configuration: where the server is, how to authenticate, how long to wait.
//!
//! `AwClient::new` covers the common case; the builder exists for the knobs that watchers
//! occasionally need (API key, timeouts, a different reported hostname) without growing the
//! constructor list.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION};

use crate::error::ClientError;
use crate::url::base_url;

/// The default per-request timeout, as in the reference client.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Idle pooled connections are dropped after this long, below the server's 5 s keep-alive,
/// so a request is never written into a connection the server is just closing (a watcher
/// polling every 5 s would otherwise hit that race regularly).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(3);

/// Anything that can name an API key: `&str`, `String`, or an `Option` of either (`None` or
/// an empty string means "no key"). Lets `new_with_api_key` accept whichever form a watcher
/// already has at hand.
pub trait IntoApiKey {
    /// The key, or `None` for no key.
    fn into_api_key(self) -> Option<String>;
}

impl IntoApiKey for &str {
    fn into_api_key(self) -> Option<String> {
        Some(self.to_string()).filter(|k| !k.is_empty())
    }
}

impl IntoApiKey for String {
    fn into_api_key(self) -> Option<String> {
        Some(self).filter(|k| !k.is_empty())
    }
}

impl IntoApiKey for &String {
    fn into_api_key(self) -> Option<String> {
        self.as_str().into_api_key()
    }
}

impl IntoApiKey for Option<String> {
    fn into_api_key(self) -> Option<String> {
        self.and_then(IntoApiKey::into_api_key)
    }
}

impl IntoApiKey for Option<&str> {
    fn into_api_key(self) -> Option<String> {
        self.and_then(IntoApiKey::into_api_key)
    }
}

/// Configures and builds an [`AwClient`](crate::AwClient) or a
/// [`blocking::AwClient`](crate::blocking::AwClient).
#[derive(Clone)]
pub struct AwClientBuilder {
    host: String,
    port: u16,
    name: String,
    api_key: Option<String>,
    timeout: Duration,
    connect_timeout: Option<Duration>,
    hostname: Option<String>,
}

impl std::fmt::Debug for AwClientBuilder {
    // Hand-written so the API key never ends up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwClientBuilder")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("name", &self.name)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("hostname", &self.hostname)
            .finish()
    }
}

impl AwClientBuilder {
    /// A builder for a client of the server at `host:port` that calls itself `name` (the
    /// `client` field of buckets it creates).
    pub fn new(host: &str, port: u16, name: &str) -> Self {
        AwClientBuilder {
            host: host.to_string(),
            port,
            name: name.to_string(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: None,
            hostname: None,
        }
    }

    /// Sends `Authorization: Bearer <key>` on every request (servers with `[auth] api_key`).
    pub fn api_key(mut self, key: impl IntoApiKey) -> Self {
        self.api_key = key.into_api_key();
        self
    }

    /// Total time allowed per request (default 120 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time allowed to establish the connection (default: only the request timeout applies).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// The hostname written into buckets made by `create_bucket_simple` (default: this
    /// machine's hostname).
    pub fn hostname(mut self, hostname: &str) -> Self {
        self.hostname = Some(hostname.to_string());
        self
    }

    /// What a client is made of: the HTTP client, the server's base URL, the client's name
    /// and the hostname for its buckets. The clients' modules turn it into a client
    /// (`build` in `async_client.rs`, `build_blocking` in `blocking.rs`), so this module
    /// needs neither.
    pub(crate) fn into_parts(self) -> Result<ClientParts, ClientError> {
        Ok(ClientParts {
            baseurl: base_url(&self.host, self.port)?,
            http: self.http_client()?,
            hostname: self.hostname.clone().unwrap_or_else(aw_platform::hostname),
            name: self.name,
        })
    }

    fn http_client(&self) -> Result<reqwest::Client, ClientError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ClientError::invalid(
                    "API key",
                    "<redacted>",
                    "must contain only visible ASCII characters",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("aw-client-rust/", env!("CARGO_PKG_VERSION")))
            .timeout(self.timeout)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT);
        if let Some(timeout) = self.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        builder
            .build()
            .map_err(|e| ClientError::invalid("client configuration", "", e.to_string()))
    }
}

/// A built client's parts ([`AwClientBuilder::into_parts`]).
pub(crate) struct ClientParts {
    pub(crate) http: reqwest::Client,
    pub(crate) baseurl: reqwest::Url,
    pub(crate) name: String,
    pub(crate) hostname: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_forms() {
        assert_eq!("k".into_api_key().as_deref(), Some("k"));
        assert_eq!(String::from("k").into_api_key().as_deref(), Some("k"));
        assert_eq!(Some("k").into_api_key().as_deref(), Some("k"));
        assert_eq!(Some(String::new()).into_api_key(), None);
        assert_eq!(None::<String>.into_api_key(), None);
        assert_eq!("".into_api_key(), None);
    }

    #[test]
    fn debug_hides_api_key() {
        let b = AwClientBuilder::new("127.0.0.1", 1, "n").api_key("secret-key");
        assert!(!format!("{b:?}").contains("secret-key"));
        let c = b.build().unwrap();
        assert!(!format!("{c:?}").contains("secret-key"));
    }

    #[test]
    fn bad_api_key_is_an_error_not_a_panic() {
        let r = AwClientBuilder::new("127.0.0.1", 1, "n")
            .api_key("line\nbreak")
            .build();
        assert!(matches!(r, Err(ClientError::InvalidArgument { .. })));
    }
}
