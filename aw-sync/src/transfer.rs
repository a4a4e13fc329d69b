//! Copying one bucket's events between stores: exact, in bounded pages, and idempotent.
//!
//! The reference API clips reads to their window, so a page boundary or a resume point
//! that falls inside an event would cut it (the reference aw-sync stores such cut pieces:
//! COMPATIBILITY.md, sync #8). Here every event that may have been clipped is read again by id, and
//! every page is written through [`write_page`], which skips what the destination already
//! has and extends what grew. So a page read twice, a pass run twice, or a pass resumed
//! after a crash writes each event once.

use std::collections::HashMap;

use aw_models::raw_event::data_to_text;
use aw_models::{timestamp, Event};
use chrono::{DateTime, Utc};

use crate::error::{Result, SyncError};
use crate::server::Server;

/// Events per page read and written: memory stays flat however large the bucket.
pub(crate) const PAGE_SIZE: usize = 5000;

/// A page whose events all start at one instant is read again with a larger limit, up to
/// this many events (more events at one instant than this cannot be paged over the API).
const MAX_TIED_PAGE: usize = 1 << 20;

/// The event's start and end in ns (saturating, as the store does).
pub(crate) fn extent(event: &Event) -> (i64, i64) {
    let start = timestamp::to_ns_saturating(&event.timestamp);
    let length = event.duration.num_nanoseconds().unwrap_or(i64::MAX);
    (start, start.saturating_add(length))
}

/// Reads every event of `bucket` on `server` that overlaps `[from, ∞)`, unclipped, and
/// hands them to `visit` a page at a time (newest pages first; each event exactly once).
///
/// Pages go backwards with `end` set to the oldest start of the page before; the events
/// at that start are left for the next page (which includes them), so ties never split.
/// Events that touch a window edge may have been clipped there and are read again by id.
pub(crate) fn read_pages(
    server: &dyn Server,
    bucket: &str,
    from: Option<DateTime<Utc>>,
    visit: &mut dyn FnMut(Vec<Event>) -> Result<()>,
) -> Result<()> {
    let mut end: Option<DateTime<Utc>> = None;
    let mut limit = PAGE_SIZE;
    loop {
        let mut page = server.events(bucket, from, end, Some(limit as u64))?;
        let last_page = page.len() < limit;
        let mut next_end = None;
        if !last_page {
            // Newest first: the last event has the oldest start.
            let oldest = page.last().map(|e| e.timestamp);
            if page.iter().all(|e| Some(e.timestamp) == oldest) {
                if limit >= MAX_TIED_PAGE {
                    return Err(SyncError::Config(format!(
                        "bucket '{bucket}' has more than {MAX_TIED_PAGE} events starting at one instant"
                    )));
                }
                limit *= 2;
                continue;
            }
            page.retain(|e| Some(e.timestamp) != oldest);
            next_end = oldest;
        }
        unclip(server, bucket, &mut page, from, end)?;
        visit(page)?;
        if last_page {
            return Ok(());
        }
        end = next_end;
        limit = PAGE_SIZE;
    }
}

/// The events of `bucket` that start in `day` (UTC), unclipped, with their ids: the
/// events overlapping the day, with those that touch its edges read again by id, and
/// those that started before it left out.
pub(crate) fn events_of_day(server: &dyn Server, bucket: &str, day: i64) -> Result<Vec<Event>> {
    let (lo, hi) = aw_datastore::day_span(day);
    let (from, until) = (timestamp::from_ns(lo), timestamp::from_ns(hi));
    let mut events = server.events(bucket, Some(from), Some(until), None)?;
    unclip(server, bucket, &mut events, Some(from), Some(until))?;
    events.retain(|e| aw_datastore::day_of(extent(e).0) == day);
    Ok(events)
}

/// Replaces the events of a page that touch the window's edges (and so may have been
/// clipped) with the stored events.
fn unclip(
    server: &dyn Server,
    bucket: &str,
    page: &mut [Event],
    from: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
) -> Result<()> {
    let from = from.map(|t| timestamp::to_ns_saturating(&t));
    let end = end.map(|t| timestamp::to_ns_saturating(&t));
    for event in page.iter_mut() {
        let (s, e) = extent(event);
        if Some(s) == from || Some(e) == end {
            if let Some(id) = event.id {
                *event = server.event(bucket, id)?;
            }
        }
    }
    Ok(())
}

/// Where an event of the page is in the destination.
enum Slot {
    /// Stored, with this id (when the read gave one).
    Stored(Option<i64>),
    /// Queued for insertion at this index of the batch.
    Queued(usize),
}

/// Writes a page of events into `bucket` of `dest`, skipping events it already has (same
/// start and data, and an end at least as late) and extending those that grew (same start
/// and data, earlier end: the event is replaced by id). Returns how many events were
/// inserted or extended.
pub(crate) fn write_page(dest: &dyn Server, bucket: &str, events: Vec<Event>) -> Result<usize> {
    let (Some(lo), Some(hi)) = (
        events.iter().map(|e| extent(e).0).min(),
        events.iter().map(|e| extent(e).1.max(extent(e).0)).max(),
    ) else {
        return Ok(0);
    };
    // One ns wider at the start: a destination event clipped there gets a start no event
    // of the page has, so a clipped piece never passes for a copy.
    let window_start = timestamp::from_ns(lo.saturating_sub(1));
    let mut have: HashMap<(i64, String), (Slot, i64)> = HashMap::new();
    for stored in dest.events(
        bucket,
        Some(window_start),
        Some(timestamp::from_ns(hi)),
        None,
    )? {
        let (s, e) = extent(&stored);
        let key = (s, data_to_text(&stored.data));
        match have.get(&key) {
            Some((_, end)) if *end >= e => {}
            _ => {
                have.insert(key, (Slot::Stored(stored.id), e));
            }
        }
    }
    let mut batch: Vec<Event> = Vec::new();
    for mut event in events {
        let (s, e) = extent(&event);
        let key = (s, data_to_text(&event.data));
        match have.get_mut(&key) {
            Some((_, end)) if *end >= e => {}
            Some((slot, end)) => {
                *end = e;
                match slot {
                    Slot::Queued(i) => batch[*i].duration = event.duration,
                    Slot::Stored(id) => {
                        event.id = *id;
                        *slot = Slot::Queued(batch.len());
                        batch.push(event);
                    }
                }
            }
            None => {
                event.id = None;
                have.insert(key, (Slot::Queued(batch.len()), e));
                batch.push(event);
            }
        }
    }
    let written = batch.len();
    if written > 0 {
        dest.insert(bucket, batch)?;
    }
    Ok(written)
}
