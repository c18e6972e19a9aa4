//! Network namespaces made with iproute2 (`ip netns add`) and deleted, with every
//! interface in them, when dropped: private OVS daemons put their tap devices in one of
//! their own, so a simulated node's bridges and internal ports never collide with another
//! node's or touch the machine's interfaces. Needs root.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use crate::tool::{run, ToolError};

/// iproute2 mounts `/run/netns` on first use; concurrent first uses race.
static NETNS_CREATE: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// A network namespace, deleted (with every interface in it) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `dpu-ovs-{pid}-{n}-{purpose}` with its loopback up: unique per process and
    /// call, and the pid and purpose say whose it is in `ip netns list`.
    pub fn create(purpose: &str) -> Result<Self, ToolError> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = format!("dpu-ovs-{}-{id}-{purpose}", std::process::id());
        let _serial = NETNS_CREATE.lock().unwrap_or_else(|e| e.into_inner());
        run("ip", &["netns", "add", &name])?;
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The name `ip netns` knows it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n {name} ARGS`.
    pub fn ip(&self, args: &[&str]) -> Result<String, ToolError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// `ip netns exec {name} PROGRAM ARGS`.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, ToolError> {
        let mut all = vec!["netns", "exec", self.name.as_str(), program];
        all.extend_from_slice(args);
        run("ip", &all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = run("ip", &["netns", "del", &self.name]) {
            eprintln!("cleanup: {e}");
        }
    }
}
