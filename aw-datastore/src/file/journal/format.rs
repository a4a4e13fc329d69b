//! The journal's bytes: its header, the framing of its records and their checksums, and
//! what a record's payload holds (the format is described in the module docs of
//! `journal/`).

use std::path::{Path, PathBuf};

use crate::file::names::with_suffix;
use crate::store::change::Change;

/// The largest record buffer kept between appends (and the reader's buffer).
pub(super) const SCRATCH_KEPT: usize = 64 << 10;

/// The header's length.
pub(super) const HEADER_LEN: u64 = 64;
/// The longest database id a header holds (ours are 32 hex digits).
pub(super) const MAX_ID_LEN: usize = 35;

/// A journal file's version, named by its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `AWJRNL01`: no salt; the encrypted flag outside the CRC.
    V1,
    /// `AWJRNL02`: salted records, every framing bit under the CRC.
    V2,
}

impl Format {
    pub(super) fn magic(self) -> &'static [u8; 8] {
        match self {
            Format::V1 => b"AWJRNL01",
            Format::V2 => b"AWJRNL02",
        }
    }
}

/// What a header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) format: Format,
    /// The id of the database the records were written for (at most [`MAX_ID_LEN`] bytes).
    pub(super) database_id: String,
    /// The number committed when the journal was last emptied.
    pub(super) base: u64,
    /// Covered by each record's CRC (version 2; 0 in version 1).
    pub(super) salt: u64,
}

impl Header {
    pub(super) fn bytes(&self) -> [u8; HEADER_LEN as usize] {
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
    pub(super) fn parse(h: &[u8; HEADER_LEN as usize]) -> Option<Header> {
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
    pub(super) fn names(&self, id: &str) -> bool {
        let limit = match self.format {
            Format::V1 => 40,
            Format::V2 => MAX_ID_LEN,
        };
        let id = id.as_bytes();
        self.database_id.as_bytes() == &id[..id.len().min(limit)]
    }
}

/// The little-endian `u64` at `at`.
pub(super) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A salt for a journal that has none to go on from: random (the standard library's
/// hasher keys are drawn from the operating system once per process, and each hasher
/// built from a new `RandomState` differs).
pub(super) fn fresh_salt() -> u64 {
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
pub(super) const RECORD_HEAD: usize = 16;
/// The length word's top bit: the payload is encrypted (`journal_cipher.rs`). A record says
/// so itself, so a journal written by a version that did not encrypt (or before a
/// database was encrypted) is still read.
pub(super) const ENCRYPTED: u32 = 1 << 31;

/// `<database>.journal`.
pub(crate) fn journal_path(db: &Path) -> PathBuf {
    with_suffix(db, ".journal")
}

/// What one record's payload holds.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub(super) enum Payload {
    /// One request's changes.
    Changes(Vec<Change>),
    /// A step of rewrite `rewrite`: kept only if its done record follows.
    Provisional { rewrite: u64, changes: Vec<Change> },
    /// Rewrite `rewrite_done` is done: its provisional records count.
    Done { rewrite_done: u64 },
}

/// A record's CRC: in version 2 over the header's salt and every framing bit (so a flipped
/// "encrypted" bit ends the journal there, like any torn record); in version 1 over the
/// sequence number and the payload.
pub(super) fn checksum(header: &Header, length_word: u32, seq: u64, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    if header.format == Format::V2 {
        hasher.update(&header.salt.to_le_bytes());
        hasher.update(&length_word.to_le_bytes());
    }
    hasher.update(&seq.to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

/// An I/O error with `text`.
pub(super) fn io_error(text: String) -> std::io::Error {
    std::io::Error::other(text)
}
