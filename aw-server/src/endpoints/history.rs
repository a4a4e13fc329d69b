//! Taking control of stored history: deleting a time range of a bucket or of every bucket
//! of a host, and deleting events by id.
//!
//! These operations change many events at once, so each is made undoable: when it would
//! change more than one event (a dry run changes none) a verified backup is taken first,
//! listed as `before-rewrite` (`GET /api/0/backups`; the newest ten are kept), and the
//! operation is refused with 500 `"reason": "backup_failed"` when the backup cannot be
//! taken. The answer names the backup and the `aw-server restore` command that puts it
//! back, which also drops whatever was written after it. Each operation is all or nothing,
//! runs alone (two wait for each other, `AppState::rewrites`), and is committed before it
//! answers.
//!
//! The other devices running ours follow at their next sync pass (aw-sync's `day_table.rs`);
//! those running the reference's aw-sync keep their copies. Events deleted from a pulled
//! bucket (`…-synced-from-…`) stay deleted (aw-sync's `applied.rs`).

use aw_datastore::RangeDeletion;
use rocket::serde::json::Json;
use rocket::State;
use serde::{Deserialize, Serialize};

use crate::backups::BackupEntry;
use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::params::{required_range, single};
use crate::state::AppState;

/// The most ids one request may delete.
pub(crate) const MAX_IDS: usize = 10_000;

/// What an operation that may be undone answers besides its own counts.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Undo {
    /// The backup taken first (its file name in the backup folder); `None` for a dry run
    /// or an operation that changed at most one event.
    backup: Option<String>,
    /// The command that puts the backup back, with the server stopped.
    restore: Option<String>,
    /// What restoring also undoes.
    restore_note: Option<&'static str>,
}

/// The answer to a range deletion.
#[derive(Debug, Serialize)]
pub(crate) struct RangeAnswer {
    #[serde(flatten)]
    done: RangeDeletion,
    /// Whether nothing was changed (a dry run).
    dry_run: bool,
    #[serde(flatten)]
    undo: Undo,
}

/// The answer to a deletion by ids.
#[derive(Debug, Serialize)]
pub(crate) struct IdsAnswer {
    /// Events deleted.
    deleted: usize,
    /// The given ids that are not events of the bucket.
    missing: Vec<i64>,
    #[serde(flatten)]
    undo: Undo,
}

/// The body of `POST /api/0/buckets/<id>/events/delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ids {
    ids: Vec<i64>,
}

/// A yes/no query parameter such as `dry_run` or `force`: `true` (or `1`) or `false`
/// (absent: `false`).
fn flag(values: &[&str], name: &str) -> ApiResult<bool> {
    match single(values, name)? {
        None | Some("false") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not '{other}'"
        ))),
    }
}

/// Takes the backup an operation changing `changes` events needs (more than one).
pub(crate) async fn backup_first(state: &AppState, changes: u64) -> ApiResult<Undo> {
    if changes <= 1 {
        return Ok(Undo::default());
    }
    Undo::take(&state.backups, &state.db_path).await
}

impl Undo {
    /// Takes a `before-rewrite` backup of `db` on the backup thread (without holding up the
    /// async thread), and names it with its restore command.
    pub(crate) async fn take(
        backups: &std::sync::Arc<crate::backups::Backups>,
        db: &std::path::Path,
    ) -> ApiResult<Undo> {
        let taking = backups.clone();
        let taken: Result<BackupEntry, _> =
            rocket::tokio::task::spawn_blocking(move || taking.take_before_rewrite())
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
        let entry = taken.map_err(ApiError::backup_failed)?;
        Ok(Undo::by(backups, db, entry.file))
    }

    /// The undo of an operation whose state before is backup `file` of `backups`.
    pub(crate) fn by(
        backups: &crate::backups::Backups,
        db: &std::path::Path,
        file: String,
    ) -> Undo {
        let path = backups.folder().join(&file);
        Undo {
            restore: Some(format!(
                "aw-server --dbpath {} restore {}",
                shell_word(&db.to_string_lossy()),
                shell_word(&path.to_string_lossy())
            )),
            backup: Some(file),
            restore_note: Some(
                "Stop the server first. Restoring puts back the whole database as it was before \
                 this operation: whatever was written after it is dropped too.",
            ),
        }
    }

    /// The backup it names, if any.
    pub(crate) fn backup(&self) -> Option<&str> {
        self.backup.as_deref()
    }
}

/// `text` as one word for a POSIX shell.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Deletes `[start, end)` of `buckets` (or counts it): the dry run first, for the backup's
/// sake, then the run. With `expect` (the events a preview said would be deleted or cut),
/// a range that now holds another number is refused with 409, nothing changed: a write
/// between the user's preview and the run never widens what goes.
async fn delete_range(
    state: &AppState,
    buckets: Vec<String>,
    asked: RangeAsked,
) -> ApiResult<RangeAnswer> {
    let RangeAsked {
        range: (start, end),
        dry_run,
        expect,
    } = asked;
    let _alone = state.rewrites.lock().await;
    let preview = state
        .datastore
        .delete_range(&buckets, start, end, true, expect)
        .await?;
    if dry_run {
        return Ok(RangeAnswer {
            done: preview,
            dry_run,
            undo: Undo::default(),
        });
    }
    let undo = backup_first(state, preview.deleted + preview.cut).await?;
    let done = state
        .datastore
        .delete_range(&buckets, start, end, false, expect)
        .await?;
    state.datastore.force_commit().await?;
    Ok(RangeAnswer {
        done,
        dry_run,
        undo,
    })
}

/// What a range deletion asks for, read from its query string: the range, whether it is a
/// dry run, and what a preview counted (`expect`: events deleted or cut).
struct RangeAsked {
    range: (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    dry_run: bool,
    expect: Option<u64>,
}

impl RangeAsked {
    fn parse(start: &[&str], end: &[&str], dry_run: &[&str], expect: &[&str]) -> ApiResult<Self> {
        // The range's errors first, then the flags'.
        let range = required_range(start, end)?;
        let dry_run = flag(dry_run, "dry_run")?;
        let expect = single(expect, "expect")?
            .map(|text| {
                text.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "expect must be the number of events a preview counted, not '{text}'"
                    ))
                })
            })
            .transpose()?;
        Ok(RangeAsked {
            range,
            dry_run,
            expect,
        })
    }
}

/// Deletes what lies in `[start, end)` of the bucket: events inside are deleted, events
/// across an edge are cut at it (`dry_run=true`: counts only; `expect=N`: only if that is
/// still N events).
#[rocket::delete("/api/0/buckets/<bucket_id>/events?<start>&<end>&<dry_run>&<expect>")]
pub(crate) async fn bucket_range(
    bucket_id: &str,
    start: Vec<&str>,
    end: Vec<&str>,
    dry_run: Vec<&str>,
    expect: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<RangeAnswer>> {
    let asked = RangeAsked::parse(&start, &end, &dry_run, &expect)?;
    let answer = delete_range(state, vec![bucket_id.to_string()], asked).await?;
    Ok(Json(answer))
}

/// Deletes `[start, end)` of every bucket of `hostname` (`*`: of every bucket), all or
/// nothing (`expect` as for one bucket).
#[rocket::delete("/api/0/events?<start>&<end>&<hostname>&<dry_run>&<expect>")]
pub(crate) async fn host_range(
    start: Vec<&str>,
    end: Vec<&str>,
    hostname: Vec<&str>,
    dry_run: Vec<&str>,
    expect: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<RangeAnswer>> {
    let asked = RangeAsked::parse(&start, &end, &dry_run, &expect)?;
    let host = single(&hostname, "hostname")?.ok_or_else(|| {
        ApiError::bad_request("hostname is required (`*` for the buckets of every host)")
    })?;
    let mut buckets: Vec<String> = state
        .datastore
        .get_buckets()
        .await?
        .into_values()
        .filter(|b| host == "*" || b.hostname == host)
        .map(|b| b.id)
        .collect();
    buckets.sort();
    let answer = delete_range(state, buckets, asked).await?;
    Ok(Json(answer))
}

/// Deletes events of the bucket by id (at most [`MAX_IDS`]); answers how many went and
/// which ids are not the bucket's events.
#[rocket::post(
    "/api/0/buckets/<bucket_id>/events/delete",
    format = "json",
    data = "<body>"
)]
pub(crate) async fn by_ids(
    bucket_id: &str,
    body: JsonBody<Ids>,
    state: &State<AppState>,
) -> ApiResult<Json<IdsAnswer>> {
    let mut ids = body.0.ids;
    if ids.len() > MAX_IDS {
        return Err(ApiError::bad_request(format!(
            "At most {MAX_IDS} ids a request ({} given)",
            ids.len()
        )));
    }
    ids.sort_unstable();
    ids.dedup();
    let _alone = state.rewrites.lock().await;
    // The bucket first: an unknown one is a 404 before any backup.
    state.datastore.get_bucket(bucket_id).await?;
    // Ids that are not events are only found by the deletion: the backup is taken when
    // more than one id is given.
    let undo = backup_first(state, ids.len() as u64).await?;
    let count = ids.len();
    let missing = state.datastore.delete_events_by_id(bucket_id, ids).await?;
    state.datastore.force_commit().await?;
    Ok(Json(IdsAnswer {
        deleted: count - missing.len(),
        missing,
        undo,
    }))
}

/// How recently a watcher may have written to a bucket that is renamed or merged away
/// without `force=true`: the official watchers keep writing to the id they know and do not
/// create their bucket again while they run, so their writes would fail until restarted.
const IN_USE: chrono::Duration = chrono::Duration::minutes(10);

/// Refuses a bucket that sync owns (`…-synced-from-…`): the next pull would bring it back.
pub(crate) fn not_pulled(bucket: &aw_models::Bucket, what: &str) -> ApiResult<()> {
    if aw_sync::is_import(bucket) {
        return Err(ApiError::bad_request(format!(
            "Bucket '{}' holds data pulled from another device: it cannot be {what} (the next \
             sync pass would bring it back)",
            bucket.id
        )));
    }
    Ok(())
}

/// Refuses a bucket written to in the last [`IN_USE`], unless `force`.
fn not_in_use(bucket: &aw_models::Bucket, force: bool, what: &str) -> ApiResult<()> {
    let last = bucket.metadata.end;
    match last {
        Some(end) if !force && chrono::Utc::now() - end < IN_USE => {
            Err(ApiError::conflict(format!(
                "Bucket '{}' was written to at {end}, less than {} minutes ago: a watcher still \
             writes to it by this id and would fail after it is {what}. Stop or restart that \
             watcher after this, or ask again with force=true.",
                bucket.id,
                IN_USE.num_minutes()
            )))
        }
        _ => Ok(()),
    }
}

/// The body of `PATCH /api/0/buckets/<id>`: what changes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BucketChange {
    /// The new id.
    id: Option<String>,
    /// The new host.
    hostname: Option<String>,
}

/// Renames a bucket and/or moves it to another host (ours); answers the bucket as it is
/// now. 409 when the new id is taken, or while a watcher writes to the bucket (unless
/// `force=true`); 400 for a bucket pulled from another device.
#[rocket::patch("/api/0/buckets/<bucket_id>?<force>", format = "json", data = "<body>")]
pub(crate) async fn rename_bucket(
    bucket_id: &str,
    force: Vec<&str>,
    body: JsonBody<BucketChange>,
    state: &State<AppState>,
) -> ApiResult<Json<aw_models::Bucket>> {
    let force = flag(&force, "force")?;
    let change = body.0;
    if change.id.is_none() && change.hostname.is_none() {
        return Err(ApiError::bad_request(
            "Nothing to change: give an id or a hostname",
        ));
    }
    if change.id.as_deref().is_some_and(str::is_empty) {
        return Err(ApiError::bad_request("A bucket id cannot be empty"));
    }
    let _alone = state.rewrites.lock().await;
    let bucket = state.datastore.get_bucket(bucket_id).await?;
    not_pulled(&bucket, "renamed")?;
    if change.id.as_deref().is_some_and(|id| id != bucket_id) {
        not_in_use(&bucket, force, "renamed")?;
    }
    let new_id = change.id.as_deref().unwrap_or(bucket_id);
    state
        .datastore
        .rename_bucket(bucket_id, change.id.as_deref(), change.hostname.as_deref())
        .await
        .map_err(|e| match e {
            // Not the 304 a create of an existing bucket gets (`error.rs`): the rename did
            // not happen, and a client must not take it as done.
            aw_datastore::DatastoreError::BucketAlreadyExists(id) => {
                ApiError::conflict(format!("Bucket '{id}' exists already"))
            }
            other => ApiError::from(other),
        })?;
    state.datastore.force_commit().await?;
    Ok(Json(state.datastore.get_bucket(new_id).await?))
}

/// The body of `POST /api/0/buckets/<id>/merge`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeFrom {
    /// The bucket merged away.
    from: String,
}

/// The answer to a merge.
#[derive(Debug, Serialize)]
pub(crate) struct MergeAnswer {
    #[serde(flatten)]
    done: aw_datastore::Merge,
    #[serde(flatten)]
    undo: Undo,
}

/// Moves every event of bucket `from` into this one (events this one holds already are
/// not doubled) and deletes `from` (ours). 400 when the types differ or either is pulled
/// from another device, 409 while a watcher writes to `from` (unless `force=true`).
#[rocket::post(
    "/api/0/buckets/<bucket_id>/merge?<force>",
    format = "json",
    data = "<body>"
)]
pub(crate) async fn merge_bucket(
    bucket_id: &str,
    force: Vec<&str>,
    body: JsonBody<MergeFrom>,
    state: &State<AppState>,
) -> ApiResult<Json<MergeAnswer>> {
    let force = flag(&force, "force")?;
    let from = body.0.from;
    let _alone = state.rewrites.lock().await;
    let into = state.datastore.get_bucket(bucket_id).await?;
    let merged = state.datastore.get_bucket(&from).await?;
    not_pulled(&into, "merged into")?;
    not_pulled(&merged, "merged away")?;
    if merged._type != into._type {
        return Err(ApiError::bad_request(format!(
            "Cannot merge '{from}' (type '{}') into '{bucket_id}' (type '{}'): the types differ",
            merged._type, into._type
        )));
    }
    not_in_use(&merged, force, "merged away")?;
    let events = state.datastore.get_event_count(&from, None, None).await?;
    let undo = backup_first(state, events).await?;
    let done = state.datastore.merge_buckets(&from, bucket_id).await?;
    state.datastore.force_commit().await?;
    Ok(Json(MergeAnswer { done, undo }))
}

/// The body of `POST /api/0/privacy/apply`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrivacyRun {
    /// Only count, change nothing.
    dry_run: bool,
}

/// The answer to a privacy run.
#[derive(Debug, Serialize)]
pub(crate) struct PrivacyAnswer {
    #[serde(flatten)]
    report: aw_datastore::PrivacyReport,
    /// Whether nothing was changed.
    dry_run: bool,
    #[serde(flatten)]
    undo: Undo,
}

/// Applies the enabled privacy rules (the `privacy_filters` setting) to the stored history
/// (ours): a dry run answers per rule how many events would be dropped or redacted, with up
/// to five samples each; the run does it, all or nothing, after a backup, and then leaves
/// none of the removed text readable beside the database (WAL checkpointed and truncated,
/// journal zeroed; freed space is zeroed as it is freed). A pattern that cannot be
/// evaluated on a value counts as no match here (and is counted), unlike for new events.
#[rocket::post("/api/0/privacy/apply", format = "json", data = "<body>")]
pub(crate) async fn apply_privacy(
    body: JsonBody<PrivacyRun>,
    state: &State<AppState>,
) -> ApiResult<Json<PrivacyAnswer>> {
    let dry_run = body.0.dry_run;
    let _alone = state.rewrites.lock().await;
    let preview = state.datastore.apply_privacy_to_past(true).await?;
    if dry_run {
        return Ok(Json(PrivacyAnswer {
            report: preview,
            dry_run,
            undo: Undo::default(),
        }));
    }
    let undo = backup_first(state, preview.dropped + preview.redacted).await?;
    let report = state.datastore.apply_privacy_to_past(false).await?;
    state.datastore.scrub().await?;
    Ok(Json(PrivacyAnswer {
        report,
        dry_run,
        undo,
    }))
}
