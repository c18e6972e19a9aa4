//! The unit tests of this folder's modules, one file each.

mod fabrics;
mod nvmet;
