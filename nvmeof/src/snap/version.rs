//! [`SpdkVersion`], the answer of `spdk_get_version`, and the release it names. A leaf so
//! that [`SnapClient`](super::SnapClient) (which asks for it) and
//! [`IostatCall`](super::IostatCall) (which picks a request form from it) need not import
//! `snap/mod.rs`.

use serde::Deserialize;

/// `spdk_get_version`'s answer: the human-readable version and, since SPDK v19.10, its
/// parts (`lib/rpc/rpc.c`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SpdkVersion {
    /// E.g. `SPDK v24.01` or `SPDK v24.01.1-pre git sha1 …`, as SNAP reports it.
    pub version: String,
    /// The numeric parts, when the peer sends them.
    #[serde(default)]
    pub fields: Option<SpdkVersionFields>,
}

/// The `fields` object of `spdk_get_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct SpdkVersionFields {
    /// Year of the release, e.g. 24.
    pub major: u32,
    /// Month of the release, e.g. 1.
    #[serde(default)]
    pub minor: u32,
}

impl SpdkVersion {
    /// The release as (year, month), from `fields` or else parsed from the text; request
    /// forms that changed between releases are chosen from it (see [`IostatForm`](super::IostatForm)).
    pub fn release(&self) -> Option<(u32, u32)> {
        if let Some(fields) = self.fields {
            return Some((fields.major, fields.minor));
        }
        let text = self
            .version
            .split_whitespace()
            .find_map(|w| w.strip_prefix('v'))?;
        let mut parts = text.split(['.', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }
}
