//! Derived state kept beside the database (`<database>.derived`): bytes a caller worked
//! out from the data (the server keeps its query-result cache there), saved while the
//! server runs and at a clean stop, and handed back at the next start only when every
//! write since it was saved is known, with what those writes changed.
//!
//! **What changed since.** A save names the journal number of the last write its state
//! had heard of. Every commit keeps in the database what its writes changed, tagged with
//! its journal number, and so do the journal's writes a crash left to apply at the next
//! open (`store/touch_log.rs`). The next open hands back the regions tagged above the
//! saved number ([`Slot::take`]), for the caller to drop what they reach.
//!
//! **No write by anyone else.** Another program (the reference server opens the same file)
//! writes nothing there, so its writes between two runs must be seen another way: by the
//! files themselves. A *fingerprint* of the database and its WAL (device, inode, length,
//! modification and status-change times in nanoseconds of each, or that there was no WAL)
//! is taken at a clean stop, with the connection closed, and written in the file; while
//! the server runs, each commit writes the fingerprint as it left the files into
//! `<database>.derived-commit` (a kill leaves the last one), the database file there by its
//! identity only (`Fingerprint::while_serving`: checkpoints change it). At the next open the same
//! fingerprint is taken before SQLite touches either file, and the state is used only if
//! it equals the stop's or the last commit's: any other write (another program, a restore
//! or salvage that put another file in place) and the state is dropped unread. The
//! status-change time cannot be set back by a program, so a write that restored the
//! modification time still shows. While the server runs, a commit of another connection
//! shows in SQLite's `data_version` and drops every derived result (`Store::before_commit`).
//! The state is dropped too when the open migrated the file or could not apply the
//! journal's writes.
//!
//! **Never wrong, at worst empty.** It is written to a temporary name and renamed over the
//! old one, and carries a CRC-32 of its payload (plain databases) or is encrypted and
//! authenticated with XChaCha20-Poly1305 under the journal's key (encrypted databases,
//! which keep that key inside the database: `journal_cipher.rs`). A torn, changed or
//! foreign file reads as no state. It has the database's file mode, lives beside the
//! database (never in a sync folder), and is neither backed up nor synced: it is a cache.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::journal::{JournalCipher, NONCE_LEN};
use crate::file::names::with_suffix;
use crate::store::Changed;

/// The file's first bytes: what it is, and the layout's version.
const MAGIC: &[u8; 12] = b"aw-derived 2";

/// The first bytes of `<database>.derived-commit`.
const COMMIT_MAGIC: &[u8; 19] = b"aw-derived commit 1";

/// Flag byte: the payload is encrypted (nonce, ciphertext, tag) instead of followed by a
/// CRC-32.
const ENCRYPTED: u8 = 1;

/// The least [`Slot::allowance`] gives, whatever the database's size.
const MIN_ALLOWANCE: usize = 16 << 20;

/// Where a save writes before it renames the file into place.
const TEMPORARY: &str = ".derived.new";

/// Where a commit's stamp is written before it is renamed into place.
const COMMIT_TEMPORARY: &str = ".derived-commit.new";

/// `<database>.derived`.
fn derived_path(db: &Path) -> PathBuf {
    with_suffix(db, ".derived")
}

/// `<database>.derived-commit`: the fingerprint the last commit left.
fn commit_path(db: &Path) -> PathBuf {
    with_suffix(db, ".derived-commit")
}

/// The header's length: the magic, a fingerprint (with a flag: whether there is one) and
/// the journal number.
const HEADER_LEN: usize = MAGIC.len() + 1 + FINGERPRINT_LEN + 8;

/// One file's identity and last change, as far as the file system tells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified_ns: i64,
    changed_ns: i64,
}

/// The database and its WAL as they were at one moment (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    db: Stamp,
    /// `None`: there was no WAL.
    wal: Option<Stamp>,
}

/// Bytes of a fingerprint as written: two stamps of five numbers and a WAL flag.
const FINGERPRINT_LEN: usize = 2 * 5 * 8 + 1;

fn stamp(path: &Path) -> std::io::Result<Option<Stamp>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(Some(Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            changed_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
        }))
    }
    #[cfg(not(unix))]
    {
        let modified_ns = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Ok(Some(Stamp {
            len: meta.len(),
            modified_ns,
            ..Stamp::default()
        }))
    }
}

/// The fingerprint of `db` and its WAL now; `None` when the database is not there (or
/// cannot be looked at: then nothing is kept or handed back).
pub(crate) fn fingerprint(db: &Path) -> Option<Fingerprint> {
    let db_stamp = stamp(db).ok()??;
    let wal = stamp(&with_suffix(db, "-wal")).ok()?;
    Some(Fingerprint { db: db_stamp, wal })
}

impl Fingerprint {
    /// What a commit's stamp compares: the database file by its identity only (device and
    /// inode), the WAL whole. While the server runs, every write goes to the WAL first
    /// (this program's and any other's: the file is in WAL mode for every SQLite that
    /// opens it), while the database file changes under a checkpoint too, which copies
    /// the WAL's committed pages and changes no data (`checkpointer.rs` runs them after
    /// the commit's stamp). A program that checkpoints and removes the WAL leaves none,
    /// which no stamp taken while serving has.
    fn while_serving(self) -> Fingerprint {
        Fingerprint {
            db: Stamp {
                device: self.db.device,
                inode: self.db.inode,
                ..Stamp::default()
            },
            wal: self.wal,
        }
    }

    fn to_bytes(self) -> [u8; FINGERPRINT_LEN] {
        let mut out = [0u8; FINGERPRINT_LEN];
        let wal = self.wal.unwrap_or_default();
        let numbers = [
            self.db.device,
            self.db.inode,
            self.db.len,
            self.db.modified_ns as u64,
            self.db.changed_ns as u64,
            wal.device,
            wal.inode,
            wal.len,
            wal.modified_ns as u64,
            wal.changed_ns as u64,
        ];
        for (slot, n) in out.chunks_exact_mut(8).zip(numbers) {
            slot.copy_from_slice(&n.to_le_bytes());
        }
        out[FINGERPRINT_LEN - 1] = u8::from(self.wal.is_some());
        out
    }
}

/// Writes `state` as the derived state of `db`, having heard of every write up to journal
/// number `seq`; `stop` is the fingerprint of a clean stop (taken after the last write,
/// with the database closed). Encrypted with `cipher` (the database's journal key, a nonce
/// prefix drawn at this open) when given. Replaces any earlier state whole.
pub(crate) fn save(
    db: &Path,
    stop: Option<Fingerprint>,
    seq: u64,
    state: &[u8],
    cipher: Option<&mut JournalCipher>,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(HEADER_LEN + state.len() + 64);
    out.extend_from_slice(MAGIC);
    out.push(u8::from(stop.is_some()));
    out.extend_from_slice(&stop.map_or([0; FINGERPRINT_LEN], Fingerprint::to_bytes));
    out.extend_from_slice(&seq.to_le_bytes());
    match cipher {
        Some(cipher) => {
            out.push(ENCRYPTED);
            let start = out.len();
            out.extend_from_slice(&[0u8; NONCE_LEN]);
            out.extend_from_slice(state);
            cipher.encrypt(&mut out, start)?;
        }
        None => {
            out.push(0);
            out.extend_from_slice(state);
            out.extend_from_slice(&crc32fast::hash(state).to_le_bytes());
        }
    }
    write_beside(db, &derived_path(db), TEMPORARY, &out)
}

/// Writes `bytes` as `path` (beside `db`, with its mode) through the temporary `suffix`.
fn write_beside(db: &Path, path: &Path, suffix: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = with_suffix(db, suffix);
    crate::file::names::remove_if_there(&temporary)?;
    let mut file = super::modes::create_file(&temporary, db)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temporary, path)
}

/// After a commit: writes the fingerprint of `db` as the commit left it into
/// `<db>.derived-commit` (see the module docs). A failure only costs the state after a
/// crash: the next open then finds no fingerprint that matches.
pub(crate) fn stamp_commit(db: &Path) {
    let Some(fp) = fingerprint(db).map(Fingerprint::while_serving) else {
        return;
    };
    let mut out = COMMIT_MAGIC.to_vec();
    out.extend_from_slice(&fp.to_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    if let Err(e) = write_beside(db, &commit_path(db), COMMIT_TEMPORARY, &out) {
        log::debug!("Cannot stamp {}: {e}", commit_path(db).display());
    }
}

/// The fingerprint the last commit stamped, if the stamp is whole.
fn commit_stamp(db: &Path) -> Option<[u8; FINGERPRINT_LEN]> {
    let bytes = std::fs::read(commit_path(db)).ok()?;
    let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes().as_slice() != crc {
        return None;
    }
    body.strip_prefix(COMMIT_MAGIC.as_slice())?.try_into().ok()
}

/// Whether the state kept for `db` may be used with the files as this open found them
/// (`now`, taken before SQLite touched them): its journal number if so (see the module
/// docs). Reads only the header and the commit stamp.
pub(crate) fn examine(db: &Path, now: Fingerprint) -> Option<u64> {
    let mut header = [0u8; HEADER_LEN];
    std::fs::File::open(derived_path(db))
        .and_then(|mut f| f.read_exact(&mut header))
        .ok()?;
    let rest = header.strip_prefix(MAGIC.as_slice())?;
    let (&stopped, rest) = rest.split_first()?;
    let (stop, seq) = rest.split_at_checked(FINGERPRINT_LEN)?;
    let unchanged = (stopped == 1 && stop == now.to_bytes().as_slice())
        || commit_stamp(db) == Some(now.while_serving().to_bytes());
    if !unchanged {
        log::info!(
            "The state kept beside {} is not for the files as they are now (written since \
             its stop or last commit): not used",
            db.display()
        );
    }
    unchanged.then(|| u64::from_le_bytes(seq.try_into().unwrap_or_default()))
}

/// The payload of the state of `db` that names journal number `seq`, if it reads back
/// whole.
fn load(db: &Path, seq: u64, cipher: Option<&JournalCipher>) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(derived_path(db))
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .ok()?;
    decode(&bytes, seq, cipher)
}

/// The payload of a file's bytes, if they name `seq` and are whole.
fn decode(bytes: &[u8], seq: u64, cipher: Option<&JournalCipher>) -> Option<Vec<u8>> {
    let (header, rest) = bytes.split_at_checked(HEADER_LEN)?;
    if !header.starts_with(MAGIC) || header[HEADER_LEN - 8..] != seq.to_le_bytes() {
        return None;
    }
    let (&flag, payload) = rest.split_first()?;
    match (flag, cipher) {
        (ENCRYPTED, Some(cipher)) => cipher.decrypt(payload),
        (0, None) => {
            let (state, crc) = payload.split_at_checked(payload.len().checked_sub(4)?)?;
            (crc32fast::hash(state).to_le_bytes().as_slice() == crc).then(|| state.to_vec())
        }
        // Encrypted without a key, or plain with one: another build's file.
        _ => None,
    }
}

/// What an open found for the derived state: the journal number of the state it may hand
/// back (`None`: none may be) and what changed since, an encrypted database's cipher for
/// the file, and SQLite's `data_version` of the worker's connection then.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub valid: Option<u64>,
    pub changed: Vec<Changed>,
    pub cipher: Option<JournalCipher>,
    pub data_version: Option<i64>,
}

/// The state kept beside the database, handed back at the next open: the bytes, and what
/// the writes since they were saved changed (drop what they reach).
#[derive(Debug)]
pub struct KeptState {
    /// As the producer made them.
    pub bytes: Vec<u8>,
    /// The regions written since.
    pub changed: Vec<Changed>,
}

/// Makes the bytes of the derived state (while serving, and at a clean stop); gets the
/// most it may return: a twentieth of the database file, at least 16 MiB.
pub type Producer = Box<dyn Fn(usize) -> Vec<u8> + Send>;

/// The derived state between the worker and the handles: what the open found (the state
/// it may hand back is read when a handle takes it), and what makes the state to save.
#[derive(Default)]
pub(crate) struct Slot {
    /// The database.
    db: PathBuf,
    found: Found,
    producer: Option<Producer>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("found", &self.found)
            .field("producer", &self.producer.is_some())
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// What the open of `db` found.
    pub(crate) fn opened(&mut self, db: &Path, found: Found) {
        self.db = db.to_path_buf();
        self.found = found;
    }

    /// Whether the open found state it may hand back (not yet taken; the state itself is
    /// read and checked only when taken).
    pub(crate) fn is_pending(&self) -> bool {
        self.found.valid.is_some()
    }

    /// The state the open found valid, with what changed since, once.
    pub(crate) fn take(&mut self) -> Option<KeptState> {
        let seq = self.found.valid.take()?;
        let bytes = load(&self.db, seq, self.found.cipher.as_ref());
        if bytes.is_none() {
            log::info!(
                "The derived state of {} does not read back whole",
                self.db.display()
            );
        }
        Some(KeptState {
            bytes: bytes?,
            changed: std::mem::take(&mut self.found.changed),
        })
    }

    /// Makes saves keep what `producer` makes.
    pub(crate) fn keep(&mut self, producer: Producer) {
        self.producer = Some(producer);
    }

    /// The most bytes of state kept for `db`: a twentieth of the database file, so the
    /// cache adds at most 5 % to what a large history takes on disk, but at least
    /// [`MIN_ALLOWANCE`], which a year of per-day dashboard results needs (about 7 MB:
    /// a year's database is some 90 MB, whose twentieth kept only 210 of its 365 days).
    fn allowance(db: &Path) -> usize {
        std::fs::metadata(db).map_or(0, |m| {
            usize::try_from(m.len() / 20)
                .unwrap_or(usize::MAX)
                .max(MIN_ALLOWANCE)
        })
    }

    /// While serving: saves what the producer makes now, having heard of every write up to
    /// journal number `seq` (asked of the worker just before). Whether it was saved.
    pub(crate) fn save_now(&mut self, seq: u64) -> bool {
        // Not handed back from now on: the file is about to be replaced.
        self.found.valid = None;
        let Some(producer) = &self.producer else {
            return false;
        };
        let state = producer(Slot::allowance(&self.db));
        !state.is_empty() && self.write(None, seq, &state)
    }

    /// Writes `state`; on failure removes what may be left.
    fn write(&mut self, stop: Option<Fingerprint>, seq: u64, state: &[u8]) -> bool {
        let db = self.db.as_path();
        match save(db, stop, seq, state, self.found.cipher.as_mut()) {
            Ok(()) => true,
            Err(e) => {
                log::warn!("Cannot keep the derived state beside {}: {e}", db.display());
                discard(db);
                false
            }
        }
    }

    /// At a clean stop, with the database closed and every write up to journal number
    /// `seq` committed: saves the producer's state for the file as it is now; without a
    /// producer or a journal, with nothing to keep, or when `data_version` (the worker
    /// connection's just before it closed) says another connection committed while this
    /// one served (a write no cache of ours heard of), removes any older state. (The
    /// worker holds a write transaction nearly all the time, so another program's write
    /// mostly waits until the server stops; a real-binary attempt waited over a minute.
    /// The check covers the instants it does not.)
    pub(crate) fn save_at_stop(&mut self, data_version: Option<i64>, seq: Option<u64>) {
        self.found.valid = None;
        let db = self.db.clone();
        let unwritten = data_version.is_some() && data_version == self.found.data_version;
        // The fingerprint first: the shorter the time from the close, the less another
        // program can slip in unseen.
        let (Some(producer), Some(fp), Some(seq), true) =
            (&self.producer, fingerprint(&db), seq, unwritten)
        else {
            discard(&db);
            return;
        };
        let state = producer(Slot::allowance(&db));
        if state.is_empty() || !self.write(Some(fp), seq, &state) {
            discard(&db);
        }
    }
}

/// Removes the derived state of `db` (it may be out of date), the last commit's stamp,
/// and a temporary copy a save left (a full disk, a kill before the rename).
pub(crate) fn discard(db: &Path) {
    for path in [
        derived_path(db),
        with_suffix(db, TEMPORARY),
        commit_path(db),
        with_suffix(db, COMMIT_TEMPORARY),
    ] {
        if let Err(e) = crate::file::names::remove_if_there(&path) {
            log::warn!("Cannot remove {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::journal::KEY_LEN;
    use zeroize::Zeroizing;

    fn cipher(key: u8) -> JournalCipher {
        JournalCipher::new(&Zeroizing::new([key; KEY_LEN]), [key; 16])
    }

    fn database(dir: &Path) -> PathBuf {
        let db = dir.join("sqlite.db");
        std::fs::write(&db, b"database").unwrap();
        db
    }

    /// A database with the plain state "cache" saved at a stop, naming journal number 7.
    fn saved(dir: &Path) -> PathBuf {
        let db = database(dir);
        save(&db, fingerprint(&db), 7, b"cache", None).unwrap();
        db
    }

    fn now(db: &Path) -> Fingerprint {
        fingerprint(db).unwrap()
    }

    #[test]
    fn the_state_comes_back_for_the_same_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = saved(dir.path());
        assert_eq!(examine(&db, now(&db)), Some(7));
        assert_eq!(load(&db, 7, None).as_deref(), Some(&b"cache"[..]));
        assert_eq!(load(&db, 8, None), None);
        // A WAL appeared (another program wrote, or a crash left one): not the stop's.
        std::fs::write(with_suffix(&db, "-wal"), b"w").unwrap();
        assert_eq!(examine(&db, now(&db)), None);
    }

    #[test]
    fn a_write_that_keeps_the_length_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let db = saved(dir.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&db, b"DATABASE").unwrap();
        assert_eq!(examine(&db, now(&db)), None);
    }

    /// Saved while serving (no stop's fingerprint): valid only while the files are as the
    /// last commit stamped them.
    #[test]
    fn state_saved_while_serving_holds_for_the_last_commit_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        save(&db, None, 3, b"cache", None).unwrap();
        assert_eq!(examine(&db, now(&db)), None);
        std::fs::write(with_suffix(&db, "-wal"), b"commit 1").unwrap();
        stamp_commit(&db);
        assert_eq!(examine(&db, now(&db)), Some(3));
        // A write after the last commit (another program's, after a kill): not valid.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(with_suffix(&db, "-wal"), b"commit 2").unwrap();
        assert_eq!(examine(&db, now(&db)), None);
        stamp_commit(&db);
        assert_eq!(examine(&db, now(&db)), Some(3));
        // A torn stamp is no stamp.
        let stamp = commit_path(&db);
        let bytes = std::fs::read(&stamp).unwrap();
        std::fs::write(&stamp, &bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(examine(&db, now(&db)), None);
        discard(&db);
        assert!(!stamp.exists() && !derived_path(&db).exists());
    }

    #[test]
    fn a_torn_or_foreign_file_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let fp = fingerprint(&db);
        save(&db, fp, 9, b"secret cache", Some(&mut cipher(7))).unwrap();
        let bytes = std::fs::read(derived_path(&db)).unwrap();
        assert!(!bytes.windows(6).any(|w| w == b"secret"));
        assert_eq!(
            decode(&bytes, 9, Some(&cipher(7))).as_deref(),
            Some(&b"secret cache"[..])
        );
        assert_eq!(decode(&bytes, 9, Some(&cipher(8))), None);
        assert_eq!(decode(&bytes, 9, None), None);
        assert_eq!(decode(&bytes[..bytes.len() - 1], 9, Some(&cipher(7))), None);
        save(&db, fp, 9, b"plain cache", None).unwrap();
        let mut bytes = std::fs::read(derived_path(&db)).unwrap();
        assert_eq!(decode(&bytes, 9, Some(&cipher(7))), None);
        let last = bytes.len() - 6;
        bytes[last] ^= 1;
        assert_eq!(decode(&bytes, 9, None), None);
        assert_eq!(decode(&bytes[..10], 9, None), None);
        assert_eq!(decode(b"", 9, None), None);
    }
}
