//! SPDK that stops answering in the middle of a change, proven against the real process:
//! `spdk_tgt` is frozen (SIGSTOP) before an attach, so the change runs past its deadline
//! and is rolled back; SPDK then wakes up (SIGCONT) and still carries out the attach it had
//! queued, behind the agent's back. The agent must end consistent with SPDK: the change it
//! refused leaves no controller in SPDK and none in its own listing.

use std::process::Command;
use std::time::Duration;

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use dpu_tests::spdk::REMOTE_NQN;
use tonic::Code;

use crate::{agent_config_with_call_timeout, controller_paths, wait_until, Bench};

/// How long the reconciler (every second here) may take to undo what SPDK did late.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {signal} {pid}");
}

#[test]
fn an_attach_into_a_frozen_spdk_is_rolled_back_and_what_spdk_did_late_is_undone() {
    if let Some(reason) = dpu_tests::spdk::missing_prerequisite() {
        dpu_tests::skip!("{reason}");
    }
    // Calls give up after 2 s, the change after 3 s; the reconciler runs every second.
    let bench = Bench::start_config(&agent_config_with_call_timeout("reconcile_interval = 1", 2));
    let pid = bench.dpu.pid().expect("spdk_tgt running");
    let spec = v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Tcp as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "127.0.0.1".to_owned(),
        trsvcid: u32::from(bench.remote.port()),
        subnqn: REMOTE_NQN.to_owned(),
        ..Default::default()
    };

    signal(pid, "-STOP");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let refused = runtime.block_on(async {
        StorageClient::new(bench.agent.channel().await)
            .create_remote_controller(v1::CreateRemoteControllerRequest {
                remote_controller_id: "r0".to_owned(),
                spec: Some(spec),
                options: Some(v1::ApplyOptions {
                    timeout: Some(dpu_proto::pbjson_types::Duration {
                        seconds: 3,
                        nanos: 0,
                    }),
                    dry_run: false,
                }),
            })
            .await
    });
    signal(pid, "-CONT");
    let status = refused.expect_err("SPDK is frozen: the attach cannot complete");
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Unavailable),
        "{status:?}"
    );
    assert!(
        status.message().contains("roll"),
        "the answer says what the rollback did: {}",
        status.message()
    );

    // SPDK runs again and may carry out the queued attach; the agent's reconciler must
    // remove it, and its own listing must not show r0.
    wait_until(SETTLE_TIMEOUT, || {
        let paths = controller_paths(&bench.dpu, "r0");
        if !paths.is_empty() {
            return Err(format!("SPDK still has r0: {paths:?}"));
        }
        let listing = bench.ctl_json(&["storage", "list"]);
        let remotes = listing["remoteControllers"].as_array().map_or(0, Vec::len);
        if remotes != 0 {
            return Err(format!(
                "the agent still lists remote controllers: {listing}"
            ));
        }
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));

    // And the same attach works now that SPDK answers.
    let out = bench.attach("r0", "127.0.0.1", bench.remote.port(), REMOTE_NQN, &[]);
    crate::ok(&out);
    assert_eq!(controller_paths(&bench.dpu, "r0").len(), 1);
}
