//! [`IostatForm`], the two request shapes of `bdev_get_iostat` and which SPDK release takes
//! which. A leaf because [`SnapClient`](super::SnapClient) remembers the form that worked
//! while [`IostatCall`](super::IostatCall), which holds a client, is the one that tries them.

/// Which request form of `bdev_get_iostat` names one bdev. SPDK changed it: `{"name"}` up to
/// v26.01, `{"names": [...]}` from v26.01, and v26.05 dropped `name` (CHANGELOG v26.01,
/// v26.05). Every SPDK a SNAP ships today (DOCA SNAP 4 is built on v24.01) takes only `name`
/// and answers `names` with -32603 "spdk_json_decode_object failed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IostatForm {
    /// `{"name": bdev}`: SPDK up to v26.01.
    Name,
    /// `{"names": [bdev]}`: SPDK v26.01 and later (the only form from v26.05).
    Names,
}

impl IostatForm {
    /// The form a release takes: `names` from v26.05 (where `name` is gone), `name` before
    /// (v26.01 takes both) and when the release is unknown.
    pub fn for_release(release: Option<(u32, u32)>) -> Self {
        match release {
            Some(release) if release >= (26, 5) => Self::Names,
            _ => Self::Name,
        }
    }

    pub(super) fn other(self) -> Self {
        match self {
            Self::Name => Self::Names,
            Self::Names => Self::Name,
        }
    }
}
