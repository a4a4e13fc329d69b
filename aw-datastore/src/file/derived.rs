//! Derived state kept beside the database between runs (`<database>.derived`): bytes a
//! caller worked out from the data (the server keeps its query-result cache there), saved
//! at a clean stop and handed back at the next start only if the database is, to the byte,
//! the one they were worked out from.
//!
//! **Exactly the same file.** SQLite's header change counter is not kept in WAL mode, and
//! another program (the reference server opens the same file) may write between two runs.
//! So the file records a *fingerprint* of the database and its WAL as the stop left them:
//! device, inode, length, modification and status-change times (nanoseconds) of each, or
//! that there was no WAL. At the next open the same fingerprint is taken before SQLite
//! touches either file; any difference (a write by any program, a restore or salvage that
//! put another file in place, a crash that left a WAL) and the state is dropped unread.
//! The status-change time cannot be set back by a program, so a write that restored the
//! modification time still shows. The state is dropped too when the open applied
//! acknowledged writes from the journal (they are in no fingerprint), or migrated the file.
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

/// The file's first bytes: what it is, and the layout's version.
const MAGIC: &[u8; 12] = b"aw-derived 1";

/// Flag byte: the payload is encrypted (nonce, ciphertext, tag) instead of followed by a
/// CRC-32.
const ENCRYPTED: u8 = 1;

/// The least [`Slot::allowance`] gives, whatever the database's size.
const MIN_ALLOWANCE: usize = 16 << 20;

/// Where a save writes before it renames the file into place.
const TEMPORARY: &str = ".derived.new";

/// `<database>.derived`.
fn derived_path(db: &Path) -> PathBuf {
    with_suffix(db, ".derived")
}

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

/// Writes `state` as the derived state of `db`, valid for `fingerprint` (taken after the
/// last write, with the database closed); encrypted with `cipher` (the database's journal
/// key, a nonce prefix drawn at this open) when given. Replaces any earlier state whole.
pub(crate) fn save(
    db: &Path,
    fingerprint: Fingerprint,
    state: &[u8],
    cipher: Option<&mut JournalCipher>,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(MAGIC.len() + FINGERPRINT_LEN + state.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&fingerprint.to_bytes());
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
    let path = derived_path(db);
    let temporary = with_suffix(db, TEMPORARY);
    crate::file::names::remove_if_there(&temporary)?;
    let mut file = super::modes::create_file(&temporary, db)?;
    file.write_all(&out)?;
    drop(file);
    std::fs::rename(&temporary, &path)
}

/// The derived state of `db` if it was saved for exactly `fingerprint` (taken at this open,
/// before SQLite touched the files) and reads back whole; `None` otherwise, and a file that
/// does not match is removed.
pub(crate) fn load(
    db: &Path,
    fingerprint: Fingerprint,
    cipher: Option<&JournalCipher>,
) -> Option<Vec<u8>> {
    let path = derived_path(db);
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .ok()?;
    let state = decode(&bytes, fingerprint, cipher);
    if state.is_none() {
        log::info!(
            "The derived state {} is not for this database as it is now; dropped",
            path.display()
        );
        discard(db);
    }
    state
}

/// The payload of a file's bytes, if they are for `fingerprint` and whole.
fn decode(
    bytes: &[u8],
    fingerprint: Fingerprint,
    cipher: Option<&JournalCipher>,
) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (recorded, rest) = rest.split_at_checked(FINGERPRINT_LEN)?;
    if recorded != fingerprint.to_bytes().as_slice() {
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

/// What an open found for the derived state: the fingerprint the saved state must have
/// been saved for to be handed back (`None`: none may be), an encrypted database's cipher
/// for the file, and SQLite's `data_version` of the worker's connection then.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub valid_for: Option<Fingerprint>,
    pub cipher: Option<JournalCipher>,
    pub data_version: Option<i64>,
}

/// Makes the bytes of the derived state at a clean stop; gets the most it may return (see
/// [`Slot::allowance`]).
pub(crate) type Producer = Box<dyn FnOnce(usize) -> Vec<u8> + Send>;

/// The derived state between the worker and the handles: what the open found (the state
/// it may hand back is read when a handle takes it), and what makes the state to save at
/// the stop.
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

    /// Whether the open found the file as the state was saved for (not yet taken).
    pub(crate) fn is_pending(&self) -> bool {
        self.found.valid_for.is_some()
    }

    /// The state saved for the file as this open found it, once.
    pub(crate) fn take(&mut self) -> Option<Vec<u8>> {
        let fingerprint = self.found.valid_for.take()?;
        load(&self.db, fingerprint, self.found.cipher.as_ref())
    }

    /// Makes the clean stop save what `producer` makes.
    pub(crate) fn keep_at_stop(&mut self, producer: Producer) {
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

    /// At a clean stop, with the database closed: saves the producer's state for the file
    /// as it is now; without a producer, with nothing to keep, or when `data_version` (the
    /// worker connection's just before it closed) says another connection committed while
    /// this one served (a write no cache of ours heard of), removes any older state. (The
    /// worker holds a write transaction nearly all the time, so another program's write
    /// mostly waits until the server stops; a real-binary attempt waited over a minute.
    /// The check covers the instants it does not.)
    pub(crate) fn save_at_stop(&mut self, data_version: Option<i64>) {
        // Not handed back from now on: the file is about to be replaced.
        self.found.valid_for = None;
        let db = self.db.as_path();
        let producer = self.producer.take();
        let unwritten = data_version.is_some() && data_version == self.found.data_version;
        // The fingerprint first: the shorter the time from the close, the less another
        // program can slip in unseen.
        let (Some(producer), Some(fp), true) = (producer, fingerprint(db), unwritten) else {
            discard(db);
            return;
        };
        let state = producer(Slot::allowance(db));
        let saved = if state.is_empty() {
            Err(std::io::Error::other("nothing to keep"))
        } else {
            save(db, fp, &state, self.found.cipher.as_mut())
        };
        if let Err(e) = saved {
            if !state.is_empty() {
                log::warn!("Cannot keep the derived state beside {}: {e}", db.display());
            }
            discard(db);
        }
    }
}

/// Removes the derived state of `db` (it may be out of date), and a temporary copy a
/// save left (a full disk, a kill before the rename).
pub(crate) fn discard(db: &Path) {
    for path in [derived_path(db), with_suffix(db, TEMPORARY)] {
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

    /// A database with the plain state "cache" saved for it as it is.
    fn saved(dir: &Path) -> PathBuf {
        let db = database(dir);
        save(&db, fingerprint(&db).unwrap(), b"cache", None).unwrap();
        db
    }

    #[test]
    fn the_state_comes_back_for_the_same_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = saved(dir.path());
        assert_eq!(
            load(&db, fingerprint(&db).unwrap(), None).as_deref(),
            Some(&b"cache"[..])
        );
        // A WAL appeared (another program wrote, or a crash left one): dropped.
        std::fs::write(with_suffix(&db, "-wal"), b"w").unwrap();
        assert_eq!(load(&db, fingerprint(&db).unwrap(), None), None);
        assert!(!derived_path(&db).exists());
    }

    #[test]
    fn a_write_that_keeps_the_length_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let db = saved(dir.path());
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&db, b"DATABASE").unwrap();
        assert_eq!(load(&db, fingerprint(&db).unwrap(), None), None);
    }

    #[test]
    fn a_torn_or_foreign_file_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let fp = fingerprint(&db).unwrap();
        save(&db, fp, b"secret cache", Some(&mut cipher(7))).unwrap();
        let bytes = std::fs::read(derived_path(&db)).unwrap();
        assert!(!bytes.windows(6).any(|w| w == b"secret"));
        assert_eq!(
            decode(&bytes, fp, Some(&cipher(7))).as_deref(),
            Some(&b"secret cache"[..])
        );
        assert_eq!(decode(&bytes, fp, Some(&cipher(8))), None);
        assert_eq!(decode(&bytes, fp, None), None);
        assert_eq!(
            decode(&bytes[..bytes.len() - 1], fp, Some(&cipher(7))),
            None
        );
        save(&db, fp, b"plain cache", None).unwrap();
        let mut bytes = std::fs::read(derived_path(&db)).unwrap();
        assert_eq!(decode(&bytes, fp, Some(&cipher(7))), None);
        let last = bytes.len() - 6;
        bytes[last] ^= 1;
        assert_eq!(decode(&bytes, fp, None), None);
        assert_eq!(decode(&bytes[..10], fp, None), None);
        assert_eq!(decode(b"", fp, None), None);
    }
}
