//! The storage proof over NVMe/TCP on the lab's real kernel: the DPU side attaches the
//! target over TCP on its storage link (p0), and `dpuctl prove storage` counts the DPU
//! uplink the kernel routes the target out of as the transport line, beside the volume and
//! the target's own agent. Issue 36 §5: before, a TCP remote only had a note saying the
//! uplink was not accounted.
//!
//! The negative control that the uplink line can fail is held from readings
//! (`prove::storage::tests::a_tcp_read_the_uplink_did_not_carry_is_not_proven`): on the lab
//! there is no second route to the target to send the bytes around p0.

use serde_json::Value;

use crate::{three_proven_trials_with_two_witnesses, Lab};

/// Attaches the target over NVMe/TCP as `r1`, proves a 16 MiB read through it, and detaches
/// it again (no controller is left).
pub(crate) fn proven_over_nvme_tcp_by_the_dpu_uplink(lab: &Lab, nqn: &str) {
    let remote = lab.host_json(&format!(
        "dpuctl -o json storage attach --id r1 --transport tcp --traddr 10.10.0.1 --subnqn {nqn}"
    ));
    assert_eq!(
        remote["status"]["state"], "REMOTE_CONTROLLER_STATE_ENABLED",
        "{remote}"
    );
    // The agent names the interface its kernel routes 10.10.0.1 out of: the storage link.
    assert_eq!(
        remote["status"]["uplinks"],
        serde_json::json!(["p0"]),
        "{remote}"
    );
    lab.host(
        "for _ in $(seq 100); do ls /sys/block | grep -qE '^nvme[0-9]+n[0-9]+$' && break; \
         sleep 0.1; done",
    );
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove storage --size 16m --volume r1n1",
    );
    assert_eq!(code, 0, "prove storage over NVMe/TCP: {proof}\n{stderr}");
    let proof: Value = serde_json::from_str(&proof).expect("proof JSON");
    assert_eq!(proof["verdict"], "PROVEN", "{proof:#}");
    // The target's agent counts what it sent on its network interfaces (TCP).
    three_proven_trials_with_two_witnesses(
        &proof,
        [4 << 20, 8 << 20, 4 << 20],
        "far end sent the data",
    );
    for trial in 1..=3 {
        let name = format!("trial {trial}: DPU uplink received the data");
        let line = proof["lines"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["expectation"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no line {name:?}: {proof:#}"));
        assert_eq!(line["outcome"]["result"], "met", "{line}");
        assert_eq!(
            line["expectation"]["select"]["objects"],
            serde_json::json!(["netdevs/p0"]),
            "{line}"
        );
    }
    let notes = proof["notes"].to_string();
    assert!(!notes.contains("not accounted"), "{notes}");
    lab.host("dpuctl storage detach remoteControllers/r1");
    let left = lab.host(
        "for _ in $(seq 100); do [ -z \"$(ls /sys/class/nvme/)\" ] && break; sleep 0.1; done; \
         ls /sys/class/nvme/ | wc -l",
    );
    assert_eq!(left.trim(), "0", "an NVMe controller is still connected");
}
