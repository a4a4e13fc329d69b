//! Per-event transforms over a year of events, split over the threads of the rayon pool the
//! query runs on (the server's CPU pool).
//!
//! `categorize`, `split_url_events` and `merge_events_by_keys` each walk every event of a
//! long list on one thread while the other cores wait (a cold 365-day desktop query spent
//! ~60% of its evaluation in them). [`for_parts`] cuts the list into one contiguous part per
//! pool thread and runs the same work on each, with state of its own (a rule cache, a URL
//! cache) and the calling thread's deadline. Each part shares data objects only within
//! itself, which costs a little sharing and nothing else: data objects are immutable and
//! compared by value.

use rayon::prelude::*;

use crate::event::QEvent;

/// The number of threads parallel work is split over: those of the rayon pool the calling
/// thread belongs to, or 1 on any other thread. The caller chooses the pool by running the
/// query on it, and a query called elsewhere (an async worker, a test) never starts rayon's
/// global pool beside the server's one.
pub(crate) fn threads() -> usize {
    match rayon::current_thread_index() {
        Some(_) => rayon::current_num_threads(),
        None => 1,
    }
}

/// Runs `f` on a pool of four threads, as the server runs a query on its CPU pool, so that
/// tests reach the parallel paths on any machine.
#[cfg(test)]
pub(crate) fn on_test_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("a test pool")
    })
    .install(f)
}

/// Below this many events a list is worked on in one part, on the calling thread: the
/// hand-over to other threads would cost more than it saves.
pub(crate) const MIN_PARALLEL_EVENTS: usize = 20_000;

/// Runs `work` on contiguous parts of `events`, in parallel on the CPU pool, each part with
/// a state from `state`; returns the states in the order of the parts. If a part finds the
/// deadline passed, the calling thread sees it too ([`crate::budget::has_expired`]).
pub(crate) fn for_parts<S: Send>(
    events: &mut [QEvent],
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &mut [QEvent]) + Sync,
) -> Vec<S> {
    match part_len(events.len()) {
        Some(len) => in_parallel(events.par_chunks_mut(len), state, work),
        None => on_this_thread(events, state, work),
    }
}

/// [`for_parts`] for work that only reads the events (a list shared with a variable).
pub(crate) fn for_read_parts<S: Send>(
    events: &[QEvent],
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &[QEvent]) + Sync,
) -> Vec<S> {
    match part_len(events.len()) {
        Some(len) => in_parallel(events.par_chunks(len), state, work),
        None => on_this_thread(events, state, work),
    }
}

/// Runs `work(state, share, shares)` once for each of `shares` shares of a list of `n`
/// events, in parallel on the CPU pool: one share per pool thread, or one on the calling
/// thread for a short list. For work divided by something other than position, such as
/// a group's hash, where every share reads the whole list and keeps its own items.
pub(crate) fn for_shares<S: Send>(
    n: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize, usize) + Sync,
) -> Vec<S> {
    match part_len(n) {
        Some(_) => {
            let shares = threads();
            in_parallel((0..shares).into_par_iter(), state, |s, share| {
                work(s, share, shares)
            })
        }
        None => on_this_thread(0, state, |s, share| work(s, share, 1)),
    }
}

/// The length of the parts a list of `n` events is cut into, or `None` for one part on the
/// calling thread.
fn part_len(n: usize) -> Option<usize> {
    let threads = threads();
    (threads > 1 && n >= MIN_PARALLEL_EVENTS).then(|| n.div_ceil(threads))
}

/// Runs `work` on the whole list as one part, on the calling thread.
fn on_this_thread<P, S>(events: P, state: impl Fn() -> S, work: impl Fn(&mut S, P)) -> Vec<S> {
    let mut s = state();
    work(&mut s, events);
    vec![s]
}

/// Runs `work` on every part of `parts` on the CPU pool with the caller's deadline.
fn in_parallel<P: IndexedParallelIterator, S: Send>(
    parts: P,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, P::Item) + Sync,
) -> Vec<S> {
    let deadline = crate::budget::deadline();
    let done: Vec<(S, bool)> = parts
        .map(|part| {
            let _budget = crate::budget::enter(deadline);
            let mut s = state();
            work(&mut s, part);
            (s, crate::budget::has_expired())
        })
        .collect();
    if done.iter().any(|(_, expired)| *expired) {
        crate::budget::mark_expired();
    }
    done.into_iter().map(|(s, _)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Val;
    use crate::transforms::categorize::{self, Rule, RuleSet};
    use crate::transforms::merge::merge_events_by_keys;
    use crate::transforms::split_url::split_url_events;
    use crate::transforms::testutil::ev;

    /// A list long enough to be worked on in parts, with data shared across the parts (as
    /// interned data is) and some unique to one event.
    fn long_list() -> Vec<QEvent> {
        let shared: Vec<QEvent> = (0..40)
            .map(|i| {
                let url = format!("https://www.site{}.example/p/{}?q={i}", i % 7, i % 5);
                let title = format!("title {i}");
                ev(
                    0.0,
                    1.0,
                    &[
                        ("app", ["code", "firefox", "mail"][i % 3]),
                        ("title", &title),
                        ("url", &url),
                    ],
                )
            })
            .collect();
        (0..MIN_PARALLEL_EVENTS * 2 + 13)
            .map(|i| {
                let mut e = if i % 97 == 0 {
                    let title = format!("unique {i}");
                    ev(
                        0.0,
                        1.0,
                        &[("app", "code"), ("title", &title), ("url", "not a url")],
                    )
                } else {
                    shared[i % shared.len()].clone()
                };
                e.start = i as i64 * crate::transforms::testutil::S;
                e.duration = (i % 11) as i64 + 1;
                e
            })
            .collect()
    }

    /// The same transform on parts too short to be split, concatenated.
    fn in_small_pieces(events: Vec<QEvent>, f: impl Fn(Vec<QEvent>) -> Vec<QEvent>) -> Vec<QEvent> {
        events.chunks(1000).flat_map(|c| f(c.to_vec())).collect()
    }

    fn json(events: &[QEvent]) -> Vec<serde_json::Value> {
        events.iter().map(|e| e.to_json()).collect()
    }

    #[test]
    fn long_lists_give_what_one_thread_gives() {
        on_test_pool(long_lists_give_what_one_thread_gives_on_a_pool);
    }

    fn long_lists_give_what_one_thread_gives_on_a_pool() {
        assert_eq!(threads(), 4);
        let rules = RuleSet::new(vec![
            Rule {
                regex: Some(fancy_regex::Regex::new("code|title 1").unwrap()),
                select_keys: None,
            },
            Rule {
                regex: Some(fancy_regex::Regex::new("mail").unwrap()),
                select_keys: Some(vec!["app".into()]),
            },
        ]);
        let cats = vec![
            vec!["Work".to_string()],
            vec!["Comms".to_string(), "Mail".to_string()],
        ];
        let whole = categorize::categorize(long_list(), &cats, &rules);
        let pieces = in_small_pieces(long_list(), |c| categorize::categorize(c, &cats, &rules));
        assert_eq!(json(&whole), json(&pieces));
        assert!(whole
            .iter()
            .any(|e| e.data["$category"].to_json() == serde_json::json!(["Comms", "Mail"])));

        let whole = split_url_events(long_list());
        let pieces = in_small_pieces(long_list(), split_url_events);
        assert_eq!(json(&whole), json(&pieces));
        assert!(matches!(whole[1].data.get("$domain"), Some(Val::Str(_))));
        // Splitting again changes nothing, and leaves the objects as they are.
        let again = split_url_events(whole.clone());
        assert_eq!(json(&again), json(&whole));
        assert!(again
            .iter()
            .zip(&whole)
            .all(|(a, w)| crate::data::Obj::ptr_eq(&a.data, &w.data)));

        for keys in [
            vec!["app".to_string()],
            vec!["app".into(), "title".into()],
            vec!["url".into()],
        ] {
            let whole = merge_events_by_keys(&long_list(), &keys);
            // First appearances, their data and timestamps, and the summed durations.
            let expected: std::collections::BTreeMap<String, (i64, i64)> = {
                let mut m = std::collections::BTreeMap::new();
                for e in long_list() {
                    let key = keys
                        .iter()
                        .map(|k| e.data[k.as_str()].to_json().to_string())
                        .collect::<Vec<_>>()
                        .join("|");
                    let entry = m.entry(key).or_insert((e.start, 0));
                    entry.1 += e.duration;
                }
                m
            };
            assert_eq!(whole.len(), expected.len());
            for e in &whole {
                let key = keys
                    .iter()
                    .map(|k| e.data[k.as_str()].to_json().to_string())
                    .collect::<Vec<_>>()
                    .join("|");
                assert_eq!(expected[&key], (e.start, e.duration), "{key}");
            }
            assert!(
                whole.windows(2).all(|w| w[0].start < w[1].start),
                "in order of first appearance"
            );
        }
    }

    #[test]
    fn every_event_is_worked_on_once_in_order_of_parts() {
        on_test_pool(every_event_is_worked_on_once_on_a_pool);
        // Off a pool: one part, on this thread.
        assert_eq!(threads(), 1);
        every_event_is_worked_on_once_on_a_pool();
    }

    fn every_event_is_worked_on_once_on_a_pool() {
        for n in [0, 5, MIN_PARALLEL_EVENTS + 7] {
            let mut events: Vec<QEvent> = (0..n).map(|i| ev(i as f64, 1.0, &[])).collect();
            let states = for_parts(
                &mut events,
                || 0usize,
                |count, part| {
                    for e in part.iter_mut() {
                        e.duration += 1;
                        *count += 1;
                    }
                },
            );
            assert_eq!(states.iter().sum::<usize>(), n);
            assert!(events
                .iter()
                .all(|e| e.duration == crate::transforms::testutil::S + 1));
        }
    }
}
