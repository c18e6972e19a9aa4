//! The hardening tier: the agent attacked the way the most demanding users of containerd,
//! kubelet, etcd and SPDK attack theirs (issue 23), each attack bounded in time and count,
//! on loopback or Unix sockets only, each test asserting the bound or the refusal rather
//! than a timing. Memory figures under attack are printed by benchmarks, not asserted here.

mod bounds;
mod health;
mod listeners;
mod storage;

use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};

/// The agent on the BlueField-3 fixture with a fake SNAP: the target of the request-bound
/// attacks.
pub(crate) struct Lab {
    pub(crate) agent: AgentProcess,
    _snap: FakeSnap,
    _dir: tempfile::TempDir,
}

impl Lab {
    pub(crate) fn start() -> Self {
        let (dir, root) = fixture::bluefield3_tempdir();
        let options = AgentOptions::new(dir.path(), &root);
        let snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
        let agent = AgentProcess::start(&options);
        Self {
            agent,
            _snap: snap,
            _dir: dir,
        }
    }
}
