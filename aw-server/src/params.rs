//! Parsing of query-string parameters shared by several routes.

use aw_models::timestamp;
use chrono::{DateTime, Utc};

use crate::error::ApiError;

/// The one value of a query-string parameter that may be absent. Rocket reads `?a=1&a=2`
/// into an `Option` as absent, which silently dropped a repeated `start`/`end`/`limit` and
/// answered the whole bucket; a repeated parameter is a 400 instead.
pub(crate) fn single<'a>(values: &[&'a str], name: &str) -> Result<Option<&'a str>, ApiError> {
    match values {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => Err(ApiError::bad_request(format!(
            "The query parameter '{name}' is given more than once"
        ))),
    }
}

/// Parses an optional `start`/`end` parameter: strict RFC 3339 with an offset, within the
/// storable range. `what` is `starttime` or `endtime`, as in the reference's message.
pub(crate) fn parse_time(
    value: Option<&str>,
    what: &str,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    let Some(text) = value else { return Ok(None) };
    let dt = timestamp::parse_rfc3339(text).map_err(|e| {
        ApiError::bad_request(format!(
            "Failed to parse {what}, datetime needs to be in rfc3339 format: {e}"
        ))
    })?;
    if timestamp::to_ns(&dt).is_none() {
        return Err(ApiError::bad_request(format!(
            "Failed to parse {what}: {text} is outside the supported range (years 1677 to 2262)"
        )));
    }
    Ok(Some(dt))
}

/// `start` and `end`, both required and `start < end`: a deletion or a summary never
/// means everything.
pub(crate) fn required_range(
    start: &[&str],
    end: &[&str],
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let start = parse_time(single(start, "start")?, "starttime")?;
    let end = parse_time(single(end, "end")?, "endtime")?;
    match (start, end) {
        (Some(start), Some(end)) if start < end => Ok((start, end)),
        (Some(_), Some(_)) => Err(ApiError::bad_request("start must be before end")),
        _ => Err(ApiError::bad_request(
            "Both start and end are required (RFC 3339): a range never means everything",
        )),
    }
}

/// `limit`: a non-negative integer; anything else (`-1`, `abc`) means no limit.
pub(crate) fn parse_limit(value: Option<&str>) -> Option<u64> {
    value.and_then(|v| v.parse::<u64>().ok())
}
