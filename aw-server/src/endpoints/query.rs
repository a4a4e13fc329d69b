//! `POST /api/0/query`: runs a query program over one or more time periods.

use aw_models::Query;
use rocket::http::Status;

use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::responses::JsonText;

/// Parses the request (422 for a malformed time period); evaluation arrives with aw-query.
#[rocket::post("/api/0/query", format = "json", data = "<body>")]
pub async fn query(body: JsonBody<Query>) -> ApiResult<JsonText> {
    let _ = body.0;
    Err(ApiError::new(
        Status::NotImplemented,
        "The query engine is not built into this server yet",
    ))
}
