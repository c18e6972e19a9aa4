//! `dpu-host`: everything `dpuctl` does on the host, as a library.
//!
//! Two layers, products importing foundations:
//!
//! - **Foundations**, what every product stands on: how a run reaches its agent ([`agent`]:
//!   dialling, the run's [`agent::session::Session`], health, why a dial failed), ssh to
//!   other machines ([`remote`]), the one before/after counter accounting engine
//!   ([`accounting`]), progress ([`observe`]), parameter errors by field ([`param`]), shared
//!   facts ([`facts`]), HTML parts ([`render`]), the io_uring read engine ([`storage_read`]),
//!   the snapshot wire mapping ([`snapshot_wire`]), TOML locations ([`toml_keys`]) and
//!   textfile metrics ([`textfile`]).
//! - **Products**, one per command family: the offload proofs ([`prove`]), the host
//!   checklist ([`check`]), RoCE runs and tool-output parsers ([`roce`]), the A/B/A
//!   experiments ([`experiment`]), the fleet ([`fleet`]) and machine capture ([`capture`]).
//!   A product may use another's public entry point, report or parser (the experiments measure
//!   with `roce`, the fleet runs `check` and `roce` on each node) but never its internals.
//!
//! The training-storage demo is a product over these foundations in its own crate
//! (`dpu-demo`), so its HTTP and Kubernetes clients are not linked by every consumer of this
//! one.
//!
//! Must not: parse argv, print, draw progress bars or choose an exit code. Entry points are
//! `area::run` over an [`agent::session::Session`] (or only its agent,
//! [`agent::session::AgentConnection`],
//! or only a sys root) and the area's parameter struct, and return report values; `dpuctl`
//! (host-cli/) maps its flags onto those parameters and renders the reports. Progress goes
//! to an [`observe::Observer`] of the entry point's event type, which `dpuctl` draws. The
//! package has no clap, comfy-table or indicatif dependency, so the compiler holds that line.

pub mod accounting;
pub mod agent;
pub mod capture;
pub mod check;
pub mod experiment;
pub mod facts;
pub mod fleet;
pub mod observe;
pub mod param;
pub mod prove;
pub mod remote;
pub mod render;
pub mod roce;
pub mod snapshot_wire;
pub mod storage_read;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod textfile;
pub mod toml_keys;
