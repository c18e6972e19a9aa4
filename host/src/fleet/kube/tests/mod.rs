//! The unit tests of this folder's modules, one file each.

mod discovery;
mod names;
mod objects;
mod publish;
mod rbac;
