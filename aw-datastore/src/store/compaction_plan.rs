//! Which events of a bucket can be merged, or removed as duplicates, without changing
//! anything the query engine's `flood` makes of them: the plan of a compaction
//! (`compaction.rs` walks the rows and writes what this decides; this file has no SQL).
//!
//! The dashboard's queries and `/api/0/summary` flood the events of window, AFK and
//! browser-tab buckets before anything else: `flood` sorts by start, and an event that has
//! the data of the one before it and starts less than 5 s after that one's end (strictly;
//! overlapping counts) is absorbed into it. The plan merges exactly such events ahead of
//! time, so flooding the compacted events gives what flooding the original ones gives.
//! Three rules keep that true for every period a query asks for, not only the whole
//! history:
//!
//! * **Events that start together.** `flood`'s sort keeps the stored order of events with
//!   the same start, which is not one we can promise, so a start shared by events of
//!   different data is a wall: none of them is touched, and nothing merges across it.
//!   Events that start together with the same data are one *unit*: the longest is kept (the
//!   lowest id among equals), the others are duplicates (aw-watcher-afk's repeated events).
//!   Flooding them gives the longest alone, and a query period that reads a shorter one
//!   reads the longest too.
//! * **Merging.** A unit joins the *block* before it (the units merged so far) when it has
//!   the block's data and starts less than [`FLOOD_GAP_NS`] after the block's end: the
//!   block's first unit's kept event is stretched to the block's end, and the other units'
//!   events go.
//! * **Whole minutes.** A block of two or more units must lie within one whole minute
//!   (UTC): from its start to before the next minute begins. A query over a period that
//!   begins and ends on whole minutes — an hour or a day in any time zone, with any
//!   start-of-day offset — then reads either every event of the block or none, as it reads
//!   the merged event or not. Without it a day's total could move by the few seconds
//!   `flood` fills across its boundary. A merge across a minute is left undone: the chain
//!   goes on as a new block in the next minute.
//! * **A start on a whole minute.** A period that begins there cuts the events that cross
//!   its beginning to start there too, and `flood` may then put one of them between the
//!   block's first unit and the rest. So a block that starts exactly on a whole minute
//!   merges only when no earlier event reaches its start.
//!
//! Events whose end is before their start (imports can carry them) are walls too.

/// The gap under which `flood` joins two events of the same data: 5 s, the query
/// engine's fixed pulsetime (`aw-query`'s `flood`). A compaction must use the same value;
/// the property test `aw-datastore/tests/compaction.rs` floods with the engine itself.
pub const FLOOD_GAP_NS: i64 = 5_000_000_000;

/// One minute, the grid a block must not cross (see the module docs).
const MINUTE_NS: i64 = 60_000_000_000;

/// One stored event as the plan needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanRow {
    /// Its id.
    pub id: i64,
    /// Start in ns.
    pub start: i64,
    /// End in ns.
    pub end: i64,
    /// Its data text as stored (two events have the same data when these are equal).
    pub data: String,
}

/// Why an event goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// It was merged into the event before it.
    Merged,
    /// Another event with the same start and data is at least as long.
    Duplicate,
}

/// One change the plan makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// The event keeps its id and start, and now ends at `end` (later than before).
    Stretch {
        /// Its id.
        id: i64,
        /// Its start (unchanged).
        start: i64,
        /// Its new end.
        end: i64,
    },
    /// The event is deleted.
    Delete {
        /// Its id.
        id: i64,
        /// Why.
        why: Gone,
        /// A span it lies within (its block's), for what is told of the change.
        within: (i64, i64),
    },
}

/// Events of one start and one data (see the module docs).
struct Unit {
    start: i64,
    /// The kept event's id and end (the longest).
    keep: (i64, i64),
    data: String,
    /// The duplicates' ids.
    duplicates: Vec<i64>,
}

/// The units merged so far.
struct Block {
    first: Unit,
    /// The latest end of its events.
    end: i64,
    /// The units that joined it after the first.
    merged: Vec<Unit>,
    /// Whether units may join it (not when it starts on a whole minute that an earlier
    /// event reaches).
    may_merge: bool,
}

/// A plan in the making: rows go in in start order (`push`), changes come out as soon as
/// they are certain.
#[derive(Default)]
pub(crate) struct Planner {
    /// The rows of the start being collected.
    same_start: Vec<PlanRow>,
    /// The block a unit may still join.
    block: Option<Block>,
    /// The latest end of the rows of earlier starts.
    reach: Option<i64>,
}

impl Planner {
    /// Takes the next row in ascending start order (ties in any order), and adds to `out`
    /// the changes it made certain. Every change concerns a row of an earlier start than
    /// `row`'s, so a walk in start order never meets a row it changed again.
    pub(crate) fn push(&mut self, row: PlanRow, out: &mut Vec<Step>) {
        if self
            .same_start
            .first()
            .is_some_and(|r| r.start != row.start)
        {
            self.take_start(out);
        }
        self.same_start.push(row);
    }

    /// Ends the plan: the changes still held back.
    pub(crate) fn finish(&mut self, out: &mut Vec<Step>) {
        self.take_start(out);
        self.close_block(out);
    }

    /// Turns the rows of one start into a unit, or a wall.
    fn take_start(&mut self, out: &mut Vec<Step>) {
        let rows = std::mem::take(&mut self.same_start);
        let Some(first) = rows.first() else {
            return;
        };
        let wall = rows.iter().any(|r| r.data != first.data || r.end < r.start);
        let start = first.start;
        let reached = self.reach.is_some_and(|r| r >= start);
        let latest = rows.iter().map(|r| r.end).max();
        self.reach = self.reach.max(latest);
        if wall {
            self.close_block(out);
            return;
        }
        let data = first.data.clone();
        let keep = rows
            .iter()
            .map(|r| (r.id, r.end))
            .min_by_key(|&(id, end)| (std::cmp::Reverse(end), id))
            .unwrap_or((first.id, first.end));
        let duplicates = rows
            .iter()
            .map(|r| r.id)
            .filter(|&id| id != keep.0)
            .collect();
        let unit = Unit {
            start,
            keep,
            data,
            duplicates,
        };
        match self.block.as_mut() {
            Some(block) if block.takes(&unit) => {
                block.end = block.end.max(unit.keep.1);
                block.merged.push(unit);
            }
            _ => {
                self.close_block(out);
                self.block = Some(Block {
                    end: unit.keep.1,
                    may_merge: !reached || start.rem_euclid(MINUTE_NS) != 0,
                    first: unit,
                    merged: Vec::new(),
                });
            }
        }
    }

    /// Writes out the changes of the block, if any.
    fn close_block(&mut self, out: &mut Vec<Step>) {
        let Some(block) = self.block.take() else {
            return;
        };
        let (id, end) = block.first.keep;
        if block.end > end {
            out.push(Step::Stretch {
                id,
                start: block.first.start,
                end: block.end,
            });
        }
        let within = (block.first.start, block.end);
        let delete = |id, why| Step::Delete { id, why, within };
        for unit in std::iter::once(&block.first).chain(&block.merged) {
            out.extend(
                unit.duplicates
                    .iter()
                    .map(|&id| delete(id, Gone::Duplicate)),
            );
        }
        out.extend(block.merged.iter().map(|u| delete(u.keep.0, Gone::Merged)));
    }
}

impl Block {
    /// Whether `unit` joins the block: same data, a gap under `flood`'s, and the merged
    /// event within one minute.
    fn takes(&self, unit: &Unit) -> bool {
        let end = self.end.max(unit.keep.1);
        self.may_merge
            && unit.data == self.first.data
            && unit.start.saturating_sub(self.end) < FLOOD_GAP_NS
            && self.first.start.div_euclid(MINUTE_NS) == end.div_euclid(MINUTE_NS)
    }
}

/// The plan for `rows` (in ascending start order) at once.
#[cfg(test)]
pub(crate) fn plan(rows: impl IntoIterator<Item = PlanRow>) -> Vec<Step> {
    let mut planner = Planner::default();
    let mut out = Vec::new();
    for row in rows {
        planner.push(row, &mut out);
    }
    planner.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn row(id: i64, start: f64, end: f64, data: &str) -> PlanRow {
        PlanRow {
            id,
            start: (start * S as f64) as i64,
            end: (end * S as f64) as i64,
            data: data.to_string(),
        }
    }

    fn delete(id: i64, why: Gone) -> Step {
        Step::Delete {
            id,
            why,
            within: (0, 0),
        }
    }

    /// The steps with the spans left out (the tests name the ids).
    fn plan(rows: impl IntoIterator<Item = PlanRow>) -> Vec<Step> {
        let mut steps = super::plan(rows);
        for step in &mut steps {
            if let Step::Delete { within, .. } = step {
                *within = (0, 0);
            }
        }
        steps
    }

    #[test]
    fn close_neighbours_of_the_same_data_merge() {
        let steps = plan([
            row(1, 0.0, 1.0, "a"),
            row(2, 3.0, 4.0, "a"),
            row(3, 8.9, 10.0, "a"),
            row(4, 20.0, 21.0, "a"),
        ]);
        assert_eq!(
            steps,
            vec![
                Step::Stretch {
                    id: 1,
                    start: 0,
                    end: 10 * S
                },
                delete(2, Gone::Merged),
                delete(3, Gone::Merged),
            ]
        );
    }

    #[test]
    fn a_gap_of_exactly_five_seconds_or_other_data_stays() {
        assert!(plan([row(1, 0.0, 1.0, "a"), row(2, 6.0, 7.0, "a")]).is_empty());
        assert!(plan([row(1, 0.0, 1.0, "a"), row(2, 2.0, 3.0, "b")]).is_empty());
        assert!(plan([
            row(1, 0.0, 1.0, "a"),
            row(2, 2.0, 3.0, "b"),
            row(3, 3.0, 4.0, "a")
        ])
        .is_empty());
    }

    #[test]
    fn duplicates_keep_the_longest_and_a_shared_start_of_other_data_is_a_wall() {
        assert_eq!(
            plan([
                row(1, 0.0, 5.0, "afk"),
                row(2, 0.0, 9.0, "afk"),
                row(3, 0.0, 9.0, "afk")
            ]),
            vec![delete(1, Gone::Duplicate), delete(3, Gone::Duplicate)]
        );
        assert!(plan([
            row(1, 0.0, 1.0, "a"),
            row(2, 2.0, 3.0, "a"),
            row(3, 2.0, 2.0, "b")
        ])
        .is_empty());
    }

    #[test]
    fn no_block_crosses_a_whole_minute() {
        let steps = plan([
            row(1, 50.0, 58.0, "a"),
            row(2, 59.0, 59.5, "a"),
            row(3, 61.0, 62.0, "a"),
            row(4, 63.0, 64.0, "a"),
        ]);
        // 3 would stretch 1 past 60 s: it begins a block of its own, which 4 joins.
        assert_eq!(
            steps,
            vec![
                Step::Stretch {
                    id: 1,
                    start: 50 * S,
                    end: 59 * S + S / 2
                },
                delete(2, Gone::Merged),
                Step::Stretch {
                    id: 3,
                    start: 61 * S,
                    end: 64 * S
                },
                delete(4, Gone::Merged),
            ]
        );
        // One event across a minute is kept as it is, and nothing joins it.
        assert!(plan([row(1, 59.0, 61.0, "a"), row(2, 62.0, 63.0, "a")]).is_empty());
    }

    #[test]
    fn a_block_on_a_whole_minute_that_an_earlier_event_reaches_keeps_its_units() {
        let rows = |other_end: f64| {
            plan([
                row(1, 50.0, other_end, "b"),
                row(2, 60.0, 61.0, "a"),
                row(3, 62.0, 63.0, "a"),
            ])
        };
        assert!(rows(60.0).is_empty());
        assert_eq!(rows(59.0).len(), 2);
    }

    #[test]
    fn negative_durations_are_walls() {
        assert!(plan([
            row(1, 0.0, 1.0, "a"),
            row(2, 2.0, 1.5, "a"),
            row(3, 3.0, 4.0, "a")
        ])
        .is_empty());
    }
}
