//! The one place errors become HTTP responses.
//!
//! Every error the server returns is JSON `{"message": "…"}` with the status below. Datastore
//! errors map as the reference does (404 missing bucket, 304 existing bucket, 500 internal),
//! except where the reference had a plain bug: a missing event is 404 (was 500), an event
//! that cannot be stored is a 4xx (the reference's worker panicked): 400 here, 422 when the
//! body parser already finds its time or duration out of range (COMPATIBILITY.md).
//!
//! A write refused because the database cannot take writes for now (a full disk or quota)
//! is a 500 with a `reason` (`disk_full`, `unavailable`), never a 4xx or 503: the official
//! clients' queues keep and retry a write answered 500 and drop one answered otherwise
//! (aw-client's request queue and aw-watcher-afk's), and the writes acknowledged before are kept (`aw_datastore`'s
//! `group_commit.rs`).

use aw_datastore::DatastoreError;
use aw_query::{QueryError, StorageTrouble};
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
    /// An error with the status Rocket chose (a catcher's); everything else is made by one
    /// of the named constructors below, so each kind of refusal has its status here.
    pub(crate) fn with_status(status: Status, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            reason: None,
        }
    }

    /// 400: a parameter, header or body the server cannot read.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::BadRequest, message)
    }

    /// 401: the API key is missing or wrong.
    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::Unauthorized, message)
    }

    /// 403: an origin or a cross-site request the server does not serve.
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::Forbidden, message)
    }

    /// 404: nothing is there (an unknown route, or one refused as if it were unknown).
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::NotFound, message)
    }

    /// 409: the change would clash with the state of things (a bucket id that is taken, a
    /// bucket a watcher is still writing to).
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::Conflict, message)
    }

    /// 413: a body larger than the server accepts.
    pub(crate) fn too_large(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::PayloadTooLarge, message)
    }

    /// 422: well-formed JSON of the wrong shape or with values out of range.
    pub(crate) fn unprocessable(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::UnprocessableEntity, message)
    }

    /// 503: the server is stopping, or cannot do this now; ask again later.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::ServiceUnavailable, message)
    }

    /// 500: the server failed.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::with_status(Status::InternalServerError, message)
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
            // Creating a bucket that exists answers 304, as the reference does: watchers
            // and aw-client create their buckets at every start and read 304 as "already
            // there, go on". A rename onto an existing id is a real conflict and answers
            // 409 instead (`endpoints/history.rs`, `rename_bucket`).
            DatastoreError::BucketAlreadyExists(_) => Status::NotModified,
            DatastoreError::InvalidEvent(_) => Status::BadRequest,
            DatastoreError::Changed(_) => Status::Conflict,
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
        ApiError {
            reason: storage_trouble(&e).map(reason),
            ..ApiError::with_status(status, e.to_string())
        }
    }
}

impl ApiError {
    /// The backup an operation rewriting history takes first could not be taken: 500 with
    /// `"reason": "backup_failed"`; nothing was changed.
    pub(crate) fn backup_failed(e: crate::backups::BackupError) -> Self {
        ApiError {
            reason: Some("backup_failed"),
            ..ApiError::internal(format!(
                "Nothing was changed: the backup taken before it failed: {e}"
            ))
        }
    }
}

impl From<crate::backups::BackupError> for ApiError {
    /// A backup asked for (`POST /api/0/backups`): 507 when the disk is too full for it,
    /// 503 when the database cannot be copied now, else 500.
    fn from(e: crate::backups::BackupError) -> Self {
        use crate::backups::BackupError;
        match e {
            BackupError::NoSpace(_) => {
                ApiError::with_status(Status::InsufficientStorage, e.to_string())
            }
            BackupError::Unavailable(_) => ApiError::unavailable(e.to_string()),
            other => ApiError::internal(format!("Backup failed: {other}")),
        }
    }
}

/// The storage failures a client is told of, by kind: the one place a datastore error
/// gets one (the query engine carries it as [`StorageTrouble`] up to its error).
pub(crate) fn storage_trouble(e: &DatastoreError) -> Option<StorageTrouble> {
    match e {
        DatastoreError::DiskFull(_) => Some(StorageTrouble::DiskFull),
        DatastoreError::Unavailable(_) => Some(StorageTrouble::Unavailable),
        DatastoreError::Damaged(_) => Some(StorageTrouble::Damaged),
        _ => None,
    }
}

/// The answer's `reason` for a kind of storage failure (the values openapi.json lists).
fn reason(trouble: StorageTrouble) -> &'static str {
    match trouble {
        StorageTrouble::DiskFull => "disk_full",
        StorageTrouble::Unavailable => "unavailable",
        StorageTrouble::Damaged => "damaged",
    }
}

impl From<QueryError> for ApiError {
    /// Every query error is a 500 whose message is the error's rendering, as in the
    /// reference; one caused by storage also has its `reason`.
    fn from(e: QueryError) -> Self {
        ApiError {
            reason: e.storage_trouble().map(reason),
            ..ApiError::internal(e.to_string())
        }
    }
}

impl ApiError {
    /// A failed import: 400 when an event cannot be stored (the client's fault), else 500
    /// (a bucket that exists already too, as in the reference), with the message
    /// `Failed to import bucket: …` and the storage failure's `reason`, if any.
    pub(crate) fn import_failed(e: DatastoreError) -> Self {
        let error = ApiError::from(e);
        let status = match error.status {
            Status::BadRequest => Status::BadRequest,
            _ => Status::InternalServerError,
        };
        ApiError {
            status,
            message: format!("Failed to import bucket: {}", error.message),
            reason: error.reason,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `reason` an answer can carry is one the API contract lists (clients switch on
    /// it; Schemathesis checks answers against the contract).
    #[test]
    fn every_reason_is_in_the_contract() {
        let contract: serde_json::Value =
            serde_json::from_str(crate::endpoints::openapi::DOCUMENT).unwrap();
        let listed = contract["components"]["schemas"]["Error"]["properties"]["reason"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no reason enum in openapi.json"))
            .clone();
        for trouble in [
            StorageTrouble::Damaged,
            StorageTrouble::DiskFull,
            StorageTrouble::Unavailable,
        ] {
            assert!(
                listed.contains(&serde_json::json!(reason(trouble))),
                "{trouble:?}"
            );
        }
    }
}
