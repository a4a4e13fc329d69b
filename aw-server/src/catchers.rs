//! Framework errors (no route, bad body, too large) as JSON `{"message": …}` like every
//! other error; the message is the body parser's when it set one.

use rocket::http::Status;
use rocket::Request;

use crate::error::{ApiError, EarlyError};

/// The catch-all catcher.
#[rocket::catch(default)]
pub(crate) fn default(status: Status, req: &Request<'_>) -> ApiError {
    if let Some(early) = &req.local_cache(EarlyError::default).0 {
        if early.status == status {
            return early.clone();
        }
    }
    let message = match status.code {
        404 => "The requested resource could not be found.",
        400 => "The request could not be understood by the server due to malformed syntax.",
        422 => "The request was well-formed but was unable to be followed due to semantic errors.",
        413 => "The request body is larger than the server accepts.",
        403 => "The server refused to authorize the request.",
        _ => status.reason().unwrap_or("Error"),
    };
    ApiError::with_status(status, message)
}
