//! The unit tests of this folder's modules, one file each.

mod live;
mod sampler;
mod wire;
