//! Encrypting the journal's records of an encrypted database.
//!
//! The journal (`journal.rs`) holds every acknowledged write until the next commit: window
//! titles, URLs, whatever the watchers sent. With an encrypted database those must not lie
//! on disk in the clear beside it, so each record's payload is encrypted and authenticated
//! with XChaCha20-Poly1305
//! under a key kept in the database itself (`aw_server_journal_key`, written once per
//! file): whoever can open the database can read its journal, and nobody else. The key
//! never leaves the worker's memory, and no key derivation is added to a start (SQLCipher
//! already derived the database's).
//!
//! Nonces are a random 16-byte prefix drawn at each open of the journal followed by a
//! counter: record sequence numbers alone would repeat after a crash (the records after the
//! last commit are written again with the same numbers and other contents), and a nonce
//! used twice under one key gives both plaintexts away.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, Tag, XChaCha20Poly1305, XNonce};
use zeroize::Zeroizing;

/// Bytes of the nonce stored before each encrypted payload.
pub(crate) const NONCE_LEN: usize = 24;

/// Bytes of the authentication tag stored after each encrypted payload.
pub(crate) const TAG_LEN: usize = 16;

/// The key length: 256 bits.
pub(crate) const KEY_LEN: usize = 32;

/// Encrypts and decrypts the journal records of one database.
pub(crate) struct JournalCipher {
    aead: XChaCha20Poly1305,
    /// The key itself: a salvaged copy of the database must carry it (`worker/live_salvage.rs`),
    /// or the records written under it could never be read again.
    key: Zeroizing<[u8; KEY_LEN]>,
    /// Drawn when the journal is opened: with [`JournalCipher::counter`], never the same
    /// nonce twice under this key.
    prefix: [u8; 16],
    counter: u64,
}

impl std::fmt::Debug for JournalCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalCipher").finish_non_exhaustive()
    }
}

impl JournalCipher {
    /// A cipher with the database's journal key and a fresh random nonce prefix.
    pub(crate) fn new(key: &Zeroizing<[u8; KEY_LEN]>, prefix: [u8; 16]) -> JournalCipher {
        JournalCipher {
            aead: XChaCha20Poly1305::new(Key::from_slice(key.as_slice())),
            key: key.clone(),
            prefix,
            counter: 0,
        }
    }

    /// The key (to store in a salvaged copy of the database).
    pub(crate) fn key(&self) -> &Zeroizing<[u8; KEY_LEN]> {
        &self.key
    }

    /// Encrypts `record[start..]` in place: on return it holds the nonce, the ciphertext
    /// and the tag. `record[start..start + NONCE_LEN]` must have been reserved (any bytes) before
    /// the plaintext.
    pub(crate) fn encrypt(&mut self, record: &mut Vec<u8>, start: usize) -> std::io::Result<()> {
        self.counter += 1;
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..16].copy_from_slice(&self.prefix);
        nonce[16..].copy_from_slice(&self.counter.to_le_bytes());
        let body = start + NONCE_LEN;
        let (head, plaintext) = record.split_at_mut(body);
        head[start..].copy_from_slice(&nonce);
        let tag = self
            .aead
            .encrypt_in_place_detached(XNonce::from_slice(&nonce), b"", plaintext)
            .map_err(|_| std::io::Error::other("cannot encrypt a journal record"))?;
        record.extend_from_slice(tag.as_slice());
        Ok(())
    }

    /// Decrypts an encrypted payload (nonce, ciphertext, tag); `None` when it was not
    /// encrypted with this key or was changed.
    pub(crate) fn decrypt(&self, encrypted: &[u8]) -> Option<Vec<u8>> {
        if encrypted.len() < NONCE_LEN + TAG_LEN {
            return None;
        }
        let (nonce, rest) = encrypted.split_at(NONCE_LEN);
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG_LEN);
        let mut plaintext = ciphertext.to_vec();
        self.aead
            .decrypt_in_place_detached(
                XNonce::from_slice(nonce),
                b"",
                &mut plaintext,
                Tag::from_slice(tag),
            )
            .ok()?;
        Some(plaintext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(key: u8, prefix: u8) -> JournalCipher {
        JournalCipher::new(&Zeroizing::new([key; KEY_LEN]), [prefix; 16])
    }

    #[test]
    fn an_encrypted_record_decrypts_with_its_key_only_and_hides_its_text() {
        let mut encrypting = cipher(7, 1);
        let text = br#"[{"title":"my secret window"}]"#;
        let mut record = vec![0xAA; 5 + NONCE_LEN];
        record.extend_from_slice(text);
        encrypting.encrypt(&mut record, 5).unwrap();
        assert_eq!(&record[..5], &[0xAA; 5], "the bytes before it are kept");
        let encrypted = &record[5..];
        assert_eq!(encrypted.len(), NONCE_LEN + text.len() + TAG_LEN);
        assert!(!encrypted.windows(6).any(|w| w == b"secret"));
        assert_eq!(cipher(7, 9).decrypt(encrypted).as_deref(), Some(&text[..]));
        assert_eq!(cipher(8, 1).decrypt(encrypted), None, "another key");
        let mut changed = encrypted.to_vec();
        changed[NONCE_LEN] ^= 1;
        assert_eq!(cipher(7, 1).decrypt(&changed), None, "a changed byte");
        assert_eq!(cipher(7, 1).decrypt(&encrypted[..10]), None, "too short");
    }

    #[test]
    fn no_two_records_share_a_nonce() {
        let mut encrypting = cipher(7, 1);
        let nonce_of = |encrypting: &mut JournalCipher| {
            let mut record = vec![0; NONCE_LEN];
            record.extend_from_slice(b"x");
            encrypting.encrypt(&mut record, 0).unwrap();
            record[..NONCE_LEN].to_vec()
        };
        let first = nonce_of(&mut encrypting);
        let second = nonce_of(&mut encrypting);
        assert_ne!(first, second);
        // Another open of the journal draws another prefix.
        assert_ne!(nonce_of(&mut cipher(7, 2)), first);
    }
}
