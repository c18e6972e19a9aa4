//! Client for an OVS daemon's control socket — what `ovs-appctl` speaks
//! (ovs-netlink.md §2.4, `lib/unixctl.c`): JSON-RPC 1.0 on `{rundir}/{program}.{pid}.ctl`,
//! method = command name, params = the arguments as strings, `result` = the command's text
//! output, `error` = OVS's own message. `ovs-appctl` is never run.
//!
//! The pid is read from `{rundir}/{program}.pid` on every call, so a restarted ovs-vswitchd
//! (new pid, new socket) is found without restarting the caller.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dpu_ovs::unixctl::Error> {
//! use dpu_ovs::flow::DumpType;
//! use dpu_ovs::unixctl::Unixctl;
//!
//! let vswitchd = Unixctl::vswitchd(dpu_ovs::DEFAULT_RUNDIR);
//! let version = vswitchd.version().await?;
//! let flows = vswitchd
//!     .dump_flows()
//!     .more()
//!     .flow_type(DumpType::Offloaded)
//!     .execute()
//!     .await?;
//! # let _ = (version, flows);
//! # Ok(())
//! # }
//! ```

mod commands;
mod error;
mod handle;

pub use commands::{datapath_backer, parse_list_commands, CommandInfo, DumpFlows};
pub use error::Error;
pub use handle::{Command, Unixctl, VSWITCHD};

#[cfg(test)]
mod tests;
