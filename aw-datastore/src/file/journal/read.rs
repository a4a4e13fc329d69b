//! Reading a journal back: its records after the base, in order, up to the first that
//! does not follow (a torn tail, records of before the last emptying).

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

use super::cipher::JournalCipher;
use super::format::{
    checksum, io_error, u64_at, Header, Payload, ENCRYPTED, HEADER_LEN, RECORD_HEAD, SCRATCH_KEPT,
};
use crate::store::change::Change;

/// What a journal file holds.
#[derive(Debug)]
pub(crate) struct Contents {
    /// Its header: the database it was written for, its base and salt.
    pub(super) header: Header,
    /// Its records after the base, in order: (sequence number, the changes of one request).
    /// A finished rewrite's changes are one record, numbered as its done record.
    pub records: Vec<(u64, Vec<Change>)>,
    /// The number of the last record read, provisional ones included.
    pub(super) last: u64,
    /// Where the next record goes.
    pub(super) tail: u64,
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
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let mut reader = Reader {
        bytes: std::io::BufReader::with_capacity(SCRATCH_KEPT, file),
        size,
        path,
        cipher,
    };
    let mut h = [0u8; HEADER_LEN as usize];
    if !reader.fill(&mut h)? {
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
    let mut provisional: HashMap<u64, Vec<Change>> = HashMap::new();
    while let Some((seq, len, payload)) = reader.next_record(&contents)? {
        match payload {
            Payload::Changes(changes) => contents.records.push((seq, changes)),
            Payload::Provisional { rewrite, changes } => {
                provisional.entry(rewrite).or_default().extend(changes);
            }
            Payload::Done { rewrite_done } => {
                let changes = provisional.remove(&rewrite_done).unwrap_or_default();
                contents.records.push((seq, changes));
            }
        }
        contents.last = seq;
        contents.tail += (RECORD_HEAD + len) as u64;
    }
    Ok(Some(contents))
}

/// A journal file being read from its start.
struct Reader<'a> {
    bytes: std::io::BufReader<File>,
    /// The file's size: no record reaches past it.
    size: u64,
    path: &'a Path,
    cipher: Option<&'a JournalCipher>,
}

impl Reader<'_> {
    /// Fills `buf`, or says the file ended first.
    fn fill(&mut self, buf: &mut [u8]) -> std::io::Result<bool> {
        match self.bytes.read_exact(buf) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The next record after what `contents` read so far (its number, payload length and
    /// payload); `None` where the journal ends: a record whose length is zero or past the
    /// file, whose number does not follow, whose CRC does not match, or whose payload is
    /// not one. An encrypted record that does not decrypt is an error.
    fn next_record(
        &mut self,
        contents: &Contents,
    ) -> std::io::Result<Option<(u64, usize, Payload)>> {
        let mut head = [0u8; RECORD_HEAD];
        if !self.fill(&mut head)? {
            return Ok(None);
        }
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
        let room = self.size.saturating_sub(contents.tail + RECORD_HEAD as u64);
        if len == 0 || seq != contents.last + 1 || len as u64 > room {
            return Ok(None);
        }
        let mut payload = vec![0u8; len];
        if !self.fill(&mut payload)? || checksum(&contents.header, word(0), seq, &payload) != crc {
            return Ok(None);
        }
        let text = if encrypted {
            self.decrypt(&payload)?
        } else {
            payload
        };
        Ok(serde_json::from_slice::<Payload>(&text)
            .ok()
            .map(|payload| (seq, len, payload)))
    }

    /// An encrypted record's payload, decrypted with the database's key.
    fn decrypt(&self, payload: &[u8]) -> std::io::Result<Vec<u8>> {
        let decrypted = self.cipher.and_then(|c| c.decrypt(payload));
        decrypted.ok_or_else(|| {
            io_error(format!(
                "{} holds encrypted records that {}",
                self.path.display(),
                if self.cipher.is_some() {
                    "this database's key does not decrypt"
                } else {
                    "only an encrypted database can read"
                }
            ))
        })
    }
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
