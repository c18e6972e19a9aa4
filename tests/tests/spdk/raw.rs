//! What real SPDK v24.01 answers on the wire, request by request, for the fake's owner to
//! hold the fake to: the table is [`dpu_tests::spdk::OBSERVED_V24_01`], and this test
//! fails when the real server answers differently. With `$DPU_SPDK_OBSERVED` set, the
//! observed answers are also written there as a Markdown table. The `bdev_set_qos_limit`
//! rows ([`dpu_tests::spdk::QOS_V24_01`]) are checked with the limits read back after each.

use dpu_tests::harness::free_tcp_port;
use dpu_tests::spdk::{
    classify_reply, multipath_differences, qos_differences, ObservedReply, RemoteTarget, SpdkTgt,
    OBSERVED_V24_01, REMOTE_NQN,
};

/// The second subsystem `{NQN2}`.
const NQN2: &str = "nqn.2016-06.io.spdk:cnode2";

fn describe(reply: &ObservedReply) -> (String, String, &'static str) {
    match reply {
        ObservedReply::Result { id_null } => (
            "result".to_owned(),
            String::new(),
            if *id_null { "null" } else { "echoed" },
        ),
        ObservedReply::Error {
            code,
            message,
            id_null,
        } => (
            code.to_string(),
            message.escape_debug().to_string(),
            if *id_null { "null" } else { "echoed" },
        ),
        ObservedReply::Closed => (
            "(connection closed, no reply)".to_owned(),
            String::new(),
            "-",
        ),
        ObservedReply::Incomplete { received } => (
            "(incomplete reply, connection left open)".to_owned(),
            format!("received: `{received}`"),
            "null",
        ),
    }
}

#[test]
fn raw_protocol_observations_of_spdk_v24_01() {
    if let Some(reason) = dpu_tests::spdk::missing_prerequisite() {
        dpu_tests::skip!("{reason}");
    }
    let _serial = dpu_tests::spdk::exclusive();
    let dir = tempfile::tempdir().expect("tempdir");
    let remote = RemoteTarget::launch(dir.path(), "a").unwrap_or_else(|e| panic!("{e}"));
    let port2 = free_tcp_port();
    remote
        .add_listener(REMOTE_NQN, "127.0.0.1", port2)
        .unwrap_or_else(|e| panic!("{e}"));
    remote
        .add_subsystem(NQN2, "SPDK00000000000002", "Malloc1")
        .unwrap_or_else(|e| panic!("{e}"));
    let dpu = SpdkTgt::start(dir.path(), "b").unwrap_or_else(|e| panic!("{e}"));
    let port = remote.port().to_string();
    dpu.rpc(
        "bdev_nvme_attach_controller",
        &[
            "-b",
            "r0",
            "-t",
            "tcp",
            "-f",
            "ipv4",
            "-a",
            "127.0.0.1",
            "-s",
            &port,
            "-n",
            REMOTE_NQN,
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let down = free_tcp_port().to_string();
    let port2 = port2.to_string();

    let mut rows = vec![
        "| case | request | code | message | reply id |".to_owned(),
        "| --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut wrong = Vec::new();
    for observation in OBSERVED_V24_01 {
        let request = observation
            .request
            .replace("{PORT2}", &port2)
            .replace("{PORT}", &port)
            .replace("{DOWN}", &down)
            .replace("{NQN2}", NQN2);
        let reply = dpu
            .raw_bytes(request.as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", observation.case));
        let got = classify_reply(&reply);
        let (code, message, id) = describe(&got);
        rows.push(format!(
            "| {} | `{}` | {code} | {} | {id} |",
            observation.case,
            observation.request.replace('|', "\\|"),
            message.replace('|', "\\|"),
        ));
        if got != observation.reply {
            wrong.push(format!(
                "{}: expected {:?}, SPDK answered {:?} (full reply {reply:?})",
                observation.case, observation.reply, got
            ));
        }
    }
    // The last attach added a second path to r0, as SPDK's failover default does: an
    // alternate trid of the one controller entry, not a second entry.
    let paths = dpu
        .rpc("bdev_nvme_get_controllers", &["-n", "r0"])
        .unwrap_or_else(|e| panic!("{e}"));
    let table = rows.join("\n");
    eprintln!("{table}");
    if let Some(path) = std::env::var_os("DPU_SPDK_OBSERVED") {
        let text = format!(
            "# SPDK v24.01 raw JSON-RPC observations\n\nRecorded by `cargo test -p dpu-tests \
             --test spdk raw_protocol` against a real `spdk_tgt` (table: \
             `dpu_tests::spdk::OBSERVED_V24_01`). Context: r0 attached to \
             127.0.0.1:{{PORT}} {REMOTE_NQN} (bdev r0n1); the target also serves \
             {REMOTE_NQN} on {{PORT2}} and {NQN2} on {{PORT}}; {{DOWN}} is a port nothing \
             listens on.\n\n{table}\n"
        );
        std::fs::write(&path, text).expect("write $DPU_SPDK_OBSERVED");
    }
    assert!(wrong.is_empty(), "{}\n\n{table}", wrong.join("\n"));
    // bdev_set_qos_limit: every reply and the assigned_rate_limits after it.
    let qos = qos_differences(dpu.socket());
    assert!(
        qos.is_empty(),
        "SPDK answered bdev_set_qos_limit otherwise:\n{}",
        qos.join("\n")
    );
    // bdev_nvme_set_multipath_policy and bdev_nvme_get_io_paths: every reply and the
    // policy after it.
    let multipath = multipath_differences(dpu.socket());
    assert!(
        multipath.is_empty(),
        "SPDK answered the multipath methods otherwise:\n{}",
        multipath.join("\n")
    );
    let ctrlrs = paths[0]["ctrlrs"].as_array().expect("ctrlrs");
    assert_eq!(ctrlrs.len(), 1, "{paths}");
    assert_eq!(ctrlrs[0]["alternate_trids"][0]["trsvcid"], port2, "{paths}");
}
