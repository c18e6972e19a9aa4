//! What every service shares: the effective configuration, the sysfs root, the start
//! time, the backends and the (lazily connected) OVS clients. Passed explicitly (no
//! globals), so tests build their own.

use std::sync::Arc;
use std::time::Instant;

use dpu_probe::netlink::NetlinkAccess;
use dpu_probe::SysRoot;

use crate::backends::Backends;
use crate::config::Config;
use crate::ovs::OvsBackend;
use crate::storage::store::StoreError;
use crate::storage::StorageEngine;
use crate::telemetry::AgentMetrics;

/// Shared state of one running agent.
#[derive(Debug)]
pub(crate) struct AgentContext {
    pub(crate) root: SysRoot,
    /// Where the Switch service's tc filter reads go (see [`tc_netlink_for`]).
    pub(crate) tc_netlink: NetlinkAccess,
    pub(crate) started: Instant,
    pub(crate) backends: Backends,
    pub(crate) ovs: OvsBackend,
    pub(crate) storage: Arc<StorageEngine>,
    /// The agent's own metrics, recorded by every part and served at `/metrics`.
    pub(crate) metrics: Arc<AgentMetrics>,
}

impl AgentContext {
    /// Fails only when the saved storage state cannot be read: starting with an empty
    /// state would make the agent forget (and later undo) what the host was given.
    pub(crate) fn new(config: &Config) -> Result<Self, StoreError> {
        let ovs = OvsBackend::new(config);
        let metrics = Arc::new(AgentMetrics::new());
        let storage = Arc::new(StorageEngine::open(config, Arc::clone(&metrics))?);
        let root = SysRoot::new(&config.sys_root);
        Ok(Self {
            tc_netlink: tc_netlink_for(&root),
            root,
            started: Instant::now(),
            backends: Backends::new(config, &ovs, &storage, Arc::clone(&metrics)),
            ovs,
            storage,
            metrics,
        })
    }
}

/// Where the agent reads tc filters (the flows' join, `ListTcFilters`) for `root`: a
/// capture reading's netlink recording when the root has one, so flows replayed from that
/// capture's OVS transcript are joined to that machine's filters, never to this machine's;
/// otherwise the live kernel. A fixture tree without a recording reads the live kernel's
/// tc, because OVS is then live as well (the ovs tier's daemons on the test machine, whose
/// tc filters are in this kernel); a broken recording stays broken, so its error is said.
pub(crate) fn tc_netlink_for(root: &SysRoot) -> NetlinkAccess {
    match NetlinkAccess::for_root(root) {
        NetlinkAccess::Unavailable { .. } => NetlinkAccess::Live,
        other => other,
    }
}

#[cfg(test)]
mod tests;
