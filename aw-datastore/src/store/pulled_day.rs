//! One day of another device's bucket applied to its pulled copy here, in one request:
//! the copy's events of that day become the other device's, after this device's privacy
//! rules and without the events this device deleted from its copy.
//!
//! What was applied is remembered in two settings, written in the same request as the
//! events (so a crash, a restore or a salvage never separates them): per day, the other
//! device's digest of it and, per event, its id there (the *source id*), its id here and a
//! hash of it as it was there; per device, the source ids of the events deleted here. An
//! event applied before and missing now was deleted here by the user: its source id joins
//! that list, and no later change of the other device (an edit of it, a rewrite of its
//! day, a move to another day or bucket) brings it back.
//!
//! A day without a record (pulled by a version that kept none, or never) is *adopted*: an
//! event of the copy with the same start and data (as this device's rules leave them) is
//! taken as the other's; an unmatched one that starts at or before where the old pull had
//! got to was deleted here; the rest are inserted.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::store::change::Changes;
use crate::store::day_digest::{day_of, day_span, event_hash};
use crate::store::privacy::Verdict;

/// One day of another device's bucket, as its file has it now.
#[derive(Clone, Debug)]
pub struct PulledDay {
    /// The pulled copy here.
    pub bucket: String,
    /// The day (days since 1970-01-01, UTC).
    pub day: i64,
    /// The other device's digest of the day; empty when the day has no events any more.
    pub digest: String,
    /// The day's events there, each with its id there (`NewEvent::id` is not used).
    pub events: Vec<(i64, NewEvent)>,
    /// The setting that records what was applied of this day.
    pub state_key: String,
    /// The setting that lists the digest applied of each day of the bucket (a JSON object
    /// from day to digest): what a pass compares, without reading every day's record.
    pub index_key: String,
    /// The setting that lists the source ids of events deleted here (one per device: an
    /// event keeps its id when it moves to another bucket there), each with its bucket's
    /// id there when it was deleted.
    pub deleted_key: String,
    /// The bucket's id there.
    pub source: String,
    /// Apply as a day without a record, whatever is recorded (the copy was created anew:
    /// the record names events of the old one, and the events deleted from the old one
    /// come back, as the whole copy was deleted here).
    pub adopt: bool,
    /// For a day without a record: where the old pull had got to (an event starting at or
    /// before it that the copy lacks was deleted here).
    pub pulled_until: Option<i64>,
}

/// What applying a day did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PulledDayApplied {
    /// Events inserted (new there, or moved into this day).
    pub inserted: u64,
    /// Events replaced by their new version (edited there).
    pub replaced: u64,
    /// Events deleted (deleted there, or moved out of this day).
    pub deleted: u64,
    /// Events left out because they were deleted here.
    pub kept_deleted: u64,
    /// Events whose text left the copy (deleted, or their data changed): their cells were
    /// zeroed; the caller scrubs the WAL and the journal (`Datastore::scrub`) once it is done.
    pub removed_text: u64,
}

/// The record of one applied day (the `state_key` setting).
#[derive(Serialize, Deserialize, Default)]
struct DayRecord {
    /// The digest applied.
    digest: String,
    /// `[source id, id here, hash there]` of each event applied.
    events: Vec<(i64, i64, u64)>,
}

/// Whether event `?2` is still in bucket row `?1`.
const HAS_EVENT_SQL: &str = "SELECT 1 FROM events WHERE bucketrow = ?1 AND id = ?2";

/// The data of event `?2` of bucket row `?1`.
const DATA_OF_EVENT_SQL: &str = "SELECT data FROM events WHERE bucketrow = ?1 AND id = ?2";

/// The events of a bucket starting in `[?2, ?3]`.
const DAY_EVENTS_SQL: &str = "SELECT id, starttime, endtime, data FROM events \
     WHERE bucketrow = ?1 AND starttime >= ?2 AND starttime <= ?3";

impl Store {
    /// Applies `day` (see the module docs). Every event must start in the day.
    pub(crate) fn apply_pulled_day(
        &mut self,
        changes: &mut Changes,
        day: PulledDay,
    ) -> Result<PulledDayApplied> {
        let bid = self.bucketrow(&day.bucket)?;
        if let Some((_, e)) = day.events.iter().find(|(_, e)| day_of(e.start) != day.day) {
            return Err(DatastoreError::InvalidEvent(format!(
                "an event starting at {} ns is not of day {}",
                e.start, day.day
            )));
        }
        let record: Option<DayRecord> = match day.adopt {
            true => None,
            false => self.json_setting(&day.state_key)?,
        };
        let (mut deleted, before) = self.deleted_here(&day)?;
        let mut deleted_here: BTreeSet<i64> = deleted.keys().copied().collect();
        let known = deleted_here.clone();
        let mut plan = match record {
            Some(record) => self.plan_recorded(bid, record, &mut deleted_here)?,
            None => self.plan_adopted(bid, &day, &mut deleted_here)?,
        };
        let mut applied = PulledDayApplied::default();
        let mut kept = Vec::new();
        let mut to_insert = Vec::new();
        for (source, mut event) in day.events {
            if deleted_here.contains(&source) {
                applied.kept_deleted += 1;
                continue;
            }
            let hash = event_hash(event.start, event.end, &event.data);
            match plan.applied.remove(&source) {
                Some((local, old)) if old == hash => kept.push((source, local, hash)),
                Some((local, _)) => {
                    plan.delete.push(local);
                    applied.replaced += 1;
                    event.id = Some(local);
                    to_insert.push((source, hash, event));
                }
                None => {
                    applied.inserted += 1;
                    event.id = None;
                    to_insert.push((source, hash, event));
                }
            }
        }
        // Applied before, gone there now (deleted, or moved to another day).
        plan.delete
            .extend(plan.applied.into_values().map(|(local, _)| local));
        applied.deleted = plan.delete.len() as u64 - applied.replaced;
        applied.removed_text =
            applied.deleted + self.changed_texts(bid, &day.bucket, &to_insert)?;
        if !plan.delete.is_empty() {
            let bucket = &day.bucket;
            self.securely(|s| s.delete_events(changes, bucket, &plan.delete))?;
        }
        for (source, hash, mut event) in to_insert {
            // The id only said which event it replaces (`changed_texts`).
            event.id = None;
            if let Some(stored) = self
                .insert_events(changes, &day.bucket, vec![event])?
                .first()
            {
                kept.push((source, stored.id, hash));
            }
        }
        let keys = DayKeys {
            day: day.day,
            state: day.state_key,
            index: day.index_key,
            deleted: day.deleted_key,
            digest: day.digest,
        };
        for id in deleted_here.difference(&known) {
            deleted.insert(*id, day.source.clone());
        }
        self.record_pulled_day(changes, keys, kept, (&deleted, &before))?;
        Ok(applied)
    }

    /// Writes what was applied of a day: its record (`kept`: source id, id here, hash),
    /// the bucket's index of days, and the device's deleted ids if they changed.
    fn record_pulled_day(
        &mut self,
        changes: &mut Changes,
        keys: DayKeys,
        kept: Vec<(i64, i64, u64)>,
        (deleted, deleted_before): (&BTreeMap<i64, String>, &BTreeMap<i64, String>),
    ) -> Result<()> {
        let mut index: BTreeMap<i64, String> = self.json_setting(&keys.index)?;
        if keys.digest.is_empty() && kept.is_empty() {
            self.delete_key_value(changes, &keys.state)?;
            index.remove(&keys.day);
        } else {
            index.insert(keys.day, keys.digest.clone());
            let record = DayRecord {
                digest: keys.digest,
                events: kept,
            };
            self.set_key_value(changes, &keys.state, &to_json(&record)?)?;
        }
        if index.is_empty() {
            self.delete_key_value(changes, &keys.index)?;
        } else {
            self.set_key_value(changes, &keys.index, &to_json(&index)?)?;
        }
        if deleted != deleted_before {
            self.set_key_value(changes, &keys.deleted, &to_json(deleted)?)?;
        }
        Ok(())
    }

    /// How many of the events that replace one here (`id`: the one they replace) bring
    /// other data than it has (as this device's privacy rules leave it): their old text
    /// leaves the copy.
    fn changed_texts(
        &self,
        bid: i64,
        bucket: &str,
        events: &[(i64, u64, NewEvent)],
    ) -> Result<u64> {
        let mut changed = 0;
        let mut data_of = self.conn.prepare_cached(DATA_OF_EVENT_SQL)?;
        for (_, _, event) in events {
            let Some(local) = event.id else { continue };
            let old: Option<String> = data_of
                .query_row(params![bid, local], |r| r.get(0))
                .optional()?;
            let mut judged = event.clone();
            if !self.privacy.is_empty() {
                let _ = self.privacy.apply(bucket, &mut judged);
            }
            changed += u64::from(old.is_some_and(|old| old != judged.data));
        }
        Ok(changed)
    }

    /// The device's ids deleted here, with their bucket there (and as stored): a copy
    /// created anew takes its bucket's deleted events back.
    fn deleted_here(
        &self,
        day: &PulledDay,
    ) -> Result<(BTreeMap<i64, String>, BTreeMap<i64, String>)> {
        let stored: BTreeMap<i64, String> = self.json_setting(&day.deleted_key)?;
        let mut deleted = stored.clone();
        if day.adopt {
            deleted.retain(|_, source| *source != day.source);
        }
        Ok((deleted, stored))
    }

    /// A setting read as `T`; unset or unreadable: `T`'s default (a record that cannot be
    /// read is as good as none: the day is adopted again).
    fn json_setting<T: serde::de::DeserializeOwned + Default>(&self, key: &str) -> Result<T> {
        match self.get_key_value(key) {
            Ok(text) => Ok(serde_json::from_str(&text).unwrap_or_default()),
            Err(DatastoreError::NoSuchKey(_)) => Ok(T::default()),
            Err(e) => Err(e),
        }
    }

    /// The plan for a recorded day: every recorded event still here, by source id; those
    /// gone were deleted here and join `deleted_here`.
    fn plan_recorded(
        &self,
        bid: i64,
        record: DayRecord,
        deleted_here: &mut BTreeSet<i64>,
    ) -> Result<Plan> {
        let mut plan = Plan::default();
        let mut has = self.conn.prepare_cached(HAS_EVENT_SQL)?;
        for (source, local, hash) in record.events {
            if has.exists(params![bid, local])? {
                plan.applied.insert(source, (local, hash));
            } else {
                deleted_here.insert(source);
            }
        }
        Ok(plan)
    }

    /// The plan for a day without a record (see the module docs): the copy's events that
    /// match one of the day's, as if recorded; unmatched ones up to `pulled_until` join
    /// `deleted_here`.
    fn plan_adopted(
        &self,
        bid: i64,
        day: &PulledDay,
        deleted_here: &mut BTreeSet<i64>,
    ) -> Result<Plan> {
        let (lo, hi) = day_span(day.day);
        let mut here: HashMap<(i64, String), Vec<(i64, i64)>> = HashMap::new();
        {
            let mut stmt = self.conn.prepare_cached(DAY_EVENTS_SQL)?;
            let mut rows = stmt.query(params![bid, lo, hi])?;
            while let Some(row) = rows.next()? {
                let (id, start, end, data): (i64, i64, i64, String) =
                    (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
                here.entry((start, data)).or_default().push((id, end));
            }
        }
        let mut plan = Plan::default();
        for (source, event) in &day.events {
            if deleted_here.contains(source) {
                continue;
            }
            let mut judged = event.clone();
            if !self.privacy.is_empty()
                && self.privacy.apply(&day.bucket, &mut judged) == Verdict::Drop
            {
                continue;
            }
            let hash = event_hash(event.start, event.end, &event.data);
            let found = here
                .get_mut(&(judged.start, judged.data))
                .and_then(Vec::pop);
            match found {
                // The same end: applied as it is; else the other device's end replaces it.
                Some((local, end)) => {
                    let recorded = if end == event.end { hash } else { !hash };
                    plan.applied.insert(*source, (local, recorded));
                }
                None if day.pulled_until.is_some_and(|at| event.start <= at) => {
                    deleted_here.insert(*source);
                }
                None => {}
            }
        }
        Ok(plan)
    }
}

/// Where a day's application is recorded (the keys of [`PulledDay`]) and what.
struct DayKeys {
    day: i64,
    state: String,
    index: String,
    deleted: String,
    digest: String,
}

/// A record as JSON text.
fn to_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| DatastoreError::InvalidEvent(e.to_string()))
}

/// What a day's application starts from.
#[derive(Default)]
struct Plan {
    /// Source id → (id here, hash applied) of the events applied before and still here.
    applied: HashMap<i64, (i64, u64)>,
    /// Ids here to delete.
    delete: Vec<i64>,
}
