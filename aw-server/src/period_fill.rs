//! Days kept ready: the period sums the dashboard asks for (`POST /api/0/query/sum`: a
//! program, the keys its lists are added up by, and the days) are remembered as *recipes*
//! in the database (the key `aw-server.period-sums`, beside the settings), and a thread at
//! the lowest priority evaluates every past day of them that the query cache does not hold.
//! So after whatever emptied the cache — a start after a kill (nothing was kept at a stop),
//! an import, a restore, a salvage, a rewrite of history, another build — the days are
//! computed again in the background, and the next look at a year is answered from them.
//!
//! It waits until no sum was asked for in the last [`QUIET`], so it never races a look; it
//! skips the day that holds now (the watchers change it every few seconds; a look computes
//! it in milliseconds); it evaluates one day at a time on its own thread (not the CPU pool,
//! which it leaves to the requests), checking between days whether the server stops. It
//! looks again when the cache has dropped a summed result (`ResultCache::sums_dropped`,
//! read every second) or a new recipe arrives. Bounded: [`MAX_RECIPES`] recipes (the least
//! recently asked go) of at most [`MAX_PERIODS`] days each (the oldest go).
//!
//! It also keeps the cache's results beside the database while the server runs
//! (`Datastore::save_derived_state`), so a start after a crash reads them back but for
//! the days written since: after a pass that evaluated days, after a look that summed many
//! new days ([`KEEP_NEW`]), and otherwise at most every [`KEEP_EVERY`] when new days were
//! summed; never while a sum is being evaluated.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use aw_models::TimeInterval;
use aw_query::{MergeKeys, ResultCache, SumOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::background::Background;

/// Where the recipes are kept in the database's key-value table.
const RECIPES_KEY: &str = "aw-server.period-sums";

/// Recipes kept.
const MAX_RECIPES: usize = 8;

/// Days kept per recipe: five years.
const MAX_PERIODS: usize = 1830;

/// How long no sum must have been asked for before the thread works.
const QUIET: Duration = Duration::from_secs(2);

/// How often the thread looks whether the cache dropped summed results (a read of a counter).
const POLL: Duration = Duration::from_secs(1);

/// The least time between two keeps of the results while nothing was filled (a look at a
/// period sums today again at each look; the file can take 16 MiB).
const KEEP_EVERY: Duration = Duration::from_secs(300);

/// New summed results a look stored that are kept without waiting for [`KEEP_EVERY`]
/// (a month's days; a look at today stores one or two).
const KEEP_NEW: u64 = 28;

/// What was kept beside the database last ([`PeriodFill::keep`]).
#[derive(Debug, Default)]
struct Kept {
    /// `ResultCache::sums_stored` then.
    sums: u64,
    /// [`PeriodFill::filled`] then.
    filled: u64,
    /// When.
    at: Option<Instant>,
}

/// One program whose periods are kept ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Recipe {
    /// The program's lines joined.
    code: String,
    /// The keys as the request gave them (`aw_query::MergeKeys`' JSON form).
    keys: Option<Value>,
    /// The periods asked for, as `[start, end]` in ns.
    periods: BTreeSet<(i64, i64)>,
}

/// What `GET /api/0/query/cache` shows of it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct FillStats {
    /// Programs whose days are kept ready.
    pub recipes: usize,
    /// Days of them remembered.
    pub periods: usize,
    /// Days the thread went through since the start (evaluated, or found evaluated by a
    /// look meanwhile).
    pub filled: u64,
    /// Whether the thread is evaluating days now.
    pub filling: bool,
    /// How often the results were kept beside the database since the start.
    pub kept: u64,
}

/// The recipes and the thread that keeps their days ready (see the module docs).
pub(crate) struct PeriodFill {
    /// Most recently asked last.
    recipes: Mutex<Vec<Recipe>>,
    /// When a sum was last asked for.
    last_asked: Mutex<Option<Instant>>,
    /// Sums in evaluation now ([`PeriodFill::evaluating`]).
    evaluating: std::sync::atomic::AtomicUsize,
    filled: AtomicU64,
    filling: AtomicBool,
    kept: AtomicU64,
    stop: AtomicBool,
    wake: SyncSender<()>,
    woken: Mutex<Option<Receiver<()>>>,
    thread: Background,
}

impl PeriodFill {
    /// Nothing remembered yet; [`PeriodFill::start`] reads the recipes.
    pub(crate) fn new() -> PeriodFill {
        let (wake, woken) = sync_channel(1);
        PeriodFill {
            recipes: Mutex::new(Vec::new()),
            last_asked: Mutex::new(None),
            evaluating: std::sync::atomic::AtomicUsize::new(0),
            filled: AtomicU64::new(0),
            filling: AtomicBool::new(false),
            kept: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            wake,
            woken: Mutex::new(Some(woken)),
            thread: Background::default(),
        }
    }

    /// Remembers a sum asked for: `code` with `keys` over `periods`. When that changed the
    /// recipes, returns what [`PeriodFill::save`] is to keep, which the caller saves before
    /// it answers (so a kill right after the answer keeps it: a thread at the idle priority
    /// may not run for a long time on a busy machine).
    pub(crate) fn asked(
        &self,
        code: &str,
        keys: Option<&Value>,
        periods: &[TimeInterval],
    ) -> Option<String> {
        *self
            .last_asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        let bounds = periods.iter().map(|p| {
            (
                aw_models::timestamp::to_ns_saturating(p.start()),
                aw_models::timestamp::to_ns_saturating(p.end()),
            )
        });
        let mut recipes = self.recipes.lock().unwrap_or_else(PoisonError::into_inner);
        let found = recipes
            .iter()
            .position(|r| r.code == code && r.keys.as_ref() == keys);
        let mut recipe = match found {
            Some(i) => recipes.remove(i),
            None => Recipe {
                code: code.to_string(),
                keys: keys.cloned(),
                periods: BTreeSet::new(),
            },
        };
        let before = recipe.periods.len();
        recipe.periods.extend(bounds);
        while recipe.periods.len() > MAX_PERIODS {
            recipe.periods.pop_first();
        }
        let changed = found.is_none() || recipe.periods.len() != before;
        recipes.push(recipe);
        if recipes.len() > MAX_RECIPES {
            recipes.remove(0);
        }
        if !changed {
            return None;
        }
        let text = serde_json::to_string(&*recipes).unwrap_or_default();
        drop(recipes);
        let _ = self.wake.try_send(());
        Some(text)
    }

    /// Keeps `recipes` (from [`PeriodFill::asked`]) in the database, where the next start
    /// reads them.
    pub(crate) async fn save(datastore: &aw_datastore::Datastore, recipes: &str) {
        if let Err(e) = datastore.set_key_value(RECIPES_KEY, recipes).await {
            log::warn!("Cannot keep the period sums to keep ready: {e}");
        }
    }

    /// What `GET /api/0/query/cache` shows.
    pub(crate) fn stats(&self) -> FillStats {
        let recipes = self.recipes.lock().unwrap_or_else(PoisonError::into_inner);
        FillStats {
            recipes: recipes.len(),
            periods: recipes.iter().map(|r| r.periods.len()).sum(),
            filled: self.filled.load(Ordering::Relaxed),
            filling: self.filling.load(Ordering::Relaxed),
            kept: self.kept.load(Ordering::Relaxed),
        }
    }

    /// Reads the recipes kept in the database (here, before the server answers anyone, so
    /// a sum asked for at once adds to them instead of replacing them), then starts the
    /// thread that keeps their days ready in `cache`.
    pub(crate) fn start(
        self: &Arc<Self>,
        datastore: aw_datastore::Datastore,
        cache: Arc<ResultCache>,
    ) {
        let Some(woken) = self
            .woken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        self.load(&datastore);
        let this = Arc::clone(self);
        self.thread.start("aw-period-fill", move || {
            aw_platform::sched::idle_priority();
            this.run(&datastore, &cache, &woken);
        });
    }

    /// Stops the thread between two days and waits for it.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.try_send(());
        self.thread.join();
    }

    /// Reads the recipes the database keeps (unreadable ones are dropped).
    fn load(&self, datastore: &aw_datastore::Datastore) {
        let Ok(text) = datastore.get_key_value(RECIPES_KEY).wait() else {
            return;
        };
        let mut kept: Vec<Recipe> = serde_json::from_str(&text).unwrap_or_default();
        kept.truncate(MAX_RECIPES);
        *self.recipes.lock().unwrap_or_else(PoisonError::into_inner) = kept;
    }

    fn run(&self, datastore: &aw_datastore::Datastore, cache: &ResultCache, woken: &Receiver<()>) {
        let source = crate::query_source::DatastoreSource(datastore.clone());
        // The results the last run kept are read back first: they need no evaluation.
        while cache.stats().restoring && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        // The cache's drops when the days were last all there (`None`: not since a wake-up).
        let mut complete_at: Option<u64> = None;
        let mut kept = Kept {
            sums: cache.sums_stored(),
            ..Kept::default()
        };
        while !self.stop.load(Ordering::Relaxed) {
            let quiet_for = self
                .last_asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map_or(QUIET, |t| t.elapsed());
            let wait = if quiet_for < QUIET {
                QUIET - quiet_for
            } else if complete_at != Some(cache.sums_dropped()) {
                let dropped = cache.sums_dropped();
                if self.fill(cache, &source) {
                    complete_at = Some(dropped);
                    self.keep(datastore, cache, &mut kept);
                }
                continue;
            } else {
                self.keep(datastore, cache, &mut kept);
                POLL
            };
            match woken.recv_timeout(wait) {
                Ok(()) => complete_at = None,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Evaluates each missing past day of every recipe, most recently asked first, newest
    /// day first; true when it got through all of them (not stopped, no sum asked for
    /// meanwhile).
    fn fill(&self, cache: &ResultCache, source: &crate::query_source::DatastoreSource) -> bool {
        let recipes = self
            .recipes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let now = aw_models::timestamp::to_ns_saturating(&chrono::Utc::now());
        for recipe in recipes.iter().rev() {
            let keys = match recipe.keys.as_ref().map(MergeKeys::from_json).transpose() {
                Ok(keys) => keys,
                Err(_) => continue,
            };
            let options = SumOptions {
                keys: keys.clone(),
                ..SumOptions::default()
            };
            let past: Vec<TimeInterval> = recipe
                .periods
                .iter()
                .rev()
                .filter(|&&(_, end)| end <= now)
                .map(|&(start, end)| {
                    TimeInterval::new(
                        aw_models::timestamp::from_ns(start),
                        aw_models::timestamp::from_ns(end),
                    )
                })
                .collect();
            for period in cache.sums_missing(&recipe.code, keys.as_ref(), &past) {
                if self.stop.load(Ordering::Relaxed) || self.asked_recently() {
                    self.filling.store(false, Ordering::Relaxed);
                    return false;
                }
                self.filling.store(true, Ordering::Relaxed);
                // A day a look evaluated meanwhile comes from the cache.
                let done = aw_query::query_sum(
                    &recipe.code,
                    &[period],
                    source,
                    None,
                    Some(cache),
                    &options,
                );
                match done {
                    Ok(_) => {
                        self.filled.fetch_add(1, Ordering::Relaxed);
                    }
                    // A program that fails (its buckets were deleted) fails for every day.
                    Err(e) => {
                        log::debug!("A kept period sum no longer evaluates: {e}");
                        break;
                    }
                }
            }
        }
        self.filling.store(false, Ordering::Relaxed);
        true
    }

    /// Keeps the cache's results beside the database when there are new summed ones and
    /// days were filled since the last keep, or a look summed [`KEEP_NEW`] new ones, or
    /// [`KEEP_EVERY`] has passed.
    fn keep(&self, datastore: &aw_datastore::Datastore, cache: &ResultCache, kept: &mut Kept) {
        let (sums, filled) = (cache.sums_stored(), self.filled.load(Ordering::Relaxed));
        let due = filled != kept.filled
            || sums.saturating_sub(kept.sums) >= KEEP_NEW
            || kept.at.is_none_or(|t| t.elapsed() >= KEEP_EVERY);
        if sums == kept.sums || !due || self.asked_recently() {
            return;
        }
        let started = Instant::now();
        match datastore.save_derived_state() {
            Ok(saved) => {
                if saved {
                    self.kept.fetch_add(1, Ordering::Relaxed);
                }
                log::info!(
                    "Query results kept beside the database in {} ms",
                    started.elapsed().as_millis()
                );
            }
            Err(e) => log::warn!("Cannot keep the query results beside the database: {e}"),
        }
        *kept = Kept {
            sums,
            filled,
            at: Some(Instant::now()),
        };
    }

    /// Whether a sum is being evaluated, or was asked for within [`QUIET`].
    fn asked_recently(&self) -> bool {
        self.evaluating.load(Ordering::Acquire) > 0
            || self
                .last_asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some_and(|t| t.elapsed() < QUIET)
    }

    /// Marks a sum in evaluation until the guard is dropped: the thread neither evaluates
    /// days nor keeps the cache meanwhile (it would race the look, and keep its days half
    /// computed).
    pub(crate) fn evaluating(&self) -> Evaluating<'_> {
        self.evaluating.fetch_add(1, Ordering::AcqRel);
        Evaluating(self)
    }
}

/// A sum in evaluation ([`PeriodFill::evaluating`]).
pub(crate) struct Evaluating<'a>(&'a PeriodFill);

impl Drop for Evaluating<'_> {
    fn drop(&mut self) {
        *self
            .0
            .last_asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        self.0.evaluating.fetch_sub(1, Ordering::AcqRel);
    }
}
