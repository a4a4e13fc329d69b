//! The journal of acknowledged writes: `<database>.journal`, where every write the worker
//! acknowledges is appended before its answer goes out, so that a process that dies at any
//! instant (a kill, a crash, a stop on a full disk) loses none of them, while the database
//! itself still commits once per group (every 15 s; `worker/run.rs`).
//!
//! * **Cheap.** An append is a copy into the journal mapped in memory (a shared mapping of
//!   the file: the page cache itself), not a system call and not an fsync: what is in the
//!   page cache survives the process. Power loss is covered by the commits, as before (every
//!   write of a finished commit survives; the writes after it may not). Where the file
//!   cannot be mapped, each append is one `pwrite`.
//! * **Never needs new space.** The file is preallocated ([`INITIAL_SIZE`], grown ahead of
//!   need while there is room), so appending works on a full disk; a write that no longer
//!   fits is refused (the client keeps it and retries), never acknowledged.
//! * **Exactly once.** Records carry consecutive sequence numbers. Each commit stores the
//!   last sequence number it holds in the database's own `aw_server_journal` row, in the
//!   same transaction, and then the journal is emptied (its header names the new base). At
//!   start, the records after the stored number are applied (`recovery.rs`); one that was
//!   committed is never applied twice, and an update never reverts a newer value.
//! * **Only to its own file.** The header names the database it was written for (a random
//!   id kept in that same row). A journal whose records do not follow on from the
//!   database's stored number, or that names another database (a backup put in place by
//!   hand, another device's file) is kept aside as `<journal>.unmatched-<time>` and
//!   reported, never applied.
//!
//! * **All or nothing for a rewrite.** A rewrite that runs in steps (a range deletion,
//!   `worker/job.rs`) appends each step's changes as a *provisional* record, so its answer does not
//!   wait for the serialization of hundreds of thousands of changes at once; its end appends
//!   a small *done* record. Provisional records count only once their rewrite's done record
//!   follows (they are then applied where it stands); a rewrite cut short by a crash or a
//!   failure leaves none of it.
//!
//! * **Encrypted with the database.** Each record's payload is then encrypted and
//!   authenticated (`journal_cipher.rs`), under a key the database itself keeps: the
//!   watchers' titles and URLs are never on disk in the clear beside an encrypted file.
//!
//! * **Old records never come back.** Every time the header is written with another base
//!   (an emptying after a commit, a start on a database at another commit: a restored
//!   backup), it gets a new *salt*, and each record's checksum covers the salt of the
//!   header it was written under. The bytes of older records stay behind the tail, but no
//!   header can ever make them follow again, whatever number it names (SQLite's WAL does
//!   the same with its salts).
//! * **The base is a number the database holds.** The header's base only ever becomes a
//!   number a commit stored in the database ([`Journal::committed`]): a record that moved
//!   the number without changing a row (a dry run's done record) is stored by the next
//!   commit like any other, so the header is never ahead of its database.
//!
//! Format (version 2, `AWJRNL02`): a 64-byte header (the magic, the base sequence number,
//! the salt, the database id, a CRC-32), then records `[payload length u32, top bit:
//! encrypted][CRC-32 of salt, length word, seq and payload u32][seq u64][payload]`,
//! little-endian; an encrypted payload is a nonce, the ciphertext and a tag, and what it
//! encrypts (like a plain payload) is JSON: one request's row changes (an array),
//! `{"rewrite": n, "changes": [...]}` for a provisional record of rewrite `n`, or
//! `{"rewrite_done": n}`. A record ends the journal when its CRC does not match, its
//! length is zero, or its number is not the next one (records of before the last emptying
//! stay behind the tail). Version 1 (`AWJRNL01`, no salt, the encrypted flag outside the
//! CRC) is still read, and a journal of that version that holds writes waiting for the
//! database is appended to in its own version until its next emptying.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::journal_cipher::{JournalCipher, NONCE_LEN};
use crate::file::names::with_suffix;
use crate::store::change::Change;

/// The space reserved when the journal is made, and kept when it is emptied.
pub(crate) const INITIAL_SIZE: u64 = 4 << 20;

/// When less than this is left free after an append, the journal grows (while it can).
const HEADROOM: u64 = 1 << 20;

/// The largest record buffer kept between appends.
const SCRATCH_KEPT: usize = 64 << 10;

const HEADER_LEN: u64 = 64;
/// The longest database id a header holds (ours are 32 hex digits).
const MAX_ID_LEN: usize = 35;

/// A journal file's version, named by its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `AWJRNL01`: no salt; the encrypted flag outside the CRC.
    V1,
    /// `AWJRNL02`: salted records, every framing bit under the CRC.
    V2,
}

impl Format {
    fn magic(self) -> &'static [u8; 8] {
        match self {
            Format::V1 => b"AWJRNL01",
            Format::V2 => b"AWJRNL02",
        }
    }
}

/// What a header says.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Header {
    format: Format,
    /// The id of the database the records were written for (at most [`MAX_ID_LEN`] bytes).
    database_id: String,
    /// The number committed when the journal was last emptied.
    base: u64,
    /// Covered by each record's CRC (version 2; 0 in version 1).
    salt: u64,
}

impl Header {
    fn bytes(&self) -> [u8; HEADER_LEN as usize] {
        let mut h = [0u8; HEADER_LEN as usize];
        h[..8].copy_from_slice(self.format.magic());
        h[8..16].copy_from_slice(&self.base.to_le_bytes());
        let id = self.database_id.as_bytes();
        match self.format {
            Format::V1 => {
                let n = id.len().min(40);
                h[16] = n as u8;
                h[17..17 + n].copy_from_slice(&id[..n]);
            }
            Format::V2 => {
                h[16..24].copy_from_slice(&self.salt.to_le_bytes());
                let n = id.len().min(MAX_ID_LEN);
                h[24] = n as u8;
                h[25..25 + n].copy_from_slice(&id[..n]);
            }
        }
        let crc = crc32fast::hash(&h[..60]);
        h[60..].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// The header in `h`; `None` when it is not a valid one.
    fn parse(h: &[u8; HEADER_LEN as usize]) -> Option<Header> {
        if crc32fast::hash(&h[..60]).to_le_bytes() != h[60..64] {
            return None;
        }
        let format = [Format::V1, Format::V2]
            .into_iter()
            .find(|f| &h[..8] == f.magic())?;
        let base = u64_at(h, 8);
        let (salt, id) = match format {
            Format::V1 => (0, h.get(17..17 + usize::from(h[16]).min(40))?),
            Format::V2 => (
                u64_at(h, 16),
                h.get(25..25 + usize::from(h[24]).min(MAX_ID_LEN))?,
            ),
        };
        Some(Header {
            format,
            database_id: String::from_utf8_lossy(id).into_owned(),
            base,
            salt,
        })
    }

    /// Whether the records under this header were written for database `id`.
    fn names(&self, id: &str) -> bool {
        let limit = match self.format {
            Format::V1 => 40,
            Format::V2 => MAX_ID_LEN,
        };
        let id = id.as_bytes();
        self.database_id.as_bytes() == &id[..id.len().min(limit)]
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A salt for a journal that has none to go on from: random (the standard library's
/// hasher keys are drawn from the operating system once per process, and each hasher
/// built from a new `RandomState` differs).
fn fresh_salt() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}
/// Record framing: length, CRC, sequence number.
const RECORD_HEAD: usize = 16;
/// The length word's top bit: the payload is encrypted (`journal_cipher.rs`). A record says
/// so itself, so a journal written by a version that did not encrypt (or before a
/// database was encrypted) is still read.
const ENCRYPTED: u32 = 1 << 31;

/// `<database>.journal`.
pub(crate) fn journal_path(db: &Path) -> PathBuf {
    with_suffix(db, ".journal")
}

/// What a journal file holds.
#[derive(Debug)]
pub(crate) struct Contents {
    /// Its header: the database it was written for, its base and salt.
    header: Header,
    /// Its records after the base, in order: (sequence number, the changes of one request).
    /// A finished rewrite's changes are one record, numbered as its done record.
    pub records: Vec<(u64, Vec<Change>)>,
    /// The number of the last record read, provisional ones included.
    last: u64,
    /// Where the next record goes.
    tail: u64,
}

/// What one record's payload holds.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Payload {
    /// One request's changes.
    Changes(Vec<Change>),
    /// A step of rewrite `rewrite`: kept only if its done record follows.
    Provisional { rewrite: u64, changes: Vec<Change> },
    /// Rewrite `rewrite_done` is done: its provisional records count.
    Done { rewrite_done: u64 },
}

/// The open journal of a served database.
pub(crate) struct Journal {
    file: File,
    /// The file's first `allocated` bytes, mapped shared (`None`: not mappable here).
    map: Option<memmap2::MmapMut>,
    /// The record being built (kept to save an allocation per append).
    scratch: Vec<u8>,
    path: PathBuf,
    /// The header the records are written under.
    header: Header,
    /// The number of the last record appended (the base when empty).
    last: u64,
    /// The number the database holds as committed: the header's base only ever becomes
    /// one of these ([`Journal::committed`]).
    committed: u64,
    tail: u64,
    allocated: u64,
    /// A failure to grow was logged (not again until growing works).
    grow_failed: bool,
    /// Encrypts each record: the database is encrypted.
    cipher: Option<JournalCipher>,
    /// Whether appends may go through a shared mapping: not on a copy-on-write file
    /// system, where a write into the preallocated file can still need new space, and a
    /// mapped write that finds none kills the process instead of failing.
    mappable: bool,
    /// Faults a test switched on (`file/faults.rs`).
    faults: crate::Faults,
}

fn io_error(text: String) -> std::io::Error {
    std::io::Error::other(text)
}

/// The database id and base the header of the journal at `path` names, if it has a valid
/// one: whom its records were written for, when the database's own row cannot be read (a
/// salvage of a damaged file, `file/salvage.rs`).
pub(crate) fn identity(path: &Path) -> Option<(String, u64)> {
    use std::io::Read;
    let mut h = [0u8; HEADER_LEN as usize];
    File::open(path).ok()?.read_exact(&mut h).ok()?;
    Header::parse(&h).map(|h| (h.database_id, h.base))
}

/// Reads the journal at `path`; `None` when there is none (or not even a whole header).
/// Reads up to the first record that ends it, not the whole preallocated file: after a
/// clean stop that is the header and one record head (a start read all 4 MiB before).
/// Encrypted records are decrypted with `cipher`; one that is encrypted when there is none,
/// or that does not decrypt with it, is an error (the journal is then kept aside, never
/// applied).
pub(crate) fn read(
    path: &Path,
    cipher: Option<&JournalCipher>,
) -> std::io::Result<Option<Contents>> {
    use std::io::{ErrorKind, Read};
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let mut reader = std::io::BufReader::with_capacity(SCRATCH_KEPT, file);
    // Fills `buf`, or says the file ended first.
    let mut fill = |buf: &mut [u8]| -> std::io::Result<bool> {
        match reader.read_exact(buf) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    };
    let mut h = [0u8; HEADER_LEN as usize];
    if !fill(&mut h)? {
        return Ok(None);
    }
    if h.iter().all(|&b| b == 0) {
        // Made, but its header never reached the disk (a power cut right after): empty.
        return Ok(None);
    }
    let header = Header::parse(&h)
        .ok_or_else(|| io_error(format!("{} has no valid header", path.display())))?;
    let mut contents = Contents {
        last: header.base,
        header,
        records: Vec::new(),
        tail: HEADER_LEN,
    };
    // Provisional records by rewrite, until their done record.
    let mut provisional: std::collections::HashMap<u64, Vec<Change>> = Default::default();
    let mut head = [0u8; RECORD_HEAD];
    let mut payload = Vec::new();
    while fill(&mut head)? {
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&head[i..i + 4]);
            u32::from_le_bytes(w)
        };
        let (encrypted, len, crc) = (
            word(0) & ENCRYPTED != 0,
            (word(0) & !ENCRYPTED) as usize,
            word(4),
        );
        let seq = u64_at(&head, 8);
        let room = size.saturating_sub(contents.tail + RECORD_HEAD as u64);
        if len == 0 || seq != contents.last + 1 || len as u64 > room {
            break;
        }
        payload.clear();
        payload.resize(len, 0);
        if !fill(&mut payload)? || checksum(&contents.header, word(0), seq, &payload) != crc {
            break;
        }
        let decrypted;
        let text = if encrypted {
            decrypted = cipher.and_then(|c| c.decrypt(&payload)).ok_or_else(|| {
                io_error(format!(
                    "{} holds encrypted records that {}",
                    path.display(),
                    if cipher.is_some() {
                        "this database's key does not decrypt"
                    } else {
                        "only an encrypted database can read"
                    }
                ))
            })?;
            &decrypted[..]
        } else {
            &payload[..]
        };
        match serde_json::from_slice::<Payload>(text) {
            Ok(Payload::Changes(changes)) => contents.records.push((seq, changes)),
            Ok(Payload::Provisional { rewrite, changes }) => {
                provisional.entry(rewrite).or_default().extend(changes);
            }
            Ok(Payload::Done { rewrite_done }) => {
                let changes = provisional.remove(&rewrite_done).unwrap_or_default();
                contents.records.push((seq, changes));
            }
            Err(_) => break,
        }
        contents.last = seq;
        contents.tail += (RECORD_HEAD + len) as u64;
    }
    Ok(Some(contents))
}

/// A record's CRC: in version 2 over the header's salt and every framing bit (so a flipped
/// "encrypted" bit ends the journal there, like any torn record); in version 1 over the
/// sequence number and the payload.
fn checksum(header: &Header, length_word: u32, seq: u64, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    if header.format == Format::V2 {
        hasher.update(&header.salt.to_le_bytes());
        hasher.update(&length_word.to_le_bytes());
    }
    hasher.update(&seq.to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

impl Contents {
    /// Whether it was written for database `id`.
    pub(crate) fn names(&self, id: &str) -> bool {
        self.header.names(id)
    }

    /// The database id it names.
    pub(crate) fn database_id(&self) -> &str {
        &self.header.database_id
    }

    /// The number committed when it was last emptied.
    pub(crate) fn base(&self) -> u64 {
        self.header.base
    }
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("last", &self.last)
            .field("tail", &self.tail)
            .field("allocated", &self.allocated)
            .field("mapped", &self.map.is_some())
            .finish()
    }
}

impl Journal {
    /// Opens the journal of `db` for appending, for database `database_id`, which holds
    /// `committed` as its last committed number: going on after the records of `contents`
    /// (written for this database: writes that wait to be committed), or else empty with
    /// base `committed`. The file is preallocated. With `cipher`, every record it appends
    /// is encrypted.
    pub(crate) fn open(
        db: &Path,
        database_id: &str,
        committed: u64,
        contents: Option<&Contents>,
        cipher: Option<JournalCipher>,
    ) -> std::io::Result<Journal> {
        let path = journal_path(db);
        let file = super::modes::create_file(&path, db)?;
        let had = file.metadata()?.len();
        let allocated = had.max(INITIAL_SIZE);
        aw_platform::disk::preallocate(&file, allocated)?;
        let going_on = contents.filter(|c| !c.records.is_empty());
        let mut journal = Journal {
            file,
            map: None,
            scratch: Vec::new(),
            path,
            header: Header {
                format: Format::V2,
                database_id: database_id.to_string(),
                base: committed,
                salt: 0,
            },
            last: committed,
            committed,
            tail: HEADER_LEN,
            allocated,
            grow_failed: false,
            cipher,
            mappable: false,
            faults: crate::Faults::default(),
        };
        journal.mappable = !aw_platform::disk::overwrites_need_space(&journal.file);
        match going_on {
            Some(c) => {
                // Appended under the header they follow, in its version.
                journal.header = c.header.clone();
                journal.last = c.last;
                journal.tail = c.tail;
            }
            None => {
                let mut found = [0u8; HEADER_LEN as usize];
                let found = read_at(&journal.file, &mut found, 0)
                    .ok()
                    .and_then(|()| Header::parse(&found));
                journal.header.salt = match &found {
                    // After a clean stop the header already says this (its salt aside):
                    // nothing to write. Another base (a restored backup) or another
                    // database: a new salt, so no record written under the old header can
                    // follow the new one.
                    Some(h) => {
                        let same = Header {
                            salt: h.salt,
                            ..journal.header.clone()
                        } == *h;
                        if same && !next_record_written(&journal.file, h.base) {
                            h.salt
                        } else {
                            h.salt.wrapping_add(1)
                        }
                    }
                    None => fresh_salt(),
                };
                if found.as_ref() != Some(&journal.header) {
                    // Written before the file is mapped (so one fdatasync syncs it, no
                    // msync of the whole mapping). A file made just now needs no sync: if
                    // a power cut took its header, it reads as empty, as it is.
                    write_at(&journal.file, &journal.header.bytes(), 0)?;
                    if had > 0 {
                        journal.file.sync_data()?;
                    }
                }
            }
        }
        journal.remap();
        Ok(journal)
    }

    /// Turns on the faults a test asked for (`file/faults.rs`).
    pub(crate) fn set_faults(&mut self, faults: crate::Faults) {
        self.faults = faults;
    }

    /// The faults a test turned on (`file/faults.rs`).
    pub(crate) fn faults(&self) -> &crate::Faults {
        &self.faults
    }

    /// The journal's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the journal's file back, with this journal's cipher.
    pub(crate) fn read_back(&self) -> std::io::Result<Option<Contents>> {
        read(&self.path, self.cipher.as_ref())
    }

    /// The id of the database its records are written for, the number that database
    /// holds as committed, and the key of its records (an encrypted database): what a
    /// salvaged copy must carry for the records to apply to it (`worker/live_salvage.rs`).
    pub(crate) fn identity(
        &self,
    ) -> (
        &str,
        u64,
        Option<&zeroize::Zeroizing<[u8; super::journal_cipher::KEY_LEN]>>,
    ) {
        (
            &self.header.database_id,
            self.committed,
            self.cipher.as_ref().map(JournalCipher::key),
        )
    }

    /// The number of the last record appended.
    pub(crate) fn last(&self) -> u64 {
        self.last
    }

    /// The number a commit must store in the database now: the last record's, when the
    /// database does not hold it yet (records were appended since the last commit, even
    /// ones that change no row, such as a dry run's done record).
    pub(crate) fn unstored(&self) -> Option<u64> {
        (self.last != self.committed).then_some(self.last)
    }

    /// Maps the file's allocated length (after it changed); without a map, appends write.
    fn remap(&mut self) {
        self.map = None;
        if !self.mappable {
            return;
        }
        // SAFETY: the journal is this process's alone while it holds the database's lock
        // (no other process maps, writes or truncates it), and this struct changes the
        // file's length only with the map dropped first.
        let mapped = usize::try_from(self.allocated).ok().and_then(|len| unsafe {
            memmap2::MmapOptions::new()
                .len(len)
                .map_mut(&self.file)
                .ok()
        });
        self.map = mapped;
    }

    fn write_at(&mut self, bytes: &[u8], at: u64) -> std::io::Result<()> {
        let start = usize::try_from(at).map_err(std::io::Error::other)?;
        match self
            .map
            .as_mut()
            .and_then(|map| map.get_mut(start..start + bytes.len()))
        {
            Some(place) => {
                place.copy_from_slice(bytes);
                Ok(())
            }
            None => write_at(&self.file, bytes, at),
        }
    }

    /// Appends the changes of one acknowledged request; fails (and appends nothing) when
    /// they do not fit in the space the journal has and it cannot grow.
    pub(crate) fn append(&mut self, changes: &[Change]) -> std::io::Result<()> {
        self.append_payload(&changes)
    }

    /// Appends one step of rewrite `rewrite` (see the module docs): it counts only once
    /// [`Journal::append_done`] follows.
    pub(crate) fn append_provisional(
        &mut self,
        rewrite: u64,
        changes: &[Change],
    ) -> std::io::Result<()> {
        #[derive(serde::Serialize)]
        struct Provisional<'a> {
            rewrite: u64,
            changes: &'a [Change],
        }
        self.append_payload(&Provisional { rewrite, changes })
    }

    /// Appends the done record of rewrite `rewrite`: its provisional records count now.
    pub(crate) fn append_done(&mut self, rewrite: u64) -> std::io::Result<()> {
        self.append_payload(&Payload::Done {
            rewrite_done: rewrite,
        })
    }

    /// Appends one record of `payload` as JSON.
    fn append_payload(&mut self, payload: &impl serde::Serialize) -> std::io::Result<()> {
        let mut record = std::mem::take(&mut self.scratch);
        record.clear();
        let encrypted = self.cipher.is_some();
        record.resize(RECORD_HEAD + if encrypted { NONCE_LEN } else { 0 }, 0);
        let written = serde_json::to_writer(&mut record, payload)
            .map_err(std::io::Error::from)
            .and_then(|()| match &mut self.cipher {
                Some(cipher) => cipher.encrypt(&mut record, RECORD_HEAD),
                None => Ok(()),
            })
            .and_then(|()| self.append_record(&mut record, encrypted));
        // Kept for the next append unless one large write made it large.
        if record.capacity() <= SCRATCH_KEPT {
            self.scratch = record;
        }
        written
    }

    /// Frames the payload after `record`'s first [`RECORD_HEAD`] bytes and writes it.
    fn append_record(&mut self, record: &mut [u8], encrypted: bool) -> std::io::Result<()> {
        let payload_len = record.len() - RECORD_HEAD;
        let len = u32::try_from(payload_len)
            .ok()
            .filter(|len| len & ENCRYPTED == 0)
            .ok_or_else(|| io_error("one request's changes exceed 2 GiB".into()))?;
        let len = if encrypted { len | ENCRYPTED } else { len };
        let seq = self.last + 1;
        let crc = checksum(&self.header, len, seq, &record[RECORD_HEAD..]);
        record[..4].copy_from_slice(&len.to_le_bytes());
        record[4..8].copy_from_slice(&crc.to_le_bytes());
        record[8..16].copy_from_slice(&seq.to_le_bytes());
        if self.faults.journal_full() {
            return Err(std::io::ErrorKind::StorageFull.into());
        }
        let end = self.tail + record.len() as u64;
        if end > self.allocated {
            self.grow(end + HEADROOM)?;
        }
        self.write_at(record, self.tail)?;
        self.tail = end;
        self.last = seq;
        if self.allocated - self.tail < HEADROOM {
            // Ahead of need, while the disk has room; failing here refuses nothing yet.
            if let Err(e) = self.grow(self.allocated * 2) {
                if !std::mem::replace(&mut self.grow_failed, true) {
                    log::warn!("Cannot grow {}: {e}", self.path.display());
                }
            }
        }
        Ok(())
    }

    fn grow(&mut self, to: u64) -> std::io::Result<()> {
        aw_platform::disk::preallocate(&self.file, to)?;
        self.allocated = to;
        self.grow_failed = false;
        self.remap();
        Ok(())
    }

    /// After a commit that stored `stored` in the database (with the changes of every
    /// record up to it): the journal is emptied, its header naming `stored` as its base,
    /// under a new salt and in the current version. After records past [`INITIAL_SIZE`]
    /// (an import, one large event) the file goes back to that size and is mapped anew:
    /// the disk space and the memory their pages took are given back.
    ///
    /// `stored` must be [`Journal::last`] (nothing is appended between the commit and
    /// this call); any other number leaves the journal as it is, since a header whose base
    /// the database does not hold would put the records after it aside at the next start.
    pub(crate) fn committed(&mut self, stored: u64) -> std::io::Result<()> {
        if stored != self.last {
            return Err(io_error(format!(
                "a commit stored journal number {stored}, but the last record is {}",
                self.last
            )));
        }
        self.committed = stored;
        let grown = self.allocated > INITIAL_SIZE;
        let header = Header {
            format: Format::V2,
            base: stored,
            salt: self.header.salt.wrapping_add(1),
            ..self.header.clone()
        };
        // The new header is taken only once it is written: if the write fails, appends go
        // on under the old one, which the next start still reads (it skips the records up
        // to `stored`, all committed).
        self.write_at(&header.bytes(), 0)?;
        self.header = header;
        self.tail = HEADER_LEN;
        if grown {
            self.map = None;
            self.file.set_len(INITIAL_SIZE)?;
            self.allocated = INITIAL_SIZE;
            self.remap();
        }
        Ok(())
    }

    /// Overwrites every byte after the header with zeros, so text the records held (a
    /// window title since redacted) is not left readable in the file; call it when the
    /// journal is empty.
    pub(crate) fn wipe(&mut self) -> std::io::Result<()> {
        let zeros = vec![0u8; SCRATCH_KEPT];
        let mut at = HEADER_LEN;
        while at < self.allocated {
            let n = (self.allocated - at).min(zeros.len() as u64) as usize;
            self.write_at(&zeros[..n], at)?;
            at += n as u64;
        }
        self.sync()
    }

    /// Makes what was appended durable (a stop that could not commit: the journal must
    /// then outlive a power cut too).
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        if let Some(map) = &self.map {
            map.flush()?;
        }
        self.file.sync_data()
    }
}

/// Whether a record numbered `base + 1` starts right after the header, whole or not: one
/// that did not count (torn by a power cut, or a provisional step of a rewrite cut short).
/// Its bytes stay in the file, so the header can be kept as it is only when there is none:
/// a new record of the same length would otherwise make the ones after it follow again.
fn next_record_written(file: &File, base: u64) -> bool {
    let mut head = [0u8; RECORD_HEAD];
    read_at(file, &mut head, HEADER_LEN).is_ok() && u64_at(&head, 8) == base.wrapping_add(1)
}

fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            done +=
                std::os::windows::fs::FileExt::seek_write(file, &bytes[done..], at + done as u64)?;
        }
        Ok(())
    }
}

fn read_at(file: &File, bytes: &mut [u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, bytes, at)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            match std::os::windows::fs::FileExt::seek_read(
                file,
                &mut bytes[done..],
                at + done as u64,
            )? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many records the journal of `db` reads back (without a cipher).
    fn records_in(db: &Path) -> usize {
        read(&journal_path(db), None)
            .unwrap()
            .unwrap()
            .records
            .len()
    }

    fn change(id: i64) -> Change {
        Change::DeleteEvent { id, bucketrow: 1 }
    }

    #[test]
    fn records_are_read_back_in_order_until_the_first_that_does_not_follow() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 7, None, None).unwrap();
        assert!(
            journal.map.is_some() || !journal.mappable,
            "appends go through the map where it is safe"
        );
        assert_eq!(
            std::fs::metadata(journal.path()).unwrap().len(),
            INITIAL_SIZE
        );
        journal.append(&[change(1)]).unwrap();
        journal.append(&[change(2), change(3)]).unwrap();
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!((read_back.database_id(), read_back.base()), ("abc", 7));
        assert_eq!(
            read_back.records,
            vec![(8, vec![change(1)]), (9, vec![change(2), change(3)])]
        );
        // Emptied: the old records stay behind the tail but do not follow the new base.
        assert_eq!(journal.unstored(), Some(9));
        journal.committed(9).unwrap();
        assert_eq!(journal.unstored(), None);
        journal.append(&[change(4)]).unwrap();
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(read_back.base(), 9);
        assert_eq!(read_back.records, vec![(10, vec![change(4)])]);
        // Going on after a restart appends after the last record.
        let mut again = Journal::open(&db, "abc", 9, Some(&read_back), None).unwrap();
        again.append(&[change(5)]).unwrap();
        assert_eq!(records_in(&db), 2);
        assert_eq!(again.unstored(), Some(11));
        // A torn record ends the journal.
        let mut bytes = std::fs::read(journal_path(&db)).unwrap();
        let at = read_back.tail as usize + RECORD_HEAD;
        bytes[at] ^= 0xff;
        std::fs::write(journal_path(&db), bytes).unwrap();
        assert_eq!(records_in(&db), 1);
    }

    /// The journal is read record by record, not whole: records larger than the read
    /// buffer come back whole, a length past the file's end ends it (no allocation of a
    /// garbage length), and a reopen at the same base (whose header write is skipped)
    /// leaves an empty journal that reads back at that base.
    #[test]
    fn large_records_and_a_garbage_length_are_read_as_they_should_be() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 0, None, None).unwrap();
        let big: Vec<Change> = (0..20_000).map(change).collect();
        journal.append(&big).unwrap();
        journal.append(&[change(1)]).unwrap();
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(read_back.records.len(), 2);
        assert_eq!(read_back.records[0].1.len(), 20_000);
        // A second record whose length runs past the end of the file.
        let mut bytes = std::fs::read(journal_path(&db)).unwrap();
        let second = HEADER_LEN as usize
            + RECORD_HEAD
            + u32::from_le_bytes(bytes[64..68].try_into().unwrap()) as usize;
        bytes[second..second + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(journal_path(&db), &bytes).unwrap();
        assert_eq!(records_in(&db), 1);
        drop(journal);
        // Emptied at base 2, then opened again at base 2: nothing to write.
        let mut journal = Journal::open(&db, "abc", 2, None, None).unwrap();
        journal.committed(2).unwrap();
        drop(journal);
        let before = std::fs::read(journal_path(&db)).unwrap();
        let again = Journal::open(&db, "abc", 2, None, None).unwrap();
        drop(again);
        assert_eq!(std::fs::read(journal_path(&db)).unwrap(), before);
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!((read_back.base(), read_back.records.len()), (2, 0));
    }

    fn secret(value: &str) -> Change {
        Change::SetKeyValue {
            key: "k".into(),
            value: value.into(),
            modified: 0,
        }
    }

    fn cipher(key: u8, prefix: u8) -> JournalCipher {
        JournalCipher::new(
            &zeroize::Zeroizing::new([key; super::super::journal_cipher::KEY_LEN]),
            [prefix; 16],
        )
    }

    /// With a cipher (an encrypted database) no record's text is in the file, the records
    /// read back with the key only, and a journal begun plain goes on encrypted.
    #[test]
    fn an_encrypted_journal_holds_no_text_and_reads_with_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut plain = Journal::open(&db, "abc", 0, None, None).unwrap();
        plain
            .append(&[secret("written before the update")])
            .unwrap();
        drop(plain);
        let before = read(&journal_path(&db), None).unwrap().unwrap();
        let mut journal = Journal::open(&db, "abc", 0, Some(&before), Some(cipher(7, 1))).unwrap();
        journal.append(&[secret("my secret window title")]).unwrap();
        journal
            .append_provisional(1, &[secret("a provisional secret")])
            .unwrap();
        journal.append_done(1).unwrap();
        let bytes = std::fs::read(journal_path(&db)).unwrap();
        for text in [&b"my secret window"[..], b"provisional secret"] {
            assert!(!bytes.windows(text.len()).any(|w| w == text));
        }
        let read_back = read(&journal_path(&db), Some(&cipher(7, 2)))
            .unwrap()
            .unwrap();
        assert_eq!(
            read_back.records,
            vec![
                (1, vec![secret("written before the update")]),
                (2, vec![secret("my secret window title")]),
                (4, vec![secret("a provisional secret")]),
            ]
        );
        assert!(read(&journal_path(&db), None).is_err(), "no key");
        assert!(
            read(&journal_path(&db), Some(&cipher(8, 1))).is_err(),
            "another database's key"
        );
    }

    #[test]
    fn a_rewrites_provisional_records_count_only_with_its_done_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 0, None, None).unwrap();
        journal
            .append_provisional(0, &[change(1), change(2)])
            .unwrap();
        journal.append(&[change(10)]).unwrap();
        journal.append_provisional(0, &[change(3)]).unwrap();
        // A rewrite cut short: none of it.
        let cut_short = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(cut_short.records, vec![(2, vec![change(10)])]);
        assert_eq!(cut_short.last, 3);
        journal.append_provisional(3, &[change(20)]).unwrap();
        journal.append_done(0).unwrap();
        // Done: all of its steps, where its done record stands; the other rewrite is
        // still cut short.
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(
            read_back.records,
            vec![
                (2, vec![change(10)]),
                (5, vec![change(1), change(2), change(3)])
            ]
        );
        // Going on after a restart numbers after the last record, provisional or not.
        let mut again = Journal::open(&db, "abc", 0, Some(&read_back), None).unwrap();
        again.append(&[change(30)]).unwrap();
        let records = read(&journal_path(&db), None).unwrap().unwrap().records;
        assert_eq!(records.last(), Some(&(6, vec![change(30)])));
    }

    #[test]
    fn a_journal_grows_ahead_of_need_and_gives_the_space_back_when_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "id", 0, None, None).unwrap();
        let big = Change::SetKeyValue {
            key: "k".into(),
            value: "x".repeat(1 << 20),
            modified: 0,
        };
        for _ in 0..20 {
            journal.append(std::slice::from_ref(&big)).unwrap();
        }
        assert!(journal.allocated - journal.tail >= HEADROOM);
        assert_eq!(
            read(journal.path(), None).unwrap().unwrap().records.len(),
            20
        );
        journal.committed(20).unwrap();
        assert_eq!(
            std::fs::metadata(journal.path()).unwrap().len(),
            INITIAL_SIZE
        );
    }

    /// A restored backup is the same database at an earlier commit: the journal opened for
    /// it names that lower base, and the records written after that number under the old
    /// header (already committed into the file that was replaced) never follow it, however
    /// often the journal is opened and emptied again.
    #[test]
    fn records_written_before_a_lower_base_never_follow_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 5, None, None).unwrap();
        for id in 6..=8 {
            journal.append(&[change(id)]).unwrap();
        }
        journal.committed(8).unwrap();
        drop(journal);
        // The backup at commit 5 is put back.
        for _ in 0..3 {
            let contents = read(&journal_path(&db), None).unwrap().unwrap();
            assert!(contents.records.is_empty(), "{:?}", contents.records);
            let mut journal = Journal::open(&db, "abc", 5, Some(&contents), None).unwrap();
            assert_eq!(journal.unstored(), None);
            journal.committed(5).unwrap();
        }
        // Going on at 5: only what is appended now follows.
        let mut journal = Journal::open(&db, "abc", 5, None, None).unwrap();
        journal.append(&[change(60)]).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(contents.records, vec![(6, vec![change(60)])]);
    }

    /// A record that moves the number without a change (a dry run's done record) must be
    /// stored by the next commit: the journal reports it as unstored.
    #[test]
    fn a_record_without_changes_still_has_to_be_stored() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 3, None, None).unwrap();
        assert_eq!(journal.unstored(), None);
        journal.append_done(3).unwrap();
        assert_eq!(journal.unstored(), Some(4));
        assert!(journal.committed(3).is_err(), "not the last record");
        journal.committed(4).unwrap();
        assert_eq!(journal.unstored(), None);
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!((contents.base(), contents.records.len()), (4, 0));
    }

    /// The "encrypted" bit is under the CRC: flipped, it ends the journal at that record
    /// (the records before it are kept), instead of putting the whole journal aside as
    /// undecryptable.
    #[test]
    fn a_flipped_encrypted_bit_ends_the_journal_at_that_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 0, None, None).unwrap();
        journal.append(&[change(1)]).unwrap();
        journal.append(&[change(2)]).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        drop(journal);
        let mut bytes = std::fs::read(journal_path(&db)).unwrap();
        let second = HEADER_LEN as usize + RECORD_HEAD + {
            let word = u32::from_le_bytes(bytes[64..68].try_into().unwrap());
            word as usize
        };
        assert_eq!(contents.records.len(), 2);
        bytes[second + 3] ^= 0x80;
        std::fs::write(journal_path(&db), &bytes).unwrap();
        let read_back = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(read_back.records, vec![(1, vec![change(1)])]);
    }

    /// A journal an earlier version left (version 1) is read, and one holding writes goes
    /// on in its version until it is emptied, then in version 2.
    #[test]
    fn a_version_1_journal_is_read_and_continued() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let header = Header {
            format: Format::V1,
            database_id: "abc".into(),
            base: 4,
            salt: 0,
        };
        let payload = serde_json::to_vec(&[change(1)]).unwrap();
        let len = payload.len() as u32;
        let mut bytes = header.bytes().to_vec();
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&checksum(&header, len, 5, &payload).to_le_bytes());
        bytes.extend_from_slice(&5u64.to_le_bytes());
        bytes.extend_from_slice(&payload);
        std::fs::write(journal_path(&db), &bytes).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(contents.records, vec![(5, vec![change(1)])]);
        let mut journal = Journal::open(&db, "abc", 4, Some(&contents), None).unwrap();
        journal.append(&[change(2)]).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(contents.records.len(), 2);
        journal.committed(6).unwrap();
        journal.append(&[change(3)]).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(contents.header.format, Format::V2);
        assert_eq!(contents.records, vec![(7, vec![change(3)])]);
    }

    /// A rewrite cut short left provisional records numbered after the base: a reopen at
    /// the same base must not keep the salt, or a new record of the same length would make
    /// the old ones after it follow again (and a new rewrite of the same number would take
    /// their changes with its own).
    #[test]
    fn records_that_did_not_count_never_follow_a_reopened_journal() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut journal = Journal::open(&db, "abc", 0, None, None).unwrap();
        journal.append_provisional(0, &[change(1)]).unwrap();
        journal.append_provisional(0, &[change(2)]).unwrap();
        drop(journal);
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert!(contents.records.is_empty());
        let mut journal = Journal::open(&db, "abc", 0, None, None).unwrap();
        // The same length as the first provisional record, under the same number.
        journal.append_provisional(0, &[change(3)]).unwrap();
        journal.append_done(0).unwrap();
        let contents = read(&journal_path(&db), None).unwrap().unwrap();
        assert_eq!(contents.records, vec![(2, vec![change(3)])]);
    }
}
