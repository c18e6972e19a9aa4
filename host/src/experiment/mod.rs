//! A/B/A tuning experiments (issue 37): change one knob, measure, return to the baseline,
//! measure again, and believe a gain only when the statistics say so.
//!
//! - [`design`]: the phase order (`ABA`, `ABABA`) and which way a metric is better;
//! - [`stats`]: from each phase's trials to a [`verdict::ExperimentVerdict`] (medians, MAD spread,
//!   the drift check between A phases, B's effect as a bootstrap interval, the
//!   trials-needed estimate), built on [`robust`], [`bootstrap`], [`normal`] and the
//!   seeded [`rng`];
//! - [`verdict`]: the typed, serialisable result;
//! - [`plan`]: a checked experiment plan (the measurement, the knob and its two values,
//!   trials, order, metric direction), read from TOML by [`plan_load::parse`] and refused
//!   with [`plan_error::PlanError`]s naming each field;
//! - [`knob`]: the knob applied through the kernel (netlink MTU, `/proc/sys`, configfs,
//!   ethtool netlink ring sizes, DCB netlink PFC), each value checked first and read back;
//! - [`journal`]: the revert journal a killed run leaves and the next one undoes;
//! - [`measure`] and [`metric`]: one trial, one number (a command without a shell, read
//!   by the project's parsers; a storage read; a `roce perf` run whose RDMA counters must
//!   corroborate it, [`measure_roce`]);
//! - [`run`]: the phases in order with the original value restored whatever happens,
//!   stopped through [`cancel`];
//! - [`page`] and [`metrics`]: the `--html` page and the `--metrics-file` text.
//!
//! Not built (docs/experiments.md "PFC and trust"): a `trust` knob. The same plan on many
//! hosts is `dpu_host::fleet::experiment`.

pub mod bootstrap;
pub mod cancel;
pub mod design;
pub mod journal;
pub mod knob;
pub mod measure;
pub mod measure_roce;
pub mod measurement;
pub mod metric;
pub mod metrics;
pub mod normal;
pub mod page;
pub mod plan;
mod plan_check;
mod plan_check_knob;
pub mod plan_error;
mod plan_file;
pub mod plan_load;
mod plan_problems;
pub mod rng;
pub mod robust;
pub mod run;
pub mod stats;
pub mod verdict;
