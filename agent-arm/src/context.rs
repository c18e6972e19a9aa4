//! What every service shares: the effective configuration, the sysfs root, the start
//! time, the backends and the (lazily connected) OVS clients. Passed explicitly (no
//! globals), so tests build their own.

use std::time::Instant;

use dpu_probe::SysRoot;

use crate::backends::Backends;
use crate::config::Config;
use crate::ovs::OvsBackend;

/// Shared state of one running agent.
#[derive(Debug)]
pub(crate) struct AgentContext {
    pub(crate) root: SysRoot,
    pub(crate) started: Instant,
    pub(crate) backends: Backends,
    pub(crate) ovs: OvsBackend,
}

impl AgentContext {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            root: SysRoot::new(&config.sys_root),
            started: Instant::now(),
            backends: Backends::new(config),
            ovs: OvsBackend::new(config),
        }
    }
}
