//! `GET /api/0/storage`: what takes the space (`storage.rs`); `POST /api/0/storage/reclaim`:
//! the free pages given back; `POST /api/0/storage/compact`: fewer events, the same
//! durations. Ours only; they need the API key like the rest of `/api/`.

use rocket::serde::json::Json;
use rocket::State;

use crate::backups::BackupError;
use crate::endpoints::history::{backup_first, not_pulled, Undo};
use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::params::single;
use crate::state::AppState;
use crate::storage::StorageReport;

/// The files' sizes, the free space inside the database, the last measure of the
/// events per bucket and per year with when it was taken, and the retention rules' runs
/// (whether they run daily, the last runs, the backups that still hold what they removed). `fresh=true` measures now and
/// waits for it (a second or so for a year of events); otherwise a measure older than ten
/// minutes is started in the background and the answer says `measuring`. 400 for a `fresh`
/// that is neither `true` nor `false`; 503 when there is no backup connection to measure
/// over (the server is stopping).
#[rocket::get("/api/0/storage?<fresh>")]
pub(crate) async fn report(
    fresh: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<StorageReport>> {
    let fresh = match single(&fresh, "fresh")? {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "The query parameter 'fresh' must be true or false, not '{other}'"
            )))
        }
    };
    let (storage, backups, db) = (
        state.storage.clone(),
        state.backups.clone(),
        state.db_path.clone(),
    );
    let retention = Some(state.retention().summary().await?);
    if !fresh {
        let report = storage.report(&state.datastore, &db, &backups);
        return Ok(Json(StorageReport {
            retention,
            ..report
        }));
    }
    let datastore = state.datastore.clone();
    let report = rocket::tokio::task::spawn_blocking(move || {
        storage.report_fresh(&datastore, &db, &backups)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the storage was not measured: {e}")))?;
    let report = report.map_err(|e| match e {
        BackupError::Unavailable(_) => ApiError::unavailable(e.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    Ok(Json(StorageReport {
        retention,
        ..report
    }))
}

/// What `POST /api/0/storage/reclaim` answers.
#[derive(Debug, serde::Serialize)]
pub(crate) struct ReclaimAnswer {
    /// What the datastore did (pages before and after, free pages left).
    #[serde(flatten)]
    pub reclaimed: aw_datastore::Reclaimed,
    /// The database file's size before, in bytes.
    pub file_bytes_before: u64,
    /// Its size after.
    pub file_bytes_after: u64,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
}

/// Gives the free pages inside the database back to the file system while serving: moved
/// in steps between other requests, then the WAL copied into the file and truncated. 409
/// when the file cannot (made by the reference or an older version of ours, in
/// `auto_vacuum=NONE` mode): `aw-server compact`, with the server stopped, converts it.
#[rocket::post("/api/0/storage/reclaim")]
pub(crate) async fn reclaim(state: &State<AppState>) -> ApiResult<Json<ReclaimAnswer>> {
    let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let began = std::time::Instant::now();
    let file_bytes_before = size(&state.db_path);
    let reclaimed = state.datastore.reclaim_space().await?;
    if !reclaimed.incremental {
        return Err(ApiError::conflict(
            "This database file keeps its free pages (auto_vacuum is off: it was made by the \
             reference or an older version). Stop the server and run `aw-server compact` once \
             to convert it; from then on its space can be given back while serving.",
        ));
    }
    Ok(Json(ReclaimAnswer {
        reclaimed,
        file_bytes_before,
        file_bytes_after: size(&state.db_path),
        took_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
    }))
}

/// The body of `POST /api/0/storage/compact`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompactAsked {
    /// Only count, change nothing.
    dry_run: bool,
    /// The buckets; absent: every bucket of ours whose type the queries flood.
    #[serde(default)]
    buckets: Option<Vec<String>>,
    /// The events a preview said would go (`removed`): any other number is refused with
    /// 409, nothing changed.
    #[serde(default)]
    expect: Option<u64>,
}

/// What `POST /api/0/storage/compact` answers.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CompactAnswer {
    #[serde(flatten)]
    done: aw_datastore::Compaction,
    /// Whether nothing was changed.
    dry_run: bool,
    /// The free pages given back afterwards (a file in `auto_vacuum=INCREMENTAL` mode
    /// whose compaction removed events); `None` otherwise.
    reclaimed: Option<aw_datastore::Reclaimed>,
    #[serde(flatten)]
    undo: Undo,
}

/// Compacts the buckets whose events every query floods first (window, AFK, browser
/// tabs: `aw_datastore::FLOODED_TYPES`): events `flood` would join are merged, and
/// duplicates removed, so no duration the dashboard or `/api/0/summary` shows changes
/// (`aw-datastore/src/store/compaction_plan.rs` says why). The dry run first, for the
/// backup's sake (as for the other rewrites), then the run, all or nothing, then the free
/// pages given back. 400 for a bucket of another type or pulled from another device, 404
/// for a missing one, 409 when `expect` no longer holds.
#[rocket::post("/api/0/storage/compact", format = "json", data = "<body>")]
pub(crate) async fn compact(
    body: JsonBody<CompactAsked>,
    state: &State<AppState>,
) -> ApiResult<Json<CompactAnswer>> {
    let CompactAsked {
        dry_run,
        buckets,
        expect,
    } = body.0;
    let _alone = state.rewrites.lock().await;
    let buckets = compacted_buckets(state, buckets).await?;
    let preview = state.datastore.compact(&buckets, true, expect).await?;
    if dry_run {
        return Ok(Json(CompactAnswer {
            done: preview,
            dry_run,
            reclaimed: None,
            undo: Undo::default(),
        }));
    }
    let undo = backup_first(state, preview.removed).await?;
    let done = state.datastore.compact(&buckets, false, expect).await?;
    state.datastore.force_commit().await?;
    let reclaimed = if done.removed > 0 {
        Some(state.datastore.reclaim_space().await?).filter(|r| r.incremental)
    } else {
        None
    };
    Ok(Json(CompactAnswer {
        done,
        dry_run,
        reclaimed,
        undo,
    }))
}

/// The buckets a compaction takes: those asked for, each checked, or every bucket of ours
/// of a flooded type.
async fn compacted_buckets(state: &AppState, asked: Option<Vec<String>>) -> ApiResult<Vec<String>> {
    let flooded = |b: &aw_models::Bucket| aw_datastore::FLOODED_TYPES.contains(&b._type.as_str());
    let Some(mut asked) = asked else {
        let mut all: Vec<String> = state
            .datastore
            .get_buckets()
            .await?
            .into_values()
            .filter(|b| flooded(b) && !aw_sync::is_import(b))
            .map(|b| b.id)
            .collect();
        all.sort();
        return Ok(all);
    };
    asked.sort();
    asked.dedup();
    for id in &asked {
        let bucket = state.datastore.get_bucket(id).await?;
        not_pulled(&bucket, "compacted")?;
        if !flooded(&bucket) {
            return Err(ApiError::bad_request(format!(
                "Bucket '{id}' is of type '{}': only buckets whose events the queries flood \
                 first ({}) can be compacted without changing what they show",
                bucket._type,
                aw_datastore::FLOODED_TYPES.join(", ")
            )));
        }
    }
    Ok(asked)
}
