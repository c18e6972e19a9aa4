//! The fake held to the real thing. [`OBSERVED_V24_01`] is what a real `spdk_tgt` v24.01
//! answered, request by request; the `spdk` tier (`tests/tests/spdk/raw.rs`) sends the
//! same bytes to a real SPDK in CI and fails when it answers otherwise. Here the fake, set
//! up the same way (r0 attached to `{PORT}`, a second subsystem there, a second listener
//! `{PORT2}`, nothing on `{DOWN}`), must answer every request the same: the same code, the
//! same message, the same id handling. So the fake and SPDK cannot drift apart silently on
//! any method both implement; what only the fake implements (SNAP's own methods) is listed
//! as UNVERIFIED in docs/storage.md.

use std::time::Duration;

use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use dpu_tests::spdk::{
    classify_reply, exchange, multipath_differences, qos_differences, ObservedReply,
    OBSERVED_V24_01, REMOTE_NQN,
};

const NQN2: &str = "nqn.2016-06.io.spdk:cnode2";
const PORT: &str = "4420";
const PORT2: &str = "4421";
const DOWN: &str = "4999";

#[test]
fn the_fake_answers_every_request_recorded_from_spdk_v24_01_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spdk.sock");
    let snap = FakeSnap::start_with(&path, FakeDialect::Snap4).expect("fake SNAP");
    snap.refuse_connections_to("127.0.0.1", DOWN);
    snap.serve_only("127.0.0.1", PORT, &[REMOTE_NQN, NQN2]);
    snap.serve_only("127.0.0.1", PORT2, &[REMOTE_NQN]);
    let attach = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"bdev_nvme_attach_controller","params":{{"name":"r0","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT}","subnqn":"{REMOTE_NQN}"}}}}"#
    );
    let setup = exchange(&path, attach.as_bytes(), Duration::from_secs(5)).expect("attach r0");
    assert!(
        matches!(classify_reply(&setup), ObservedReply::Result { .. }),
        "{setup:?}"
    );

    let mut compared = 0;
    let mut differences = Vec::new();
    for observation in OBSERVED_V24_01 {
        // SPDK v24.01 answers a notification with a truncated reply (a bug in
        // jsonrpc_server.c); the fake sends nothing, and the agent never sends one.
        if matches!(observation.reply, ObservedReply::Incomplete { .. }) {
            continue;
        }
        let request = observation
            .request
            .replace("{PORT2}", PORT2)
            .replace("{PORT}", PORT)
            .replace("{DOWN}", DOWN)
            .replace("{NQN2}", NQN2);
        let reply = exchange(&path, request.as_bytes(), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{}: {e}", observation.case));
        let got = classify_reply(&reply);
        if got != observation.reply {
            differences.push(format!(
                "{}: SPDK v24.01 answered {:?}, the fake {got:?}",
                observation.case, observation.reply
            ));
        }
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} observations compared");
    assert!(
        differences.is_empty(),
        "the fake disagrees with SPDK:\n{}",
        differences.join("\n")
    );
    // bdev_set_qos_limit as SPDK v24.01 answered it, with the limits read back after
    // each request (r0n1 has none yet: nothing above sets any).
    let qos = qos_differences(&path);
    assert!(
        qos.is_empty(),
        "the fake's bdev_set_qos_limit disagrees with SPDK:\n{}",
        qos.join("\n")
    );
    let multipath = multipath_differences(&path);
    assert!(
        multipath.is_empty(),
        "the fake's multipath methods disagree with SPDK:\n{}",
        multipath.join("\n")
    );
}
