//! `dpu-host`: everything `dpuctl` does on the host, as a library.
//!
//! Owns: the agent [`session`] (one channel per run), the before/after counter accounting
//! engine ([`accounting`]) and the proofs built on it ([`prove`]), the host checklist
//! ([`check`]), the RoCE benchmark runs and their tool-output parsers ([`roce`]), the
//! NVMe-oF read engine ([`storage_read`]), the A/B/A tuning experiments ([`experiment`]),
//! and the textfile metrics of a run ([`textfile`]). The training-storage demo is a
//! product over these foundations in its own crate (`dpu-demo`), so its HTTP and
//! Kubernetes clients are not linked by every consumer of this one.
//!
//! Must not: parse argv, print, draw progress bars or choose an exit code. Entry points are
//! `area::run` over a [`session::Session`] (or only its agent, [`session::AgentConnection`],
//! or only a sys root) and the area's parameter struct, and return report values; `dpuctl`
//! (host-cli/) maps its flags onto those parameters and renders the reports. Progress goes
//! to an [`observe::Observer`] of the entry point's event type, which `dpuctl` draws. The
//! package has no clap, comfy-table or indicatif dependency, so the compiler holds that line.

pub mod accounting;
pub mod agent;
pub mod agent_dial_cause;
pub mod agent_health;
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
pub mod session;
pub mod snapshot_wire;
pub mod storage_read;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod textfile;
pub mod toml_keys;
