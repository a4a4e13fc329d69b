//! The journal of acknowledged writes: `<database>.journal`, where every write the worker
//! acknowledges is appended before its answer goes out, so that a process that dies at any
//! instant (a kill, a crash, a stop on a full disk) loses none of them, while the database
//! itself still commits once per group (every 15 s; `worker/`).
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
//!
//! One file per concept: this one writes (the [`Journal`] a served database appends to),
//! `read.rs` reads back, `format.rs` has the bytes, `cipher.rs` the encryption.

mod cipher;
mod format;
mod read;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::store::change::Change;
pub(crate) use cipher::{JournalCipher, KEY_LEN, NONCE_LEN};
pub(crate) use format::journal_path;
use format::{
    checksum, fresh_salt, io_error, u64_at, Format, Header, Payload, ENCRYPTED, HEADER_LEN,
    RECORD_HEAD, SCRATCH_KEPT,
};
pub(crate) use read::{identity, read, Contents};

/// The space reserved when the journal is made, and kept when it is emptied.
pub(crate) const INITIAL_SIZE: u64 = 4 << 20;

/// When less than this is left free after an append, the journal grows (while it can).
const HEADROOM: u64 = 1 << 20;

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

    /// The bytes that hold records: the header and the records not committed yet (what
    /// follows is preallocated room).
    pub(crate) fn used(&self) -> u64 {
        self.tail
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
        Option<&zeroize::Zeroizing<[u8; cipher::KEY_LEN]>>,
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
