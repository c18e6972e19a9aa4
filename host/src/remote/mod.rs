//! Reaching another machine over ssh: a foundation the products share (a RoCE peer's
//! server, a fleet host's `dpuctl`, an experiment's peer), never a product itself.
//!
//! Why one: the rules were written twice (`roce::peer` and the fleet's pairs) and had to be
//! kept the same by hand — what a destination may look like (never an option, never shell
//! text), the options every session gets (never prompt, give up connecting after 10 s),
//! quoting each word once for the remote shell. [`ssh::Ssh`] holds them, with an optional
//! shared connection ([`ssh::ControlMaster`]); [`watched`] runs one long command that can
//! be cancelled and takes its whole process tree with it when it stops.

pub mod ssh;
pub mod watched;
