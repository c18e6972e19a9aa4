//! The DPU side of `dpuctl check` through the real agent on the DPU fixture tree:
//! `Inventory.GetFabricConfig` reports the uplink p0 with why its DCB configuration cannot
//! be read there (a sysfs tree has no driver to ask over netlink) and why the firmware was
//! not queried (the tool reads this machine's cards, not the tree), and `dpuctl -o json
//! check` carries those reasons as the DPU-side `dcb.*` and `fw.*` results, each SKIP
//! naming `dpu:p0` or `dpu`. The negative control: without the agent no DPU-side result
//! appears, and the host's own rails keep their own subjects.

use dpu_proto::v1::{self, inventory_client::InventoryClient};
use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use serde_json::Value;

use crate::Lab;

const DCB_CHECKS: [&str; 4] = ["dcb.pfc", "dcb.trust", "dcb.chain", "dcb.ets"];

#[tokio::test]
async fn the_agent_reports_why_it_cannot_read_the_uplinks_dcb_or_the_firmware() {
    let lab = Lab::start();
    let config = InventoryClient::new(lab.agent.channel().await)
        .get_fabric_config(v1::GetFabricConfigRequest {})
        .await
        .expect("GetFabricConfig")
        .into_inner();
    let names: Vec<&str> = config.uplinks.iter().map(|u| u.ifname.as_str()).collect();
    assert_eq!(
        names,
        ["p0"],
        "the fixture's one uplink, not pf0hpf or oob_net0"
    );
    let p0 = &config.uplinks[0];
    match &p0.dcb {
        Some(v1::uplink_dcb::Dcb::DcbError(e)) => {
            assert!(
                e.starts_with(
                    "DCB is read over netlink from the running kernel only, not under --sys-root"
                ),
                "{e}"
            );
        }
        other => panic!("a fixture tree has no DCB to read: {other:?}"),
    }
    match &p0.tos {
        // mlx5_0's GIDs name p0; the fixture has no configfs entry: the kernel's ToS 0.
        Some(v1::uplink_dcb::Tos::RoceTos(t)) => assert_eq!((t.tos, t.file.as_str()), (0, "")),
        other => panic!("p0's RDMA port has a default ToS: {other:?}"),
    }
    let fw = config.firmware.expect("a firmware part");
    assert_eq!(fw.unavailable, v1::FirmwareUnavailable::NotLive as i32);
    assert!(
        fw.unavailable_detail
            .contains("query this machine's devices, not a tree"),
        "{}",
        fw.unavailable_detail
    );
    assert!(
        fw.tool.is_empty() && fw.devices.is_empty(),
        "nothing was run"
    );
}

fn results(stdout: &[u8]) -> Vec<Value> {
    serde_json::from_slice::<Value>(stdout)
        .expect("check prints JSON")
        .as_array()
        .expect("an array of results")
        .clone()
}

fn dpu_side(results: &[Value]) -> Vec<&Value> {
    results
        .iter()
        .filter(|r| {
            r["subject"]
                .as_str()
                .is_some_and(|s| s == "dpu" || s.starts_with("dpu:"))
        })
        .collect()
}

#[test]
fn check_carries_the_dpu_side_as_skips_with_the_agents_reasons() {
    let (_host_dir, host_root) = fixture::bluefield3_host_tempdir();
    let host_root = host_root.to_str().expect("utf-8 path");
    let lab = Lab::start();
    let agent = lab.agent.endpoint();
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        host_root,
        "--agent",
        &agent,
        "check",
    ]);
    let all = results(&out.stdout);
    let dpu = dpu_side(&all);
    for id in DCB_CHECKS {
        let r = dpu
            .iter()
            .find(|r| r["id"] == id && r["subject"] == "dpu:p0")
            .unwrap_or_else(|| panic!("no {id} for dpu:p0: {dpu:#?}"));
        assert_eq!(r["status"], "skip", "{r}");
        let detail = r["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("on the DPU: DCB is read over netlink from the running kernel only"),
            "{detail}"
        );
        assert_eq!(r["facts"]["interface"], "p0");
    }
    for id in ["fw.tool", "fw.mode", "fw.pending"] {
        let r = dpu
            .iter()
            .find(|r| r["id"] == id && r["subject"] == "dpu")
            .unwrap_or_else(|| panic!("no {id} for dpu: {dpu:#?}"));
        assert_eq!(r["status"], "skip", "{r}");
        let detail = r["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("on the DPU: --sys-root") && detail.contains("not a tree"),
            "{detail}"
        );
    }
    assert!(
        dpu.iter()
            .any(|r| r["id"] == "fw.profile" && r["status"] == "skip"),
        "fw.profile is judged on the DPU side too"
    );
    assert_eq!(
        dpu.len(),
        8,
        "four dcb checks for p0, four fw checks: {dpu:#?}"
    );
    // The host's own rails keep their own subject: nothing of the host is relabelled.
    assert!(
        all.iter().any(|r| r["id"] == "dcb.pfc"
            && r["subject"].as_str().is_some_and(|s| !s.starts_with("dpu"))),
        "the host rail's dcb.pfc is still there"
    );

    // Negative control: without the agent nothing is said about the DPU side.
    let out = dpuctl(&["-o", "json", "--sys-root", host_root, "check", "--no-agent"]);
    assert!(dpu_side(&results(&out.stdout)).is_empty());
}
