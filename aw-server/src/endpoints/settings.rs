//! Settings: a key-value store of JSON values under `settings.<key>`.

use rocket::http::Status;
use rocket::State;

use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::responses::{Empty, JsonText};
use crate::state::AppState;

const PREFIX: &str = "settings.";

/// The stored key for a settings key; keys of 128 characters or more are refused.
fn stored_key(key: &str) -> ApiResult<String> {
    if key.chars().count() >= 128 {
        return Err(ApiError::bad_request("Too long key"));
    }
    Ok(format!("{PREFIX}{key}"))
}

/// Every setting as one object (`{}` when none).
#[rocket::get("/api/0/settings")]
pub(crate) async fn list(state: &State<AppState>) -> ApiResult<JsonText> {
    let pairs = state.datastore.get_key_values(PREFIX).await?;
    let mut out = String::from("{");
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let name = key.strip_prefix(PREFIX).unwrap_or(key);
        out.push_str(&serde_json::to_string(name).map_err(|e| ApiError::internal(e.to_string()))?);
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    Ok(JsonText(out))
}

/// One setting's value; `null` when it is not set.
#[rocket::get("/api/0/settings/<key>")]
pub(crate) async fn get(key: &str, state: &State<AppState>) -> ApiResult<JsonText> {
    match state.datastore.get_key_value(&stored_key(key)?).await {
        Ok(value) => Ok(JsonText(value)),
        Err(aw_datastore::DatastoreError::NoSuchKey(_)) => Ok(JsonText("null".into())),
        Err(e) => Err(e.into()),
    }
}

/// Stores any JSON value: 201 with an empty body.
#[rocket::post("/api/0/settings/<key>", format = "json", data = "<value>")]
pub(crate) async fn set(
    key: &str,
    value: JsonBody<serde_json::Value>,
    state: &State<AppState>,
) -> ApiResult<Empty> {
    let key = stored_key(key)?;
    check(&key, &value.0)?;
    state
        .datastore
        .set_key_value(&key, &value.0.to_string())
        .await?;
    Ok(Empty(Status::Created))
}

/// Refuses a value of one of our own settings that would not work, naming the problem
/// (400): the retention rules (`aw_datastore::check_retention_rules`) and whether they run
/// daily. Other keys take any JSON, as the reference's do.
fn check(key: &str, value: &serde_json::Value) -> ApiResult<()> {
    match key {
        aw_datastore::RETENTION_RULES_KEY => {
            aw_datastore::check_retention_rules(&value.to_string()).map_err(ApiError::bad_request)
        }
        crate::retention::DAILY_KEY if !value.is_boolean() => Err(ApiError::bad_request(format!(
            "retention_daily must be true or false, not {value}"
        ))),
        _ => Ok(()),
    }
}

/// Deletes a setting; a missing one is a success.
#[rocket::delete("/api/0/settings/<key>")]
pub(crate) async fn delete(key: &str, state: &State<AppState>) -> ApiResult<Empty> {
    state.datastore.delete_key_value(&stored_key(key)?).await?;
    Ok(Empty(Status::Ok))
}
