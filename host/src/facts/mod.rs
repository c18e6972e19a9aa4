//! Foundations: facts about the machine that more than one product reads, each gathered or
//! interpreted once. The products (`check`, `roce`, ...) import these and never each other
//! for them.
//!
//! - [`dcb`]: each rail's DCB configuration and RoCE default ToS, as read;
//! - [`dcb_chain`]: what that means for RoCE (ToS → DSCP → priority → PFC → ETS), the view
//!   `dpuctl roce dcb` reports and the lossless ToS `dpuctl check --env` sets.

pub mod dcb;
pub mod dcb_chain;
#[cfg(test)]
pub(crate) mod dcb_fixture;
