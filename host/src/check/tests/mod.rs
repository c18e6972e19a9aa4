//! The unit tests of this folder's modules, one file each.

mod dcb;
mod dpu_side;
mod env;
mod fw;
mod gdr;
mod gpu;
mod ib;
mod rails;
mod rules;
