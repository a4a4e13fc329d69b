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

/// An object key. Compare with `==` (by text).
#[derive(Clone, Debug)]
pub(crate) enum Key {
    /// A key of the process-wide table, or a mark key ([`MarkKeys`]).
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

    /// Whether both are the very same key (the same allocation), not just equal texts.
    fn same(a: &Key, b: &Key) -> bool {
        let (a, b): (&str, &str) = (a, b);
        std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()
    }
}

/// Keys a transform marks the objects it makes with, so that it can tell them apart later
/// without reading them (`split_url_events`: an object it split is not split again). They
/// have the texts of ordinary keys (the language sees no difference) but allocations of
/// their own, made here and nowhere else.
///
/// The rule that makes a mark mean something — only the transform that owns a `MarkKeys`
/// puts its keys into objects — is kept by the types: the keys are reachable only through
/// the `MarkKeys` value (which its transform keeps in a private `static`), and data objects
/// never hand out their keys (`Obj` gives out key texts, and reads marks only through
/// [`MarkKeys::all_in`]). A patch that sets one of the texts anew brings an ordinary key,
/// which replaces the mark.
pub(crate) struct MarkKeys<const N: usize>([Key; N]);

impl<const N: usize> MarkKeys<N> {
    /// Mark keys with these texts. Each keeps its text for the life of the process: make
    /// one `MarkKeys` per transform, in a `static`.
    pub(crate) fn new(texts: [&str; N]) -> MarkKeys<N> {
        MarkKeys(texts.map(|s| Key::Interned(Box::leak(Box::new(s.to_string())))))
    }

    /// The mark key at `i`, to set in a patch.
    pub(crate) fn key(&self, i: usize) -> Option<Key> {
        self.0.get(i).cloned()
    }

    /// Whether every mark key is the key `find` finds under its text (an object holding all
    /// of them was marked by the owner).
    pub(crate) fn all_in<'a>(&self, find: impl Fn(&str) -> Option<&'a Key>) -> bool {
        self.0
            .iter()
            .all(|k| find(k).is_some_and(|found| Key::same(found, k)))
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
        let marks = MarkKeys::new(["app"]);
        let own = marks.key(0).unwrap();
        assert!(own == a && !Key::same(&own, &a));
        assert!(marks.all_in(|_| Some(&own)) && !marks.all_in(|_| Some(&a)));
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
