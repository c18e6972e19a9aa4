//! The mocked gRPC tier: the real `dpu-agent` process on a temp Unix socket (and TCP),
//! a fixture sysfs tree, a fake SNAP server, driven by `dpuctl` and generated clients.

mod bad_input;
mod capture;
mod capture_fixtures;
mod capture_jsonrpc;
mod capture_netlink;
mod check;
mod check_dpu_side;
mod check_env;
mod cli;
mod counters;
mod daemonset;
mod dashboard;
mod demo_serving;
mod errors;
mod experiment;
mod experiment_ring_pfc;
mod experiment_roce;
mod first_run;
mod fleet_experiment;
mod fleet_manifest;
mod fleet_pairs;
mod fleet_prove;
mod health;
mod host_session;
mod hostile_agent;
mod lifecycle;
mod load;
mod metrics_endpoint;
mod metrics_file;
mod module_graph;
mod pci;
mod prove_binding;
mod prove_trials;
mod readiness;
mod reflection;
mod reset_mid_run;
mod runnable_docs;
mod security;
mod shell_assets;
mod simulator;
mod simulator_proof;
mod simulator_qos;
mod storage_kernel;
mod storage_read;
mod unix_authority;
mod unverified_list;

use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};

/// One agent with a fake SNAP and a BlueField-3 fixture, kept alive by the returned guards.
pub(crate) struct Lab {
    pub(crate) agent: AgentProcess,
    pub(crate) snap: FakeSnap,
    /// The fixture root the agent reads (`--sys-root`); tests change counters under it.
    pub(crate) root: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Lab {
    pub(crate) fn start() -> Self {
        Self::start_with(|_| {})
    }

    pub(crate) fn start_with(adjust: impl FnOnce(&mut AgentOptions)) -> Self {
        let (dir, root) = fixture::bluefield3_tempdir();
        let mut options = AgentOptions::new(dir.path(), &root);
        adjust(&mut options);
        let snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
        let agent = AgentProcess::start(&options);
        Self {
            agent,
            snap,
            root,
            _dir: dir,
        }
    }
}
