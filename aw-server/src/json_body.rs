//! The JSON request-body guard.
//!
//! Like Rocket's `Json<T>` (400 for malformed JSON, 422 for JSON of the wrong shape, 413 over
//! the `json` limit), but the error keeps the parser's message (for example which event field
//! is out of range) for the JSON error body, and large bodies are parsed on the CPU pool
//! so an import never stalls an async worker.

use rocket::data::{FromData, Limits, Outcome};
use rocket::{Data, Request};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, EarlyError};

/// Bodies larger than this are parsed off the async workers.
const INLINE_PARSE_LIMIT: usize = 256 * 1024;

/// A request body parsed from JSON into `T`.
pub(crate) struct JsonBody<T>(pub T);

/// Reads the whole body as text within the `json` limit; 413 when it is larger.
pub(crate) async fn read_body_text(
    limits: &Limits,
    data: Data<'_>,
    limit_name: &str,
) -> Result<String, ApiError> {
    let limit = limits.get(limit_name).unwrap_or(Limits::JSON);
    match data.open(limit).into_string().await {
        Ok(s) if s.is_complete() => Ok(s.into_inner()),
        Ok(_) => Err(ApiError::too_large(format!(
            "Request body is larger than the limit of {limit}"
        ))),
        Err(e) => Err(ApiError::bad_request(format!(
            "Failed to read the request body: {e}"
        ))),
    }
}

/// Parses JSON text, classifying errors as 400 (syntax) or 422 (shape).
pub(crate) async fn parse_json<T: DeserializeOwned + Send + 'static>(
    text: String,
) -> Result<T, ApiError> {
    let parsed = if text.len() > INLINE_PARSE_LIMIT {
        crate::cpu::run(move || serde_json::from_str::<T>(&text)).await?
    } else {
        serde_json::from_str::<T>(&text)
    };
    parsed.map_err(json_error)
}

/// 422 for JSON of the wrong shape, 400 for JSON that does not parse (as Rocket's `Json`).
pub(crate) fn json_error(e: serde_json::Error) -> ApiError {
    let message = format!("Invalid JSON body: {e}");
    if e.classify() == serde_json::error::Category::Data {
        ApiError::unprocessable(message)
    } else {
        ApiError::bad_request(message)
    }
}

#[rocket::async_trait]
impl<'r, T: DeserializeOwned + Send + 'static> FromData<'r> for JsonBody<T> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> Outcome<'r, Self> {
        let result = match read_body_text(req.limits(), data, "json").await {
            Ok(text) => parse_json(text).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(value) => Outcome::Success(JsonBody(value)),
            Err(e) => {
                req.local_cache(|| EarlyError(Some(e.clone())));
                Outcome::Error((e.status, e))
            }
        }
    }
}
