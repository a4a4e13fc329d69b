//! The journal's tests: appends read back, emptied, reopened, torn and salted.

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
        &zeroize::Zeroizing::new([key; super::cipher::KEY_LEN]),
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
