//! SPDK restarting under a running agent: the restarted `spdk_tgt` has lost every bdev and
//! controller, and the agent's background reconciler puts the desired state back.

use std::time::Duration;

use dpu_tests::spdk::REMOTE_NQN;

use crate::{bdev, bench, controller_paths, json_u64, ok, wait_until};

/// How long the reconciler (every second here) may take to repair SPDK: generous for a
/// slow machine, the bound only keeps a broken reconciler from hanging the test.
const REPAIR_TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn spdk_restart_is_repaired_by_the_reconciler() {
    let mut bench = bench!("reconcile_interval = 1");
    let port = bench.remote.port();
    ok(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &[]));
    let before = bdev(&bench.dpu, "r0n1").expect("bdev r0n1 after attach");
    let old_pid = bench.dpu.pid();

    bench.dpu.restart().unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(bench.dpu.pid(), old_pid, "a new spdk_tgt process");

    let port_text = port.to_string();
    wait_until(REPAIR_TIMEOUT, || {
        let paths = controller_paths(&bench.dpu, "r0");
        let path = paths.first().ok_or("SPDK has no controller r0")?;
        if path["trid"]["trsvcid"] != port_text.as_str() || path["trid"]["subnqn"] != REMOTE_NQN {
            return Err(format!("r0 points elsewhere: {path}"));
        }
        bdev(&bench.dpu, "r0n1").ok_or("SPDK has no bdev r0n1")?;
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
    let after = bdev(&bench.dpu, "r0n1").expect("bdev r0n1 after repair");
    assert_eq!(after["num_blocks"], before["num_blocks"]);
    assert_eq!(after["uuid"], before["uuid"], "the same remote namespace");
    assert_eq!(controller_paths(&bench.dpu, "r0").len(), 1);

    // The agent's listing shows the repaired volume with SPDK's geometry.
    wait_until(REPAIR_TIMEOUT, || {
        let listing = bench.ctl_json(&["storage", "list"]);
        let volume = &listing["remoteControllers"][0]["status"]["volumes"][0];
        if volume["name"] == "volumes/r0n1"
            && after["num_blocks"].as_u64() == Some(json_u64(&volume["numBlocks"]))
        {
            Ok(())
        } else {
            Err(format!("listing: {listing}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
}
