//! The unit tests of this folder's modules, one file each.

mod discovery;
mod names;
mod publish;
mod rbac;
