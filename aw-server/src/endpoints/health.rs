//! `GET /api/0/health`: whether the database is whole, what the last salvage did, and how
//! many requests are in flight (ours only). A damaged file is salvaged while the server
//! runs (`aw_datastore`'s `live_salvage.rs`); this route, and the log, say what happened.

use rocket::serde::json::Json;
use rocket::State;
use serde::Serialize;

use crate::state::AppState;

/// The answer of `GET /api/0/health`.
#[derive(Serialize)]
pub(crate) struct Health {
    /// `ok`, or `salvaged` when the file was found damaged and replaced by its salvaged
    /// copy since the server started.
    pub database: &'static str,
    /// What the salvage brought back and what it could not read, if there was one.
    pub salvage: Option<aw_datastore::SalvageReport>,
    /// Requests the server is handling, this one included: a client can see that a long
    /// request (an import, a big query) has reached the server and is under way.
    pub requests_in_flight: usize,
}

/// The database's state.
#[rocket::get("/api/0/health")]
pub(crate) fn health(state: &State<AppState>) -> Json<Health> {
    let salvage = state.datastore.salvage_report();
    Json(Health {
        database: if salvage.is_some() { "salvaged" } else { "ok" },
        salvage,
        requests_in_flight: state.requests_in_flight.get(),
    })
}
