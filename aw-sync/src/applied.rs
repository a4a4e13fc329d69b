//! What this device applied of other devices' days (`pass/pull_days.rs`), and the request
//! that applies one more: the same whether the pass runs inside the server (on its
//! datastore) or in the `aw-sync` program (over HTTP, `POST /api/0/sync/apply`).
//!
//! The record lives in the server's settings, under keys no setting of the dashboard uses
//! (`GET /api/0/settings` lists only `settings.*`), written by `Datastore::apply_pulled_day`
//! in the same request as the events: the digest applied of each day of a peer's bucket
//! (one JSON object per bucket), what was applied of each day (source id, id here, hash),
//! and the peer's event ids deleted here (one list per device: an event keeps its id when
//! it moves to another bucket there). Keys are written as JSON arrays, so no device id or
//! bucket id can run into another.

use aw_datastore::{NewEvent, PulledDay};
use aw_models::Event;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SyncError};

/// The settings recording what was applied of one peer's bucket.
#[derive(Clone, Debug)]
pub struct AppliedDays {
    device: String,
    source: String,
}

impl AppliedDays {
    /// The record of bucket `source` of device `device`.
    pub fn new(device: &str, source: &str) -> AppliedDays {
        AppliedDays {
            device: device.to_string(),
            source: source.to_string(),
        }
    }

    /// Day → digest of every day applied.
    pub fn index_key(&self) -> String {
        format!("aw-sync.days.{}", json(&(&self.device, &self.source)))
    }

    /// What was applied of one day.
    pub fn day_key(&self, day: i64) -> String {
        format!("aw-sync.day.{}", json(&(&self.device, &self.source, day)))
    }

    /// The device's event ids deleted here.
    pub fn deleted_key(&self) -> String {
        format!("aw-sync.deleted.{}", json(&[&self.device]))
    }
}

/// Forgets what was applied of every peer's days, but not the events deleted here: after
/// the server's database lost writes (a salvage), a record could name events that are
/// gone, which the next pass would take for deletions made here. Without records, the next
/// pass applies every day again as a day without one (matched by start and data), and
/// what the database lost comes back. Returns how many settings went.
pub fn forget_applied_days(store: &aw_datastore::Datastore) -> Result<usize> {
    let mut forgotten = 0;
    for prefix in ["aw-sync.days.", "aw-sync.day."] {
        for (key, _) in store.get_key_values(prefix).wait()? {
            store.delete_key_value(&key).wait()?;
            forgotten += 1;
        }
    }
    Ok(forgotten)
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// One day of a peer's bucket to apply to its pulled copy here: the body of
/// `POST /api/0/sync/apply`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayToApply {
    /// The peer's device id.
    pub device: String,
    /// The bucket's id there.
    pub source: String,
    /// Its pulled copy here.
    pub bucket: String,
    /// The day (days since 1970-01-01, UTC).
    pub day: i64,
    /// The peer's digest of the day; empty when it has no events any more.
    pub digest: String,
    /// The day's events there, each with its id there as `id`.
    pub events: Vec<Event>,
    /// Apply as a day without a record (the copy was created anew).
    #[serde(default)]
    pub adopt: bool,
    /// Where an older, append-only pull had got to, in ns (see `aw_datastore::PulledDay`).
    #[serde(default)]
    pub pulled_until: Option<i64>,
}

impl DayToApply {
    /// The datastore's request, with the record's keys.
    pub fn into_pulled_day(self) -> Result<PulledDay> {
        let keys = AppliedDays::new(&self.device, &self.source);
        let mut events = Vec::with_capacity(self.events.len());
        for event in &self.events {
            let source = event.id.ok_or_else(|| {
                SyncError::Config("an event to apply has no id (its id on the other device)".into())
            })?;
            events.push((source, NewEvent::from_event(event)?));
        }
        Ok(PulledDay {
            bucket: self.bucket,
            day: self.day,
            digest: self.digest,
            events,
            state_key: keys.day_key(self.day),
            index_key: keys.index_key(),
            deleted_key: keys.deleted_key(),
            source: self.source,
            adopt: self.adopt,
            pulled_until: self.pulled_until,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Server;
    use aw_models::Bucket;
    use serde_json::json;

    #[test]
    fn forgetting_applied_days_keeps_the_deletions_made_here() {
        let dir = tempfile::tempdir().unwrap();
        let store = aw_datastore::Datastore::open(&dir.path().join("db.sqlite")).unwrap();
        Server::create_bucket(&store, &Bucket::new("copy", "t", "c", "h")).unwrap();
        let event = |id: i64, title: &str| {
            let mut e = Event::new(
                aw_models::timestamp::from_ns(1_000_000_000),
                chrono::Duration::seconds(1),
                json!({ "title": title }).as_object().unwrap().clone(),
            );
            e.id = Some(id);
            e
        };
        let day = |events: Vec<Event>, digest: &str| DayToApply {
            device: "peer".into(),
            source: "src".into(),
            bucket: "copy".into(),
            day: 0,
            digest: digest.into(),
            events,
            adopt: false,
            pulled_until: None,
        };
        Server::apply_pulled_day(&store, day(vec![event(1, "a"), event(2, "b")], "d1")).unwrap();
        let b = Server::events(&store, "copy", None, None, None)
            .unwrap()
            .into_iter()
            .find(|e| e.data["title"] == "b")
            .and_then(|e| e.id)
            .unwrap();
        store.delete_events_by_id("copy", vec![b]).wait().unwrap();
        Server::apply_pulled_day(&store, day(vec![event(1, "a"), event(2, "b")], "d2")).unwrap();
        assert_eq!(
            Server::applied_days(&store, "peer", "src").unwrap().len(),
            1
        );
        assert_eq!(
            forget_applied_days(&store).unwrap(),
            2,
            "the index and the day"
        );
        assert_eq!(
            Server::applied_days(&store, "peer", "src").unwrap().len(),
            0
        );
        // Applied again without a record: "a" is adopted, "b" stays deleted.
        let applied =
            Server::apply_pulled_day(&store, day(vec![event(1, "a"), event(2, "b")], "d2"))
                .unwrap()
                .unwrap();
        assert_eq!((applied.inserted, applied.kept_deleted), (0, 1));
    }
}
