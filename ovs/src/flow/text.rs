//! The text of a key field or an action, with where its arguments open, in 24 bytes.
//!
//! A flow holds a dozen key fields, and parsing a whole dump is bounded by the memory the
//! flows take: a `Cow<str>` plus a `usize` offset is 32 bytes, this is 24, with the offset
//! kept as a `u32` beside the enum's tag, where it costs nothing.

use std::fmt;
use std::hash::{Hash, Hasher};

use super::scan::first_open;

/// The offset stored for an item whose opening offset does not fit in a `u32` (only in an
/// item over 4 GiB): [`ItemText::open`] finds it again in the text.
const FAR: u32 = u32::MAX;

/// An item's text, borrowed from the dump or owned, and the offset of its opening bracket
/// (`text.len()` when it has none).
#[derive(Clone)]
pub(crate) enum ItemText<'a> {
    /// Borrowed from the dump.
    Borrowed(&'a str, u32),
    /// Owned, after `into_owned`.
    Owned(Box<str>, u32),
}

impl<'a> ItemText<'a> {
    /// `text`, borrowed, opening at `open`.
    pub(crate) fn borrowed(text: &'a str, open: usize) -> Self {
        Self::Borrowed(text, u32::try_from(open).unwrap_or(FAR))
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Borrowed(text, _) => text,
            Self::Owned(text, _) => text,
        }
    }

    /// The offset of the opening bracket, or the text's length without one.
    pub(crate) fn open(&self) -> usize {
        let (Self::Borrowed(_, open) | Self::Owned(_, open)) = self;
        match *open {
            FAR => first_open(self.as_str()),
            near => near as usize,
        }
    }

    /// The same text, owned.
    pub(crate) fn into_owned(self) -> ItemText<'static> {
        match self {
            Self::Borrowed(text, open) => ItemText::Owned(text.into(), open),
            Self::Owned(text, open) => ItemText::Owned(text, open),
        }
    }
}

// Borrowed or owned, the same text is the same item (as with `Cow`).
impl PartialEq for ItemText<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() && self.open() == other.open()
    }
}

impl Eq for ItemText<'_> {}

impl Hash for ItemText<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
        self.open().hash(state);
    }
}

impl fmt::Debug for ItemText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash(t: &ItemText<'_>) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    #[test]
    fn borrowed_and_owned_are_equal_and_small() {
        let b = ItemText::borrowed("ct(commit)", 2);
        let o = b.clone().into_owned();
        assert_eq!((o.as_str(), o.open()), ("ct(commit)", 2));
        assert!(b == o && hash(&b) == hash(&o));
        assert_ne!(b, ItemText::borrowed("ct(commit),", 2));
        assert_eq!(std::mem::size_of::<ItemText<'_>>(), 24);
    }

    #[test]
    fn an_offset_past_u32_is_found_again() {
        let t = ItemText::borrowed("x(1)", usize::MAX);
        assert_eq!(t.open(), 1);
        assert_eq!(ItemText::borrowed("x", 1).open(), 1);
    }
}
