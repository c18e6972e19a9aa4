//! A/B/A tuning experiments (issue 37): change one knob, measure, return to the baseline,
//! measure again, and believe a gain only when the statistics say so.
//!
//! This slice is the core the command will stand on, with no machine access:
//!
//! - [`design`]: the phase order (`ABA`, `ABABA`) and which way a metric is better;
//! - [`stats`]: from each phase's trials to a [`verdict::Verdict`] (medians, MAD spread,
//!   the drift check between A phases, B's effect as a bootstrap interval, the
//!   trials-needed estimate), built on [`robust`], [`bootstrap`], [`normal`] and the
//!   seeded [`rng`];
//! - [`verdict`]: the typed, serialisable result.
//!
//! Not built yet (docs/experiments.md): running a measurement, applying a knob through the
//! kernel, the revert journal, `dpuctl experiment`, plots and the fleet.

pub mod bootstrap;
pub mod design;
pub mod normal;
pub mod rng;
pub mod robust;
pub mod stats;
pub mod verdict;
