//! The one place errors become HTTP responses.
//!
//! Every error the server returns is JSON `{"message": "…"}` with the status below. Datastore
//! errors map as the reference does (404 missing bucket, 304 existing bucket, 500 internal),
//! except where the reference had a plain bug: a missing event is 404 (was 500), an event
//! that cannot be stored is 400 (the reference's worker panicked).
//!
//! A write refused because the database cannot take writes for now (a full disk or quota)
//! is a 500 with a `reason` (`disk_full`, `unavailable`), never a 4xx or 503: the official
//! clients' queues keep and retry a write answered 500 and drop one answered otherwise
//! (CLIENTS.md), and the writes acknowledged before are kept (`aw_datastore`'s
//! `transaction.rs`).

use aw_datastore::DatastoreError;
use rocket::http::{ContentType, Status};
use rocket::response::{self, Responder};
use rocket::Request;

/// An error response: a status and the message clients display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: Status,
    /// The `message` of the JSON body.
    pub message: String,
    /// A machine-readable `reason` in the body, for errors a client should retry.
    pub reason: Option<&'static str>,
}

impl ApiError {
    /// An error with any status.
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            reason: None,
        }
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(Status::BadRequest, message)
    }

    /// 500 Internal Server Error.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(Status::InternalServerError, message)
    }

    /// The JSON body `{"message": …}` (with `"reason"` when there is one).
    pub fn body(&self) -> String {
        match self.reason {
            None => serde_json::json!({ "message": self.message }).to_string(),
            Some(reason) => {
                serde_json::json!({ "message": self.message, "reason": reason }).to_string()
            }
        }
    }
}

impl From<DatastoreError> for ApiError {
    fn from(e: DatastoreError) -> Self {
        let status = match &e {
            DatastoreError::NoSuchBucket(_)
            | DatastoreError::NoSuchKey(_)
            | DatastoreError::NoSuchEvent(..) => Status::NotFound,
            DatastoreError::BucketAlreadyExists(_) => Status::NotModified,
            DatastoreError::InvalidEvent(_) => Status::BadRequest,
            DatastoreError::DiskFull(_) | DatastoreError::Unavailable(_) => {
                Status::InternalServerError
            }
            DatastoreError::Damaged(_) => Status::InternalServerError,
            DatastoreError::Locked(_)
            | DatastoreError::Busy(_)
            | DatastoreError::UnsupportedDbVersion(..)
            | DatastoreError::WorkerGone
            | DatastoreError::Encryption(_)
            | DatastoreError::Sql(_)
            | DatastoreError::Io(_) => Status::InternalServerError,
        };
        let reason = match &e {
            DatastoreError::DiskFull(_) => Some("disk_full"),
            DatastoreError::Unavailable(_) => Some("unavailable"),
            DatastoreError::Damaged(_) => Some("damaged"),
            _ => None,
        };
        ApiError {
            reason,
            ..ApiError::new(status, e.to_string())
        }
    }
}

impl<'r> Responder<'r, 'static> for ApiError {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        crate::responses::in_memory(self.body())
            .status(self.status)
            .header(ContentType::JSON)
            .ok()
    }
}

/// An error decided before the handler ran (body parsing, security filters), kept in the
/// request's local cache so the catcher or the rejection route can answer with its message.
#[derive(Debug, Default, Clone)]
pub struct EarlyError(pub Option<ApiError>);

/// Result type of handlers.
pub(crate) type ApiResult<T> = Result<T, ApiError>;
