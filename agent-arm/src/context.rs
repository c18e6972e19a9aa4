//! What every service shares: the effective configuration, the sysfs root, the start
//! time, the backends and the (lazily connected) OVS clients. Passed explicitly (no
//! globals), so tests build their own.

use std::sync::Arc;
use std::time::Instant;

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
        Ok(Self {
            root: SysRoot::new(&config.sys_root),
            started: Instant::now(),
            backends: Backends::new(config, &ovs, &storage, Arc::clone(&metrics)),
            ovs,
            storage,
            metrics,
        })
    }
}
