//! The unit tests of this folder's modules, one file each.

mod decode;
mod pfc_set;
