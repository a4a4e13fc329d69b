//! The HTTP routes, one file per resource.

pub(crate) mod backups;
pub(crate) mod buckets;
pub(crate) mod dashboard;
pub(crate) mod events;
pub(crate) mod export;
pub(crate) mod health;
pub(crate) mod history;
pub(crate) mod import;
pub(crate) mod info;
pub(crate) mod openapi;
pub(crate) mod query;
pub(crate) mod retention;
pub(crate) mod settings;
pub(crate) mod storage;
pub(crate) mod summary;
pub(crate) mod sync;
pub(crate) mod webui;

/// Every API route, for mounting at `/`.
pub(crate) fn api_routes() -> Vec<rocket::Route> {
    rocket::routes![
        info::info,
        openapi::openapi,
        buckets::list,
        buckets::get,
        buckets::create,
        buckets::delete,
        events::list,
        events::insert,
        events::count,
        events::get_one,
        events::delete_one,
        events::replace_one,
        events::heartbeat,
        history::bucket_range,
        history::host_range,
        history::by_ids,
        history::rename_bucket,
        history::merge_bucket,
        history::apply_privacy,
        summary::summary,
        export::bucket,
        export::all,
        import::json,
        import::multipart,
        query::query,
        query::sum,
        query::cache_stats,
        settings::list,
        settings::get,
        settings::set,
        settings::delete,
        sync::status,
        sync::day_digests,
        sync::applied_days,
        sync::apply_day,
        sync::scrub,
        backups::list,
        backups::take,
        storage::report,
        storage::reclaim,
        storage::compact,
        retention::apply,
        health::health,
    ]
}
