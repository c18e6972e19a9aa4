//! [`Change`], the "did anything have to be written" result of the idempotent `ensure_*`
//! and `disconnect` operations. Its own leaf so that [`Nvmet`](super::Nvmet) and
//! [`Fabrics`](super::Fabrics) can return it without importing `kernel/mod.rs`.

/// Whether an idempotent operation had to change anything, so callers can log and report
/// "created" versus "already there".
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The kernel state already matched; nothing was written.
    Unchanged,
    /// Something was created, written or removed.
    Changed,
}

impl Change {
    /// True for [`Change::Changed`].
    pub fn is_changed(self) -> bool {
        self == Self::Changed
    }

    pub(crate) fn from_bool(changed: bool) -> Self {
        if changed {
            Self::Changed
        } else {
            Self::Unchanged
        }
    }
}
