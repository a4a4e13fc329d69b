//! Request filters, checked before routing: the Host check (DNS rebinding), CORS and
//! cross-site requests, and the optional API key, in that priority (400 host > 403 CORS or
//! cross-site > 401 key).
//!
//! **Cross-site requests do no work** (COMPATIBILITY.md, server #20). A web page on another site can make the
//! browser send requests that carry no `Origin` (an `<img>`, a `<script>`, a `no-cors`
//! fetch, a page in an `<iframe>`): CORS never sees them, and although the page cannot read
//! the answer, the server would build it (a whole export, on every page load). Browsers
//! mark such requests `Sec-Fetch-Site: cross-site`; an `/api/` request so marked and
//! without `Origin` is refused with 403, unless it is a top-level navigation
//! (`Sec-Fetch-Mode: navigate`, `Sec-Fetch-Dest: document`): a link the user clicks, which
//! opens the answer in a tab of its own, as typing the URL would. A request *with* an
//! `Origin` is CORS's to decide, as before: the browser extension aw-watcher-web, without
//! host access, sends its own `chrome-extension://` origin, which is allowed; with host
//! access it sends `Sec-Fetch-Site: none`. Watchers and scripts send no `Sec-Fetch-*`
//! headers, and the dashboard and aw-webui served here are same-origin: none is affected.
//! `same-site` requests (another port of `localhost`) are not refused: the Host check and
//! CORS stand for them.
//!
//! **CORS patterns match the whole origin** (`^(?:pattern)$`): the reference matches them
//! unanchored, so `https://dash\.example\.com` also admitted
//! `https://dash.example.com.evil.net`. A configured pattern that is not anchored already
//! is warned about at start.
//!
//! A fairing cannot answer a request itself, so a rejected request is rerouted to
//! [`rejected`], which answers with the error kept in the request's local cache; the
//! original handler never runs (a rejected DELETE deletes nothing). Preflight `OPTIONS`
//! requests are answered by [`preflight`]; CORS headers are added to responses in
//! `on_response`.

use regex::Regex;
use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::uri::Origin;
use rocket::http::{Header, Method, Status};
use rocket::{Data, Request, Response};
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::time::Duration;

use aw_platform::log_throttle::LogThrottle;
use subtle::ConstantTimeEq;

use crate::error::{ApiError, ApiResult, EarlyError};
use crate::responses::Empty;

/// The path rejected requests are rerouted to.
const REJECTED_PATH: &str = "/__aw-server/rejected";

/// The filter settings, fixed at startup.
pub(crate) struct Security {
    /// Host check on: the server is bound to exactly `127.0.0.1` or `localhost`.
    pub check_host: bool,
    /// The port the server is bound to (learned at liftoff: with `--port 0` it is not the
    /// configured one); the web UI's own origins `http://127.0.0.1:<port>` and
    /// `http://localhost:<port>` are allowed.
    own_port: AtomicU16,
    /// Exact allowed origins besides the server's own.
    pub origins: Vec<String>,
    /// Allowed origin prefixes: the built-in patterns (`moz-extension://.*`), matched as
    /// the regex would (the rest holds no line break) without compiling one: two regexes
    /// were half of the routes' share of startup (0.45 of 0.9 ms).
    origin_prefixes: Vec<&'static str>,
    /// Allowed origin patterns of the config (`cors_regex`), each matching a whole origin.
    pub origin_patterns: Vec<Regex>,
    /// The `Authorization` value every API request must carry (`Bearer <key>`), when an API
    /// key is configured.
    pub authorization: Option<String>,
}

/// Whether the response gets CORS headers: the request had an allowed `Origin` and was not
/// rejected for CORS. Decided once in `on_request`, read in `on_response`.
struct CorsAllowed(bool);

impl Security {
    /// The allow-lists of the reference: the server's own origins, the official browser
    /// watchers, the config's entries, and in testing mode the web UI's dev server.
    pub(crate) fn new(
        address: &str,
        port: u16,
        testing: bool,
        cors: &[String],
        cors_regex: &[String],
        api_key: Option<String>,
    ) -> Result<Security, String> {
        // The official browser watchers: Chrome's by its id, Firefox's by any.
        let mut origins = vec!["chrome-extension://nglaklhklhcoonedhgnpgddginnjdadi".to_string()];
        let mut origin_prefixes = vec!["moz-extension://"];
        if testing {
            origins.push("http://127.0.0.1:27180".into());
            origins.push("http://localhost:27180".into());
            origin_prefixes.push("chrome-extension://");
        }
        origins.extend(cors.iter().cloned());
        for pattern in cors_regex {
            if !(pattern.starts_with('^') && pattern.ends_with('$')) {
                log::warn!(
                    "cors_regex '{pattern}' is matched against the whole origin, as '^(?:{pattern})$' \
                     (the reference server matched it anywhere in the origin)"
                );
            }
        }
        let origin_patterns = cors_regex
            .iter()
            .map(|p| {
                Regex::new(&format!("^(?:{p})$"))
                    .map_err(|e| format!("invalid cors_regex '{p}': {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Security {
            own_port: AtomicU16::new(port),
            check_host: address == "127.0.0.1" || address == "localhost",
            origins,
            origin_prefixes,
            origin_patterns,
            authorization: api_key
                .filter(|k| !k.is_empty())
                .map(|k| format!("Bearer {k}")),
        })
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let own = self.own_port.load(Ordering::Relaxed);
        let is_own = ["http://127.0.0.1:", "http://localhost:"]
            .iter()
            .any(|prefix| {
                origin.strip_prefix(prefix).is_some_and(|port| {
                    // Exactly the port's decimal digits (no sign, no leading zero).
                    !port.starts_with('0')
                        && port.bytes().all(|b| b.is_ascii_digit())
                        && port.parse::<u16>() == Ok(own)
                })
            });
        is_own
            || self.origins.iter().any(|o| o == origin)
            || self.origin_prefixes.iter().any(|prefix| {
                origin
                    .strip_prefix(prefix)
                    .is_some_and(|rest| !rest.contains('\n'))
            })
            || self.origin_patterns.iter().any(|p| p.is_match(origin))
    }

    /// The first filter that rejects the request, if any, and whether the response gets
    /// CORS headers (an allowed `Origin`, unless the request is refused by CORS itself).
    fn check(&self, req: &Request<'_>) -> (Option<ApiError>, bool) {
        let origin = req.headers().get_one("Origin");
        let cors = origin.is_some_and(|o| self.origin_allowed(o));
        let preflight_method = req
            .headers()
            .get_one("Access-Control-Request-Method")
            .unwrap_or("");
        let cors_error = match origin {
            Some(origin) if !cors => Some(ApiError::forbidden(format!(
                "Origin '{origin}' is not allowed (CORS)"
            ))),
            Some(_)
                if req.method() == Method::Options
                    && !["GET", "POST", "DELETE", "PUT", "PATCH"].contains(&preflight_method) =>
            {
                Some(ApiError::forbidden(format!(
                    "Method '{preflight_method}' is not allowed (CORS)"
                )))
            }
            _ => None,
        };
        if self.check_host {
            let host = req.headers().get_one("Host").unwrap_or("");
            let name = host.split(':').next().unwrap_or("");
            if name != "127.0.0.1" && name != "localhost" {
                return (Some(ApiError::bad_request("Host header is invalid")), cors);
            }
        }
        if cors_error.is_some() {
            // A request refused by CORS gets no CORS headers.
            return (cors_error, false);
        }
        if origin.is_none() {
            if let Some(error) = cross_site_refusal(req) {
                return (Some(error), false);
            }
        }
        if let Some(expected) = &self.authorization {
            if req.method() != Method::Options && needs_api_key(req.uri()) {
                let given = req.headers().get_one("Authorization").unwrap_or("");
                if !bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
                    return (
                        Some(ApiError::unauthorized(
                            "Missing or invalid API key. Set 'Authorization: Bearer <key>' header.",
                        )),
                        cors,
                    );
                }
            }
        }
        (None, cors)
    }
}

/// Cross-site requests refused since the server started (COMPATIBILITY.md, server #20).
pub(crate) static CROSS_SITE_REFUSED: AtomicU64 = AtomicU64::new(0);

/// Logs a refused cross-site request at most every 10 s, with the count in between.
static CROSS_SITE_LOG: LogThrottle = LogThrottle::new(Duration::from_secs(10));

/// The error for a browser request from another site that carries no `Origin` (so CORS
/// cannot judge it) and is not a top-level navigation, to an API path; see the module docs.
fn cross_site_refusal(req: &Request<'_>) -> Option<ApiError> {
    let headers = req.headers();
    if headers.get_one("Sec-Fetch-Site") != Some("cross-site") || !is_api_path(req.uri()) {
        return None;
    }
    let mode = headers.get_one("Sec-Fetch-Mode").unwrap_or("");
    let dest = headers.get_one("Sec-Fetch-Dest").unwrap_or("");
    if mode == "navigate" && dest == "document" {
        return None;
    }
    let total = CROSS_SITE_REFUSED.fetch_add(1, Ordering::Relaxed) + 1;
    log::debug!(
        "Refused cross-site {} {} (Sec-Fetch-Mode: {mode}, Sec-Fetch-Dest: {dest})",
        req.method(),
        req.uri()
    );
    if let Some(held_back) = CROSS_SITE_LOG.allow() {
        log::warn!(
            "Refused a cross-site request from a web page: {} {} (Sec-Fetch-Mode: {mode}, \
             Sec-Fetch-Dest: {dest}); {total} refused since start, {held_back} since the last line",
            req.method(),
            req.uri().path()
        );
    }
    Some(ApiError::forbidden(format!(
        "Cross-site request refused: a page on another site asked for this without CORS \
         (Sec-Fetch-Site: cross-site, Sec-Fetch-Mode: {mode})"
    )))
}

/// Whether a request to `uri` must carry the API key: its path, read the way routing reads
/// it, lies under `/api/`, and it is not the exempt `/api/0/info`.
///
/// Routing matches the percent-decoded, non-empty segments of the path, so the decision is
/// made on those too, never on the raw text (where `/%61pi/0/export` does not start with
/// `/api/` but routes to the export). On top of what routing does, dot segments are
/// resolved (`/x/../api/…`) and the first segment is compared case-insensitively and up to
/// an encoded `/` or `\` (`/api%2F0…`): such paths reach no API route today, and gating them
/// keeps it so if routing ever resolves them. Gating more than routing serves is harmless
/// (those paths answer 401 instead of 404); gating less would not be.
///
/// Only the literal path `/api/0/info` (leading slashes collapsed, as in the reference) is
/// exempt: `/api/0/info/` or an encoded spelling needs the key, as in the reference.
fn needs_api_key(uri: &Origin<'_>) -> bool {
    uri.path().as_str().trim_start_matches('/') != "api/0/info" && is_api_path(uri)
}

/// Whether `uri`'s path, read the way routing reads it (and more strictly, see
/// [`needs_api_key`]), lies under `/api/`.
fn is_api_path(uri: &Origin<'_>) -> bool {
    let path = uri.path();
    let mut resolved: Vec<&str> = Vec::new();
    for segment in path.segments() {
        match segment {
            "." => {}
            ".." => {
                resolved.pop();
            }
            s => resolved.push(s),
        }
    }
    let first_of = |segment: &str| -> bool {
        let head = segment.split(['/', '\\']).next().unwrap_or("");
        head.eq_ignore_ascii_case("api")
    };
    // Both readings: with dot segments resolved (a file server's view) and as sent (the
    // router's view, which does not resolve them).
    resolved.first().is_some_and(|s| first_of(s)) || path.segments().next().is_some_and(first_of)
}

#[rocket::async_trait]
impl Fairing for Security {
    fn info(&self) -> Info {
        Info {
            name: "Host check, CORS and API key",
            kind: Kind::Liftoff | Kind::Request | Kind::Response,
        }
    }

    async fn on_liftoff(&self, rocket: &rocket::Rocket<rocket::Orbit>) {
        self.own_port.store(rocket.config().port, Ordering::Relaxed);
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        let (error, cors) = self.check(req);
        req.local_cache(|| CorsAllowed(cors));
        if let Some(error) = error {
            reject(req, error);
        }
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        let Some(origin) = req.headers().get_one("Origin") else {
            return;
        };
        if !req.local_cache(|| CorsAllowed(false)).0 {
            return;
        }
        res.set_header(Header::new(
            "Access-Control-Allow-Origin",
            origin.to_string(),
        ));
        if req.method() == Method::Options {
            res.set_header(Header::new(
                "Access-Control-Allow-Methods",
                // The reference's three, and ours that edit stored history.
                "POST, DELETE, GET, PUT, PATCH",
            ));
            if let Some(headers) = req.headers().get_one("Access-Control-Request-Headers") {
                res.set_header(Header::new(
                    "Access-Control-Allow-Headers",
                    headers.to_ascii_lowercase(),
                ));
            }
        }
    }
}

/// Makes `req` answer with `error` instead of running its handler (a fairing cannot answer
/// itself): the error goes to the local cache and the request to [`rejected`]. The first
/// rejection of a request wins.
pub(crate) fn reject(req: &mut Request<'_>, error: ApiError) {
    req.local_cache(|| EarlyError(Some(error)));
    req.set_method(Method::Get);
    req.set_uri(Origin::path_only(REJECTED_PATH));
}

/// Answers a request a filter rejected, with the filter's error.
#[rocket::get("/__aw-server/rejected")]
pub(crate) fn rejected(early: &EarlyError) -> ApiResult<Empty> {
    Err(early
        .0
        .clone()
        .unwrap_or_else(|| ApiError::not_found("Not found")))
}

/// Answers every `OPTIONS` request (CORS preflight) with an empty 200; the fairing adds the
/// CORS headers.
#[rocket::options("/<_..>")]
pub(crate) fn preflight() -> Empty {
    Empty(Status::Ok)
}

#[rocket::async_trait]
impl<'r> rocket::request::FromRequest<'r> for &'r EarlyError {
    type Error = ();

    async fn from_request(req: &'r Request<'_>) -> rocket::request::Outcome<Self, ()> {
        rocket::request::Outcome::Success(req.local_cache(EarlyError::default))
    }
}
