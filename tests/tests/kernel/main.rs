//! The real-kernel tier on this machine: network namespaces, veth pairs and tc filters
//! that the tests create themselves, read back through dpu-probe's netlink readers.
//!
//! Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and `ip`, `tc` (iproute2) and `ping`
//! (iputils-ping). Without them each test is skipped with the reason, which is a failure
//! under `DPU_TESTS_STRICT=1`. Nothing outside the namespaces the tests create is changed,
//! and every namespace is deleted by a Drop guard, taking its links and qdiscs with it.

mod ethtool;
mod netlink;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use dpu_probe::netlink::NETNS_RUN_DIR;

/// iproute2 mounts `/run/netns` on first use; concurrent first uses race, so namespace
/// creation is serialised within this test binary.
static NETNS_CREATE: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Why this machine cannot run the kernel tier, if it cannot.
pub(crate) fn missing_prerequisite() -> Option<String> {
    if !dpu_tests::running_as_root() {
        return Some("the kernel tier needs root (network namespaces, veth, tc)".to_owned());
    }
    ["ip", "tc", "ping"]
        .into_iter()
        .find(|tool| !on_path(tool))
        .map(|tool| format!("`{tool}` is not installed (apt: iproute2, iputils-ping)"))
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

pub(crate) use dpu_tests::command::run;

/// A network namespace created for one test and deleted when dropped.
pub(crate) struct Netns {
    name: String,
}

impl Netns {
    /// Creates `dpu-probe-{pid}-{n}-{purpose}`: unique per process and per test.
    pub(crate) fn create(purpose: &str) -> Result<Self, String> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = format!("dpu-probe-{}-{id}-{purpose}", std::process::id());
        let _serial = NETNS_CREATE.lock().unwrap_or_else(|e| e.into_inner());
        run("ip", &["netns", "add", &name])?;
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The name given to `ip netns`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/{name}`, what `RouteSocket::open_in_netns` takes.
    pub(crate) fn path(&self) -> PathBuf {
        Path::new(NETNS_RUN_DIR).join(&self.name)
    }

    /// `ip -n {name} ARGS`.
    pub(crate) fn ip(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// `tc -n {name} ARGS`.
    pub(crate) fn tc(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("tc", &all)
    }

    /// `ip netns exec {name} PROGRAM ARGS`.
    pub(crate) fn exec(&self, program: &str, args: &[&str]) -> Result<String, String> {
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
