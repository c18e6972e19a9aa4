//! The unit tests of this folder's modules, one file each.

pub(super) mod wire;
