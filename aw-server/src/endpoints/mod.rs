//! The HTTP routes, one file per resource.

pub mod backups;
pub mod buckets;
pub mod dashboard;
pub mod events;
pub mod export;
pub mod health;
pub mod import;
pub mod info;
pub mod openapi;
pub mod query;
pub mod settings;
pub mod sync;
pub mod webui;

/// Every API route, for mounting at `/`.
pub fn api_routes() -> Vec<rocket::Route> {
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
        events::heartbeat,
        export::bucket,
        export::all,
        import::json,
        import::multipart,
        query::query,
        query::cache_stats,
        settings::list,
        settings::get,
        settings::set,
        settings::delete,
        sync::status,
        backups::list,
        backups::take,
        health::health,
    ]
}
