//! The result cache written out as bytes and read back ([`crate::ResultCache::export`],
//! [`crate::RestoreTicket::restore`]): what a server keeps beside its database between runs,
//! so the first look after a restart is answered from the cache.
//!
//! The bytes say which engine made them (the *identity*: this crate's version and whatever
//! the caller adds, such as the build of the executable): a result is only as right as the
//! engine that computed it, so another identity reads as nothing. Every entry keeps its
//! reads, which is what keeps it correct after it is read back. Whether the data is still
//! what the results were computed from is the caller's to know (the datastore hands the
//! bytes back only for the very file they were saved with); reading checks only that the
//! bytes are whole, and any malformed byte makes the whole text read as nothing: a cache
//! is never worth a wrong answer.
//!
//! Layout (integers little-endian; a text is its `u32` length and its UTF-8 bytes): the
//! magic, the identity, the program texts, the data texts of summed results (each once),
//! then each entry: the index of its program, its period (seconds `i64` and nanoseconds
//! `u32`, start then end), its reads (a count, then `0` with the bucket and the range in
//! ns, or `1` for the bucket list), and its result: `0` and its JSON text, or `1` and its
//! summed form (`2` with a count of events, each the index of its data text, its start and
//! its duration in ns; `1` with a count of fields, each its name and value; `0` with a
//! number's `f64` bits; `3` with any other value's JSON text).
//! All of it is compressed with LZ4 ([`pack`]): results are JSON, which shrinks to a fifth
//! or less, and what is kept may take at most a twentieth of the database file (or 16 MiB).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::cache::Stored;
use crate::recording::Read;
use crate::summed::{Summed, SummedEvent};

/// The first bytes: what this is and the layout's version.
const MAGIC: &[u8] = b"aw-query results 2\n";

/// The first bytes of the compressed form, followed by the plain length (`u32`).
const PACKED: &[u8] = b"aw-query packed 1\n";

/// The most the compressed form may unpack to: a length beyond it is damage, not a size to
/// allocate.
const MAX_UNPACKED: usize = 1 << 30;

/// The compressed form of [`Writer::finish`]'s bytes.
pub(crate) fn pack(plain: &[u8]) -> Vec<u8> {
    let mut out = PACKED.to_vec();
    out.extend_from_slice(&u32::try_from(plain.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&lz4_flex::block::compress(plain));
    out
}

/// The bytes [`pack`] was given, if `packed` is whole.
fn unpack(packed: &[u8]) -> Option<Vec<u8>> {
    let rest = packed.strip_prefix(PACKED)?;
    let (len, body) = rest.split_at_checked(4)?;
    let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
    // LZ4 expands at most 255 to 1.
    if len > MAX_UNPACKED || len > body.len().saturating_mul(255) {
        return None;
    }
    lz4_flex::block::decompress(body, len).ok()
}

/// This engine's part of the identity.
pub(crate) const ENGINE: &str = concat!("aw-query ", env!("CARGO_PKG_VERSION"));

/// One result as written and read back.
pub(crate) struct Saved {
    pub code: Arc<str>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub reads: Vec<Read>,
    pub value: Stored,
}

/// Builds the bytes: [`Writer::program`] for each distinct program text first, then
/// [`Writer::entry`] for each result.
pub(crate) struct Writer {
    head: Vec<u8>,
    texts: Vec<u8>,
    programs: u32,
    /// The data texts of summed results, each once, and their indexes.
    strings: Vec<u8>,
    string_index: HashMap<Arc<str>, u32>,
    entries: u32,
    body: Vec<u8>,
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    // Texts over 4 GiB do not occur (results are capped far below); cut rather than wrap.
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&text.as_bytes()[..len as usize]);
}

fn put_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_time(out: &mut Vec<u8>, t: &DateTime<Utc>) {
    out.extend_from_slice(&t.timestamp().to_le_bytes());
    out.extend_from_slice(&t.timestamp_subsec_nanos().to_le_bytes());
}

impl Writer {
    /// A writer for results made by the engine `identity` (see the module docs).
    pub(crate) fn new(identity: &str) -> Writer {
        let mut head = MAGIC.to_vec();
        put_text(&mut head, &format!("{ENGINE}; {identity}"));
        Writer {
            head,
            texts: Vec::new(),
            programs: 0,
            strings: Vec::new(),
            string_index: HashMap::new(),
            entries: 0,
            body: Vec::new(),
        }
    }

    /// Bytes so far.
    pub(crate) fn len(&self) -> usize {
        self.head.len() + 4 + self.texts.len() + 4 + self.strings.len() + 4 + self.body.len()
    }

    /// Adds a program text; returns its index for [`Writer::entry`].
    pub(crate) fn program(&mut self, code: &str) -> u32 {
        put_text(&mut self.texts, code);
        self.programs += 1;
        self.programs - 1
    }

    /// Bytes [`Writer::entry`] adds for these.
    pub(crate) fn entry_len(&self, reads: &[Read], value: &Stored) -> usize {
        4 + 24
            + 4
            + reads
                .iter()
                .map(|r| match r {
                    Read::Events { bucket, .. } => 1 + 4 + bucket.len() + 16,
                    Read::BucketList => 1,
                })
                .sum::<usize>()
            + 1
            + match value {
                Stored::Text(text) => 4 + text.len(),
                Stored::Summed(summed) => self.summed_len(summed),
            }
    }

    /// Bytes `put_summed` adds for `summed`, the data texts not yet written included.
    fn summed_len(&self, summed: &Summed) -> usize {
        match summed {
            Summed::Number(_) => 9,
            Summed::Object(fields) => {
                5 + fields
                    .iter()
                    .map(|(k, v)| 4 + k.len() + self.summed_len(v))
                    .sum::<usize>()
            }
            Summed::Events(events) => {
                5 + events
                    .iter()
                    .map(|e| {
                        20 + if self.string_index.contains_key(&e.data) {
                            0
                        } else {
                            4 + e.data.len()
                        }
                    })
                    .sum::<usize>()
            }
            Summed::Other(v) => 5 + v.to_string().len(),
        }
    }

    /// Writes `summed` into the body, its data texts into the table.
    fn put_summed(&mut self, summed: &Summed) {
        match summed {
            Summed::Number(n) => {
                self.body.push(0);
                self.body.extend_from_slice(&n.to_bits().to_le_bytes());
            }
            Summed::Object(fields) => {
                self.body.push(1);
                put_count(&mut self.body, fields.len());
                for (k, v) in fields {
                    put_text(&mut self.body, k);
                    self.put_summed(v);
                }
            }
            Summed::Events(events) => {
                self.body.push(2);
                put_count(&mut self.body, events.len());
                for e in events {
                    let index = match self.string_index.get(&e.data) {
                        Some(&i) => i,
                        None => {
                            let i = u32::try_from(self.string_index.len()).unwrap_or(u32::MAX);
                            put_text(&mut self.strings, &e.data);
                            self.string_index.insert(e.data.clone(), i);
                            i
                        }
                    };
                    self.body.extend_from_slice(&index.to_le_bytes());
                    self.body.extend_from_slice(&e.start.to_le_bytes());
                    self.body.extend_from_slice(&e.duration.to_le_bytes());
                }
            }
            Summed::Other(v) => {
                self.body.push(3);
                put_text(&mut self.body, &v.to_string());
            }
        }
    }

    /// Adds one result of the program `program` (an index from [`Writer::program`]).
    pub(crate) fn entry(
        &mut self,
        program: u32,
        start: &DateTime<Utc>,
        end: &DateTime<Utc>,
        reads: &[Read],
        value: &Stored,
    ) {
        let out = &mut self.body;
        out.extend_from_slice(&program.to_le_bytes());
        put_time(out, start);
        put_time(out, end);
        out.extend_from_slice(&u32::try_from(reads.len()).unwrap_or(u32::MAX).to_le_bytes());
        for read in reads {
            match read {
                Read::Events { bucket, start, end } => {
                    out.push(0);
                    put_text(out, bucket);
                    out.extend_from_slice(&start.to_le_bytes());
                    out.extend_from_slice(&end.to_le_bytes());
                }
                Read::BucketList => out.push(1),
            }
        }
        match value {
            Stored::Text(text) => {
                out.push(0);
                put_text(out, text);
            }
            Stored::Summed(summed) => {
                out.push(1);
                self.put_summed(summed);
            }
        }
        self.entries += 1;
    }

    /// The bytes.
    pub(crate) fn finish(self) -> Vec<u8> {
        let mut out = self.head;
        out.extend_from_slice(&self.programs.to_le_bytes());
        out.extend_from_slice(&self.texts);
        out.extend_from_slice(&(self.string_index.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.strings);
        out.extend_from_slice(&self.entries.to_le_bytes());
        out.extend_from_slice(&self.body);
        out
    }
}

/// Reads the bytes back, front to back; every read checks the length left.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn text(&mut self) -> Option<&'a str> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).ok()
    }

    fn time(&mut self) -> Option<DateTime<Utc>> {
        let secs = self.i64()?;
        let nanos = self.u32()?;
        DateTime::from_timestamp(secs, nanos)
    }

    /// A summed result (`depth`: how deep in dicts, bounded as values are).
    fn summed(&mut self, strings: &[Arc<str>], depth: usize) -> Option<Summed> {
        if depth > crate::MAX_VALUE_DEPTH {
            return None;
        }
        Some(match self.u8()? {
            0 => Summed::Number(f64::from_bits(u64::from_le_bytes(
                self.take(8)?.try_into().ok()?,
            ))),
            1 => {
                let n = self.count(5)?;
                let mut fields = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = Arc::from(self.text()?);
                    fields.push((k, self.summed(strings, depth + 1)?));
                }
                Summed::Object(fields)
            }
            2 => {
                let n = self.count(20)?;
                let mut events = Vec::with_capacity(n);
                for _ in 0..n {
                    let data = strings.get(self.u32()? as usize)?.clone();
                    let start = self.i64()?;
                    let duration = self.i64()?;
                    events.push(SummedEvent::new(data, start, duration));
                }
                Summed::Events(events)
            }
            3 => Summed::Other(serde_json::from_str(self.text()?).ok()?),
            _ => return None,
        })
    }

    /// A count of items each at least `min` bytes long: larger than what is left means the
    /// bytes are not whole (and no vector is sized from a bad number).
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min)? <= self.0.len()).then_some(n)
    }
}

/// The results in `packed` ([`pack`]ed) if they were made by the engine `identity` and are
/// whole; `None` otherwise.
pub(crate) fn read(packed: &[u8], identity: &str) -> Option<Vec<Saved>> {
    let plain = unpack(packed)?;
    read_plain(&plain, identity)
}

fn read_plain(bytes: &[u8], identity: &str) -> Option<Vec<Saved>> {
    let mut r = Reader(bytes.strip_prefix(MAGIC)?);
    if r.text()? != format!("{ENGINE}; {identity}") {
        return None;
    }
    let programs = r.count(4)?;
    let mut codes: Vec<Arc<str>> = Vec::with_capacity(programs);
    for _ in 0..programs {
        codes.push(Arc::from(r.text()?));
    }
    let n = r.count(4)?;
    let mut strings: Vec<Arc<str>> = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(Arc::from(r.text()?));
    }
    let entries = r.count(40)?;
    let mut out = Vec::with_capacity(entries);
    for _ in 0..entries {
        let code = codes.get(r.u32()? as usize)?.clone();
        let start = r.time()?;
        let end = r.time()?;
        let n = r.count(1)?;
        let mut reads = Vec::with_capacity(n);
        for _ in 0..n {
            reads.push(match r.u8()? {
                0 => Read::Events {
                    bucket: r.text()?.to_string(),
                    start: r.i64()?,
                    end: r.i64()?,
                },
                1 => Read::BucketList,
                _ => return None,
            });
        }
        let value = match r.u8()? {
            0 => Stored::Text(Arc::from(r.text()?)),
            1 => Stored::Summed(Arc::new(r.summed(&strings, 0)?)),
            _ => return None,
        };
        out.push(Saved {
            code,
            start,
            end,
            reads,
            value,
        });
    }
    r.0.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 123).unwrap()
    }

    fn sample() -> Vec<u8> {
        let mut w = Writer::new("build 1");
        let p = w.program("RETURN = 1;");
        let q = w.program("RETURN = query_bucket(\"ü\");");
        let reads = vec![
            Read::Events {
                bucket: "ü".into(),
                start: -5,
                end: i64::MAX,
            },
            Read::BucketList,
        ];
        w.entry(
            q,
            &at(10),
            &at(20),
            &reads,
            &Stored::Text(Arc::from("[{\"a\":1}]")),
        );
        w.entry(p, &at(0), &at(1), &[], &Stored::Text(Arc::from("1")));
        let summed = Summed::from_json(
            serde_json::json!({
                "n": 1.5,
                "list": [{"data": {"app": "a"}, "duration": 2.0, "id": null, "timestamp": "2025-01-01T00:00:00Z"}],
                "s": "text",
            }),
            None,
        );
        let value = Stored::Summed(Arc::new(summed));
        // The entry and its new data text.
        let expected = w.len() + w.entry_len(&[], &value);
        w.entry(p, &at(1), &at(2), &[], &value);
        assert_eq!(w.len(), expected);
        let expected = w.len();
        let bytes = w.finish();
        assert_eq!(bytes.len(), expected);
        pack(&bytes)
    }

    #[test]
    fn results_read_back_as_written() {
        let stored = read(&sample(), "build 1").unwrap();
        assert_eq!(stored.len(), 3);
        assert_eq!(&*stored[0].code, "RETURN = query_bucket(\"ü\");");
        assert_eq!((stored[0].start, stored[0].end), (at(10), at(20)));
        assert_eq!(stored[0].reads.len(), 2);
        assert!(matches!(&stored[0].value, Stored::Text(t) if &**t == "[{\"a\":1}]"));
        let Stored::Summed(summed) = &stored[2].value else {
            panic!("not summed");
        };
        let sum = Summed::add_up(&[summed, summed], None);
        assert_eq!(sum["n"], serde_json::json!(3.0));
        assert_eq!(sum["list"][0]["duration"], serde_json::json!(4.0));
        assert_eq!(sum["s"], serde_json::json!("text"));
        assert_eq!(&*stored[1].code, "RETURN = 1;");
        assert!(stored[1].reads.is_empty());
    }

    #[test]
    fn another_engine_or_any_damage_reads_as_nothing() {
        let bytes = sample();
        assert!(read(&bytes, "build 2").is_none());
        for cut in 0..bytes.len() {
            assert!(read(&bytes[..cut], "build 1").is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read(&longer, "build 1").is_none());
        // A length that would allocate gigabytes is refused before anything is allocated.
        let mut huge = bytes.clone();
        huge[PACKED.len()..PACKED.len() + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(&huge, "build 1").is_none());
        // Every single changed byte either still reads (a changed character of a text) or
        // reads as nothing; none panics or sizes a vector from a bad count.
        for i in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 0xff;
            let _ = read(&changed, "build 1");
        }
    }
}
