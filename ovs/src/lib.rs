//! Open vSwitch control for the DPU agent: an OVSDB client (RFC 7047) for bridges, ports
//! and `other_config`, a client for the ovs-vswitchd control socket (what `ovs-appctl`
//! speaks), and the datapath flow-dump parser with offload classification.
//!
//! Owns: everything that speaks to ovsdb-server or ovs-vswitchd. Must not touch: tc or
//! netlink directly (that is `dpu-probe`), gRPC types (the agent maps to them), or any
//! shell command (`ovs-vsctl`/`ovs-appctl` are never executed).
//!
//! [`ovsdb`] manages bridges, ports and `other_config` through ovsdb-server (and keeps a
//! monitor-fed cache); [`unixctl`] runs ovs-vswitchd control commands (`version`,
//! `dpif/show`, `dpctl/dump-flows`, `dpctl/show`); both speak JSON-RPC 1.0 through
//! `dpu-jsonrpc`. [`datapath`] reads `dpctl/show`'s lookup counters (upcalls). [`capture`]
//! records the agent's one-shot reads for a capture bundle, read-only.

pub mod capture;
pub mod datapath;
pub mod flow;
pub mod ovsdb;
pub mod unixctl;
use std::path::{Path, PathBuf};

/// OVS's default run directory (`OVS_RUNDIR`), where `db.sock`, the pid files and the
/// `*.ctl` control sockets live.
pub const DEFAULT_RUNDIR: &str = "/var/run/openvswitch";

/// The OVSDB socket inside a run directory, as `ovs-vsctl` builds it (`unix:{rundir}/db.sock`).
pub fn default_ovsdb_socket(rundir: &Path) -> PathBuf {
    rundir.join("db.sock")
}
