//! One day of a bucket made exactly a given list of events, ids included: how a device's
//! sync file follows its server's history in place (`aw-sync`'s push), so the file's
//! event ids are the server's and another device can tell an event by them across edits.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::store::change::{Change, Changes};
use crate::store::day_digest::{day_of, day_span};
use crate::store::write_listeners::Extent;

/// The events of a bucket starting in `[?2, ?3]`.
const DAY_EVENTS_SQL: &str = "SELECT id, starttime, endtime, data FROM events \
     WHERE bucketrow = ?1 AND starttime >= ?2 AND starttime <= ?3";

/// Where an event id lives now.
const EVENT_OWNER_SQL: &str = "SELECT bucketrow, starttime, endtime FROM events WHERE id = ?1";

/// What [`crate::Datastore::mirror_day`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MirroredDay {
    /// Events inserted or replaced.
    pub written: u64,
    /// Events deleted.
    pub deleted: u64,
}

impl Store {
    /// Makes the events of bucket `name` that start in `day` exactly `events`, each with
    /// the id it carries: equal rows stay, changed ones are replaced, missing ones
    /// inserted under their id (a row of that id elsewhere, in another day or bucket, is
    /// removed first: the event moved), and the day's other rows are deleted. Every event
    /// must carry an id and start in the day. What it removes is zeroed in the file
    /// ([`Store::securely`]): a redaction leaves no trace of the old text in the copy.
    pub(crate) fn mirror_day(
        &mut self,
        changes: &mut Changes,
        name: &str,
        day: i64,
        events: Vec<NewEvent>,
    ) -> Result<MirroredDay> {
        self.securely(|s| s.mirror_day_now(changes, name, day, events))
    }

    fn mirror_day_now(
        &mut self,
        changes: &mut Changes,
        name: &str,
        day: i64,
        events: Vec<NewEvent>,
    ) -> Result<MirroredDay> {
        let bid = self.bucketrow(name)?;
        for e in &events {
            if e.id.is_none() || day_of(e.start) != day {
                return Err(DatastoreError::InvalidEvent(format!(
                    "a mirrored event of day {day} needs an id and a start in that day"
                )));
            }
        }
        let (lo, hi) = day_span(day);
        let mut stored: HashMap<i64, (i64, i64, String)> = HashMap::new();
        {
            let mut stmt = self.conn.prepare_cached(DAY_EVENTS_SQL)?;
            let mut rows = stmt.query(params![bid, lo, hi])?;
            while let Some(row) = rows.next()? {
                stored.insert(row.get(0)?, (row.get(1)?, row.get(2)?, row.get(3)?));
            }
        }
        let mut done = MirroredDay::default();
        let mut extent = Extent::new();
        let mut moved_from: HashMap<i64, u64> = HashMap::new();
        for e in events {
            let id = e.id.unwrap_or_default();
            match stored.remove(&id) {
                Some((s, end, data)) if s == e.start && end == e.end && data == e.data => {}
                Some((s, end, _)) => {
                    extent.add(s, end);
                    extent.add(e.start, e.end);
                    changes.apply(
                        &self.conn,
                        Change::ReplaceEvent {
                            id,
                            start: e.start,
                            end: e.end,
                            data: e.data,
                        },
                    )?;
                    done.written += 1;
                }
                None => {
                    self.insert_under_id(changes, bid, id, e, &mut extent, &mut moved_from)?;
                    done.written += 1;
                    self.state(name)?.add_count(1);
                }
            }
        }
        for (id, (s, end, _)) in stored {
            changes.apply(&self.conn, Change::DeleteEvent { id, bucketrow: bid })?;
            extent.add(s, end);
            done.deleted += 1;
        }
        self.state(name)?.sub_count(done.deleted);
        for (row, n) in moved_from {
            if n > 0 {
                self.forget_events_of_row(row, n);
            }
        }
        if let Some((s, e)) = extent.bounds() {
            self.state(name)?.widen(s, e);
        }
        self.last_heartbeat.remove(&bid);
        self.tell_events(name, extent);
        Ok(done)
    }

    /// Inserts `e` into bucket row `bid` under `id`, removing the row of that id first
    /// wherever it is (the event moved: counted in `moved_from` by its old bucket row).
    fn insert_under_id(
        &mut self,
        changes: &mut Changes,
        bid: i64,
        id: i64,
        e: NewEvent,
        extent: &mut Extent,
        moved_from: &mut HashMap<i64, u64>,
    ) -> Result<()> {
        let owner: Option<(i64, i64, i64)> = self
            .conn
            .prepare_cached(EVENT_OWNER_SQL)?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((row, s, end)) = owner {
            changes.apply(&self.conn, Change::DeleteEvent { id, bucketrow: row })?;
            if row == bid {
                extent.add(s, end);
            }
            *moved_from.entry(row).or_default() += 1;
        }
        extent.add(e.start, e.end);
        changes.apply(
            &self.conn,
            Change::InsertEvent {
                id,
                bucketrow: bid,
                start: e.start,
                end: e.end,
                data: e.data,
            },
        )?;
        Ok(())
    }

    /// Takes `n` events off the count of the bucket of row `row` (they moved away), and
    /// tells its listeners.
    fn forget_events_of_row(&mut self, row: i64, n: u64) {
        let Some(name) = self
            .buckets
            .iter()
            .find(|(_, b)| b.bucket().bid == Some(row))
            .map(|(name, _)| name.clone())
        else {
            return;
        };
        if let Ok(state) = self.state(&name) {
            state.sub_count(n);
        }
        self.last_heartbeat.remove(&row);
        self.tell(crate::store::write_listeners::Touched::Bucket(&name));
    }
}
