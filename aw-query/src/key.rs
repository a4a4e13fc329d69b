//! Object keys: the few distinct keys of event data (`app`, `title`, `url`, `$category`…),
//! interned once per process and copied without touching a shared reference count.
//!
//! Every data object holds its keys, so a per-object transform (splitting URLs, categorising)
//! copies a handful of keys per object, and freeing an object releases them. As `Arc<str>`s
//! shared by every object, their reference counts were written by both of the CPU pool's
//! threads and by the reaper at once, and the cache lines holding them went back and forth
//! between the cores on every object. An interned key is a plain `&'static` reference:
//! copying one copies a pointer.
//!
//! The table is bounded ([`MAX_KEYS`] keys of at most [`MAX_KEY_LEN`] bytes), so data with
//! ever new keys cannot grow the process without end: keys beyond the bound are reference
//! counted as before. A key is one pointer and a tag, the size of an `Arc<str>`, so data
//! objects do not grow (a two-word `&'static str` in the enum made every entry 8 bytes
//! larger and the year's desktop query slower).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// At most this many distinct keys are interned for the life of the process.
pub(crate) const MAX_KEYS: usize = 16_384;

/// Keys longer than this are not interned.
pub(crate) const MAX_KEY_LEN: usize = 64;

/// An object key. Compare with `==` (by text); [`Key::same`] tells allocations apart.
#[derive(Clone, Debug)]
pub(crate) enum Key {
    /// A key of the process-wide table, or one of a transform's own ([`Key::distinct`]).
    Interned(&'static String),
    /// A key beyond the table's bound.
    Counted(Arc<String>),
}

// One pointer and a tag: no larger than the `Arc<str>` keys were (see the module docs).
const _: () = assert!(std::mem::size_of::<Key>() <= 16);

/// The process-wide table: key text → the interned key.
fn table() -> &'static Mutex<HashMap<&'static str, &'static String>> {
    static TABLE: OnceLock<Mutex<HashMap<&'static str, &'static String>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Key {
    /// The key `s`: from the process-wide table while it has room. (Callers on hot paths go
    /// through `data::Interner::key`, which asks here once per distinct key.)
    pub(crate) fn new(s: &str) -> Key {
        if s.len() <= MAX_KEY_LEN {
            if let Ok(mut known) = table().lock() {
                if let Some(k) = known.get(s) {
                    return Key::Interned(k);
                }
                if known.len() < MAX_KEYS {
                    let k: &'static String = Box::leak(Box::new(s.to_string()));
                    known.insert(k.as_str(), k);
                    return Key::Interned(k);
                }
            }
        }
        Key::Counted(Arc::new(s.to_string()))
    }

    /// A key of its own: the same text as other keys, but a different allocation, which
    /// [`Key::same`] tells apart (`split_url_events` marks the objects it makes with such
    /// keys). Each call keeps a copy of `s` for the life of the process: call it once per
    /// key, from a `static`.
    pub(crate) fn distinct(s: &str) -> Key {
        Key::Interned(Box::leak(Box::new(s.to_string())))
    }

    /// Whether both are the very same key (the same allocation), not just equal texts.
    pub(crate) fn same(a: &Key, b: &Key) -> bool {
        let (a, b): (&str, &str) = (a, b);
        std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
    }
}

impl std::ops::Deref for Key {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Key::Interned(s) => s,
            Key::Counted(s) => s,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        Key::same(self, other) || **self == **other
    }
}

impl Eq for Key {}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_interned_up_to_the_bounds_and_equal_by_text() {
        let a = Key::new("app");
        let b = Key::new("app");
        assert!(Key::same(&a, &b) && matches!(a, Key::Interned(_)));
        let long = "k".repeat(MAX_KEY_LEN + 1);
        let c = Key::new(&long);
        assert!(matches!(c, Key::Counted(_)));
        assert_eq!(c, Key::new(&long));
        assert!(!Key::same(&c, &Key::new(&long)));
        let own = Key::distinct("app");
        assert!(own == a && !Key::same(&own, &a));
        // A full table: new keys are counted, the interned ones stay interned.
        for i in 0..MAX_KEYS {
            Key::new(&format!("key {i}"));
        }
        assert!(matches!(Key::new("a key never seen"), Key::Counted(_)));
        assert!(matches!(Key::new("app"), Key::Interned(_)));
        assert_eq!(Key::new("a key never seen"), Key::new("a key never seen"));
        assert_eq!(&*Key::new("a key never seen"), "a key never seen");
    }
}
