//! Results added up over periods ([`crate::query_sum`]): a week, month or year answered as
//! the sum of its days, each day evaluated once and kept (`cache/`), so a period's cost
//! grows with its number of days and a write reaches one day's result only.
//!
//! A day's result is kept in the form it is added up in ([`Summed`]), not as JSON text: a
//! day of the dashboard's complete lists holds about 900 window titles, and a year of them
//! as JSON is some 60 MB, which would fill the cache and take longer to read than to
//! compute. Event data is kept as canonical JSON text, shared between the days that have
//! it (the cache interns it), and durations as whole nanoseconds, so adding up is exact.
//!
//! **How results add up**, value by value, over the periods in order:
//! * numbers are added;
//! * dicts are added key by key (a key missing from a period counts as absent there);
//! * lists of events (every element an event; an empty list is one too) are merged by
//!   their data, as `merge_events_by_keys` would: one event per distinct data, with the
//!   earliest start and the sum of the durations, longest first (ties in order of data
//!   text), cut to the request's limit; the events have no id. A list merged by keys in
//!   the program (whose events keep the rest of their first event's data, which differs
//!   from day to day) is added up by the same keys when the request names them
//!   ([`MergeKeys`]): its events' data is then those keys only;
//! * anything else (strings, booleans, null, other lists) is kept when every period has
//!   the same value, and is null otherwise.
//!
//! For a program whose lists are merged by keys and whose numbers are sums of durations
//! (the dashboard's), the sum over the days of a period is the program's result over the
//! whole period, except where `flood` would have filled a gap of under 5 s that straddles
//! a day's boundary (each day is evaluated on its own, as the day view shows it).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::fxhash::FxHashMap;

/// One period's result in the form results are added up in (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Summed {
    /// A number.
    Number(f64),
    /// A dict, keys sorted.
    Object(Vec<(Arc<str>, Summed)>),
    /// A list of events, one per distinct data.
    Events(Vec<SummedEvent>),
    /// Any other value, kept as it is.
    Other(Value),
}

/// One event of a [`Summed::Events`] list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SummedEvent {
    /// The data as canonical JSON text (keys sorted), shared between days.
    pub data: Arc<str>,
    /// The earliest start, ns since the epoch.
    pub start: i64,
    /// The summed duration, ns.
    pub duration: i64,
    /// The number the cache's [`Texts`] gave `data` ([`NO_NUMBER`]: none), by which adding
    /// up finds equal texts without hashing them.
    pub number: u32,
    /// The Fx hash of `data`, computed once.
    pub hash: u64,
}

impl SummedEvent {
    /// An event whose text is not numbered (yet).
    pub(crate) fn new(data: Arc<str>, start: i64, duration: i64) -> SummedEvent {
        SummedEvent {
            hash: crate::fxhash::hash_str(&data),
            data,
            start,
            duration,
            number: NO_NUMBER,
        }
    }
}

/// The [`SummedEvent::number`] of a text not held by [`Texts`].
pub(crate) const NO_NUMBER: u32 = u32::MAX;

/// Bytes one event of a list is charged in the cache, besides its data text.
const EVENT_BYTES: usize = std::mem::size_of::<SummedEvent>();

/// Which keys the event lists of a result are merged by when added up, by where they are
/// in it: `{"window": {"app_events": ["app"]}}` merges the list at `window.app_events` by
/// `app` (and keeps only `app` of its events' data). Lists it names no keys for are merged
/// by all of their data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeKeys {
    /// The keys of the lists below, by field name.
    Fields(std::collections::BTreeMap<String, MergeKeys>),
    /// The keys the list here is merged by.
    Keys(Vec<String>),
}

impl MergeKeys {
    /// From its JSON form: nested objects whose leaves are lists of key names.
    pub fn from_json(value: &Value) -> Result<MergeKeys, String> {
        Self::parse(value, 0)
    }

    fn parse(value: &Value, depth: usize) -> Result<MergeKeys, String> {
        if depth > crate::MAX_VALUE_DEPTH {
            return Err("keys are nested too deeply".to_string());
        }
        match value {
            Value::Object(fields) => fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), Self::parse(v, depth + 1)?)))
                .collect::<Result<_, String>>()
                .map(MergeKeys::Fields),
            Value::Array(keys) => keys
                .iter()
                .map(|k| {
                    k.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("a key must be a string, not {k}"))
                })
                .collect::<Result<_, String>>()
                .map(MergeKeys::Keys),
            other => Err(format!(
                "keys are objects whose leaves are lists of key names, not {other}"
            )),
        }
    }

    /// The keys of the field `name` below this one.
    fn field(&self, name: &str) -> Option<&MergeKeys> {
        match self {
            MergeKeys::Fields(fields) => fields.get(name),
            MergeKeys::Keys(_) => None,
        }
    }
}

/// Whole nanoseconds of a duration in float seconds (as the engine writes them from ns:
/// the round trip is exact for any duration under a century).
fn seconds_to_ns(seconds: f64) -> i64 {
    (seconds * 1e9).round() as i64
}

/// The event `value` as `(data, start, duration)`, if it is one (as the engine writes them:
/// `data` an object, `duration` a number, `timestamp` a time; `id` may be there).
fn as_event(value: &Value) -> Option<(&Map<String, Value>, i64, i64)> {
    let obj = value.as_object()?;
    if !obj
        .keys()
        .all(|k| matches!(k.as_str(), "data" | "duration" | "id" | "timestamp"))
    {
        return None;
    }
    let data = obj.get("data")?.as_object()?;
    let duration = seconds_to_ns(obj.get("duration")?.as_f64()?);
    let start = aw_models::timestamp::parse_rfc3339(obj.get("timestamp")?.as_str()?).ok()?;
    Some((
        data,
        aw_models::timestamp::to_ns_saturating(&start),
        duration,
    ))
}

impl Summed {
    /// One period's result (`RETURN` as JSON) in summed form, its event lists merged by
    /// `keys` (see [`MergeKeys`]; by all of their data where it names none).
    pub(crate) fn from_json(value: Value, keys: Option<&MergeKeys>) -> Summed {
        match value {
            Value::Number(n) => Summed::Number(n.as_f64().unwrap_or(0.0)),
            Value::Object(map) => Summed::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let below = keys.and_then(|keys| keys.field(&k));
                        (Arc::from(k), Summed::from_json(v, below))
                    })
                    .collect(),
            ),
            Value::Array(list) => {
                let events: Option<Vec<_>> = list.iter().map(as_event).collect();
                let Some(events) = events else {
                    return Summed::Other(Value::Array(list));
                };
                let mut each = Vec::with_capacity(events.len());
                for (data, start, duration) in events {
                    // Data objects serialise with sorted keys: the canonical text.
                    let text = match keys {
                        Some(MergeKeys::Keys(names)) => {
                            let kept: Map<String, Value> = names
                                .iter()
                                .filter_map(|n| Some((n.clone(), data.get(n)?.clone())))
                                .collect();
                            // As `merge_events_by_keys`: an event lacking a key is left out.
                            if kept.len() < names.len() {
                                continue;
                            }
                            Value::Object(kept).to_string()
                        }
                        _ => Value::Object(data.clone()).to_string(),
                    };
                    each.push(SummedEvent::new(Arc::from(text), start, duration));
                }
                Summed::Events(add_lists(&[&each], None))
            }
            other => Summed::Other(other),
        }
    }

    /// Every event it holds, to share their texts ([`Texts::intern`]).
    fn events_mut(&mut self, each: &mut impl FnMut(&mut SummedEvent)) {
        match self {
            Summed::Object(fields) => fields.iter_mut().for_each(|(_, v)| v.events_mut(each)),
            Summed::Events(events) => events.iter_mut().for_each(each),
            Summed::Number(_) | Summed::Other(_) => {}
        }
    }

    /// Every data text it holds.
    pub(crate) fn texts(&self, each: &mut impl FnMut(&Arc<str>)) {
        match self {
            Summed::Object(fields) => fields.iter().for_each(|(_, v)| v.texts(each)),
            Summed::Events(events) => events.iter().for_each(|e| each(&e.data)),
            Summed::Number(_) | Summed::Other(_) => {}
        }
    }

    /// Bytes it is charged in the cache, without its data texts (the cache charges each
    /// distinct text once).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Summed::Number(_) => 16,
            Summed::Object(fields) => fields
                .iter()
                .map(|(k, v)| 16 + k.len() + v.bytes())
                .sum::<usize>(),
            Summed::Events(events) => 24 + events.len() * EVENT_BYTES,
            Summed::Other(v) => 16 + v.to_string().len(),
        }
    }

    /// The results of several periods added up (see the module docs), every list of events
    /// cut to `limit`.
    pub(crate) fn add_up(parts: &[&Summed], limit: Option<usize>) -> Value {
        let Some(first) = parts.first() else {
            return Value::Null;
        };
        match first {
            Summed::Number(_) if parts.iter().all(|p| matches!(p, Summed::Number(_))) => {
                let total: f64 = parts
                    .iter()
                    .map(|p| match p {
                        Summed::Number(n) => *n,
                        _ => 0.0,
                    })
                    .sum();
                serde_json::Number::from_f64(total).map_or(Value::Null, Value::Number)
            }
            Summed::Object(_) if parts.iter().all(|p| matches!(p, Summed::Object(_))) => {
                let mut fields: std::collections::BTreeMap<&str, Vec<&Summed>> =
                    std::collections::BTreeMap::new();
                for part in parts {
                    if let Summed::Object(list) = part {
                        for (k, v) in list {
                            fields.entry(k).or_default().push(v);
                        }
                    }
                }
                Value::Object(
                    fields
                        .into_iter()
                        .map(|(k, vs)| (k.to_string(), Summed::add_up(&vs, limit)))
                        .collect(),
                )
            }
            Summed::Events(_) if parts.iter().all(|p| matches!(p, Summed::Events(_))) => {
                let lists: Vec<&[SummedEvent]> = parts
                    .iter()
                    .filter_map(|p| match p {
                        Summed::Events(events) => Some(events.as_slice()),
                        _ => None,
                    })
                    .collect();
                Value::Array(add_lists(&lists, limit).iter().map(event_json).collect())
            }
            _ => {
                let json = |p: &Summed| match p {
                    Summed::Other(v) => Some(v.clone()),
                    _ => None,
                };
                let value = json(first);
                if value.is_some() && parts.iter().all(|p| json(p) == value) {
                    value.unwrap_or(Value::Null)
                } else {
                    Value::Null
                }
            }
        }
    }
}

impl Summed {
    /// The values at `paths` (each a list of dict keys from the top), as one JSON object
    /// of the same nesting; a path that leads nowhere is left out.
    pub(crate) fn picked(&self, paths: &[Vec<String>]) -> Value {
        let mut out = Map::new();
        for path in paths {
            let mut at = Some(self);
            for name in path {
                at = match at {
                    Some(Summed::Object(fields)) => {
                        fields.iter().find(|(k, _)| **k == **name).map(|(_, v)| v)
                    }
                    _ => None,
                };
            }
            if let Some(value) = at {
                insert_at(&mut out, path, Summed::add_up(&[value], None));
            }
        }
        Value::Object(out)
    }
}

/// Puts `value` at `path` below `out`, making the dicts on the way.
fn insert_at(out: &mut Map<String, Value>, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            out.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let child = out
                .entry(first.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(child) = child {
                insert_at(child, rest, value);
            }
        }
    }
}

/// An event of a summed list in the engine's JSON form, without an id.
fn event_json(e: &SummedEvent) -> Value {
    let mut ts = String::with_capacity(32);
    aw_models::timestamp::write_ns(&mut ts, e.start);
    let data = serde_json::from_str::<Value>(&e.data).unwrap_or(Value::Null);
    let mut obj = Map::new();
    obj.insert("data".to_string(), data);
    obj.insert("duration".to_string(), Value::from(e.duration as f64 / 1e9));
    obj.insert("id".to_string(), Value::Null);
    obj.insert("timestamp".to_string(), Value::String(ts));
    Value::Object(obj)
}

/// The events of `lists` added up by data text, longest first (ties by data text), the
/// first `limit`. The texts of kept results are numbered by the cache (`Texts`), so each is
/// found by its number in a table (checked to be the same text: a number freed while a
/// request still holds its old result may have been given to another text), and its
/// characters are hashed once per number, not once a day.
fn add_lists(lists: &[&[SummedEvent]], limit: Option<usize>) -> Vec<SummedEvent> {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    let numbers = lists
        .iter()
        .flat_map(|l| l.iter())
        .map(|e| e.number)
        .filter(|&n| n != NO_NUMBER)
        .max()
        .map_or(0, |n| n as usize + 1);
    // Per number: the address of its text and its slot in `sums`.
    let mut by_number: Vec<(usize, usize)> = vec![(0, usize::MAX); numbers];
    // Per text hash, the slot of its first text; texts whose hash another text has, by text.
    let mut by_hash: FxHashMap<u64, usize> = FxHashMap::default();
    by_hash.reserve(numbers.max(total.min(1 << 16)));
    let mut collided: FxHashMap<&str, usize> = FxHashMap::default();
    let mut sums: Vec<SummedEvent> = Vec::with_capacity(numbers.max(total.min(1 << 16)));
    for e in lists.iter().flat_map(|l| l.iter()) {
        let address = e.data.as_ptr() as usize;
        let known = by_number
            .get(e.number as usize)
            .filter(|&&(at, slot)| at == address && slot != usize::MAX)
            .map(|&(_, slot)| slot);
        let slot = match known {
            Some(slot) => slot,
            None => {
                let slot = match by_hash.get(&e.hash).copied() {
                    Some(slot) if sums.get(slot).is_some_and(|s| s.data == e.data) => slot,
                    first => {
                        let hit = first.and_then(|_| collided.get(&*e.data).copied());
                        match hit {
                            Some(slot) => slot,
                            None => {
                                sums.push(SummedEvent {
                                    start: i64::MAX,
                                    duration: 0,
                                    ..e.clone()
                                });
                                let slot = sums.len() - 1;
                                if first.is_some() {
                                    collided.insert(&e.data, slot);
                                } else {
                                    by_hash.insert(e.hash, slot);
                                }
                                slot
                            }
                        }
                    }
                };
                if let Some(entry) = by_number.get_mut(e.number as usize) {
                    if entry.1 == usize::MAX {
                        *entry = (address, slot);
                    }
                }
                slot
            }
        };
        if let Some(sum) = sums.get_mut(slot) {
            sum.start = sum.start.min(e.start);
            sum.duration = sum.duration.saturating_add(e.duration);
        }
    }
    let order = |a: &SummedEvent, b: &SummedEvent| {
        b.duration
            .cmp(&a.duration)
            .then_with(|| a.data.cmp(&b.data))
    };
    if let Some(n) = limit.filter(|&n| n < sums.len()) {
        sums.select_nth_unstable_by(n, order);
        sums.truncate(n);
    }
    sums.sort_unstable_by(order);
    sums
}

/// Each distinct data text once, shared by every result that holds it (the cache's), and
/// numbered from 0 (numbers of forgotten texts are given again), so that adding up can
/// find equal texts in a table instead of hashing them.
#[derive(Debug, Default)]
pub(crate) struct Texts {
    set: FxHashMap<Arc<str>, u32>,
    /// Numbers given before and free again.
    free: Vec<u32>,
    /// Bytes of the texts held.
    pub bytes: usize,
}

impl Texts {
    /// Makes `summed` share the texts held here (adding those that are new), and numbers
    /// its events by them.
    pub(crate) fn intern(&mut self, summed: &mut Summed) {
        summed.events_mut(&mut |e| match self.set.get_key_value(&*e.data) {
            Some((held, &number)) => {
                e.data = held.clone();
                e.number = number;
            }
            None => {
                let number = self
                    .free
                    .pop()
                    .unwrap_or_else(|| u32::try_from(self.set.len()).unwrap_or(NO_NUMBER));
                self.bytes += e.data.len() + 32;
                self.set.insert(e.data.clone(), number);
                e.number = number;
            }
        });
    }

    /// Forgets the texts only `summed` (about to be dropped) still holds.
    pub(crate) fn release(&mut self, summed: &Summed) {
        summed.texts(&mut |text| {
            // Held by the set and by `summed` only.
            if Arc::strong_count(text) > 2 {
                return;
            }
            if let Some(number) = self.set.remove(&**text) {
                self.bytes -= text.len() + 32;
                self.free.push(number);
            }
        });
    }

    /// Forgets every text.
    pub(crate) fn clear(&mut self) {
        self.set.clear();
        self.free.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from(v: Value) -> Summed {
        Summed::from_json(v, None)
    }

    fn ev(data: Value, ts: &str, secs: f64) -> Value {
        json!({"data": data, "duration": secs, "id": null, "timestamp": ts})
    }

    #[test]
    fn numbers_dicts_and_event_lists_add_up() {
        let day1 = from(json!({
            "total": 10.5,
            "name": "x",
            "apps": [ev(json!({"app": "a"}), "2025-01-01T10:00:00Z", 5.0), ev(json!({"app": "b"}), "2025-01-01T09:00:00Z", 1.25)],
        }));
        let day2 = from(json!({
            "total": 2.0,
            "name": "y",
            "apps": [ev(json!({"app": "b"}), "2025-01-02T08:00:00Z", 4.0), ev(json!({"app": "c"}), "2025-01-02T08:00:00.5Z", 0.5)],
            "extra": 1,
        }));
        let sum = Summed::add_up(&[&day1, &day2], None);
        assert_eq!(sum["total"], json!(12.5));
        assert_eq!(sum["extra"], json!(1.0));
        assert_eq!(sum["name"], Value::Null);
        let apps = sum["apps"].as_array().unwrap();
        let names: Vec<&str> = apps
            .iter()
            .map(|e| e["data"]["app"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["b", "a", "c"]);
        assert_eq!(apps[0]["duration"], json!(5.25));
        assert_eq!(apps[0]["timestamp"], json!("2025-01-01T09:00:00Z"));
        let cut = Summed::add_up(&[&day1, &day2], Some(1));
        assert_eq!(cut["apps"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn lists_merged_by_keys_add_up_by_those_keys() {
        let keys = MergeKeys::from_json(&json!({"apps": ["app"]})).unwrap();
        let day = |title: &str, ts: &str| {
            Summed::from_json(
                json!({"apps": [ev(json!({"app": "a", "title": title}), ts, 2.0), ev(json!({"title": "no app"}), ts, 9.0)],
                       "all": [ev(json!({"app": "a", "title": title}), ts, 2.0)]}),
                Some(&keys),
            )
        };
        let (d1, d2) = (
            day("one", "2025-01-02T00:00:00Z"),
            day("two", "2025-01-01T00:00:00Z"),
        );
        let sum = Summed::add_up(&[&d1, &d2], None);
        assert_eq!(
            sum["apps"],
            json!([{"data": {"app": "a"}, "duration": 4.0, "id": null, "timestamp": "2025-01-01T00:00:00Z"}])
        );
        // Named no keys: by all of the data.
        assert_eq!(sum["all"].as_array().unwrap().len(), 2);
        assert!(MergeKeys::from_json(&json!({"apps": [1]})).is_err());
        assert!(MergeKeys::from_json(&json!("app")).is_err());
    }

    #[test]
    fn a_number_given_again_never_adds_up_two_texts() {
        let mut texts = Texts::default();
        let mut old = from(json!([ev(
            json!({"app": "old"}),
            "2025-01-01T00:00:00Z",
            1.0
        )]));
        texts.intern(&mut old);
        // A request still holds the old result when the cache drops it.
        texts.release(&old);
        let mut new = from(json!([ev(
            json!({"app": "new"}),
            "2025-01-02T00:00:00Z",
            2.0
        )]));
        texts.intern(&mut new);
        let number = |s: &Summed| match s {
            Summed::Events(e) => e[0].number,
            _ => NO_NUMBER,
        };
        assert_eq!(number(&old), number(&new), "the number is given again");
        let sum = Summed::add_up(&[&old, &new], None);
        let apps: Vec<&str> = sum
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["data"]["app"].as_str().unwrap())
            .collect();
        assert_eq!(apps, ["new", "old"]);
        // Interned twice, one text: one entry.
        let mut again = from(json!([ev(
            json!({"app": "new"}),
            "2025-01-03T00:00:00Z",
            1.0
        )]));
        texts.intern(&mut again);
        let sum = Summed::add_up(&[&new, &again], None);
        assert_eq!(
            sum,
            json!([{"data": {"app": "new"}, "duration": 3.0, "id": null, "timestamp": "2025-01-02T00:00:00Z"}])
        );
    }

    #[test]
    fn texts_of_one_hash_stay_apart() {
        let ev = |text: &str, d: i64| SummedEvent {
            hash: 7,
            ..SummedEvent::new(Arc::from(text), 0, d)
        };
        let list = [ev("a", 1), ev("b", 2), ev("a", 3), ev("b", 4), ev("c", 1)];
        let sums = add_lists(&[&list], None);
        let got: Vec<(&str, i64)> = sums.iter().map(|e| (&*e.data, e.duration)).collect();
        assert_eq!(got, [("b", 6), ("a", 4), ("c", 1)]);
    }

    #[test]
    fn values_are_picked_by_their_paths() {
        let day = from(json!({"active": 5.0, "window": {"duration": 2.0, "apps": []}}));
        let paths = [
            vec!["active".to_string()],
            vec!["window".to_string(), "duration".to_string()],
            vec!["nowhere".to_string(), "x".to_string()],
        ];
        assert_eq!(
            day.picked(&paths),
            json!({"active": 5.0, "window": {"duration": 2.0}})
        );
    }

    #[test]
    fn lists_that_are_not_events_are_kept_only_when_equal() {
        let a = from(json!([1, 2]));
        let b = from(json!([1, 2]));
        let c = from(json!([3]));
        assert_eq!(Summed::add_up(&[&a, &b], None), json!([1, 2]));
        assert_eq!(Summed::add_up(&[&a, &c], None), Value::Null);
        // An empty list is an event list.
        let e = from(json!([]));
        let one = from(json!([ev(json!({"k": 1}), "2025-01-01T00:00:00Z", 1.0)]));
        assert_eq!(
            Summed::add_up(&[&e, &one], None).as_array().unwrap().len(),
            1
        );
    }

    #[test]
    fn interned_texts_are_shared_and_released_with_their_last_holder() {
        let mut texts = Texts::default();
        let mut a = from(json!([ev(
            json!({"app": "x"}),
            "2025-01-01T00:00:00Z",
            1.0
        )]));
        let mut b = a.clone();
        texts.intern(&mut a);
        let held = texts.bytes;
        texts.intern(&mut b);
        assert_eq!(texts.bytes, held);
        texts.release(&a);
        drop(a);
        assert_eq!(texts.bytes, held);
        texts.release(&b);
        assert_eq!(texts.bytes, 0);
    }
}
