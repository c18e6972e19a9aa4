//! Every rail, not one interface: a GPU server's ConnectX ports are each judged and named,
//! SR-IOV VFs and administratively down ports are not rails, `--device` selects, a bad
//! selection is refused by name, BlueField and agent checks skip where there is no
//! BlueField, and the fabric settings cover every rail.

use dpu_probe::rdma::RdmaDeviceInfo;

use super::super::describe;
use super::super::env::fabric_env;
use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, CheckVerdict, Expectations, Status};
use super::rules::{gid, host, netdev, port, v4};

/// The RDMA device of a ConnectX port on `pci` whose RoCE v2 IPv4 GID `gid_index`
/// belongs to `ifname`.
fn rail_device(ibdev: &str, pci: &str, ifname: &str, gid_index: u32, up: bool) -> RdmaDeviceInfo {
    let gids = vec![
        gid(0, "IB/RoCE v1", ifname, None),
        gid(1, "RoCE v2", ifname, None),
        gid(gid_index, "RoCE v2", ifname, v4()),
    ];
    let (state, phys) = if up {
        (4, "5: LinkUp")
    } else {
        (1, "3: Disabled")
    };
    RdmaDeviceInfo {
        ibdev: ibdev.to_owned(),
        pci_address: Some(pci.to_owned()),
        ports: vec![port(state, phys, gids)],
        ..Default::default()
    }
}

/// A GPU server's host: two ConnectX-7 rails (`ens1f0np0` on mlx5_0, `ens2f0np0` on
/// mlx5_1), an SR-IOV VF left in the host (`ens1f0v0` on mlx5_2), an administratively down
/// port (`ens3f0np0` on mlx5_3: carrier unreadable), and no BlueField.
fn gpu_server(second_gid_index: u32, second_up: bool) -> HostFacts {
    let mut vf = netdev("ens1f0v0", 9000, true);
    vf.pci_address = Some("0000:3b:00.2".to_owned());
    vf.virtual_function = true;
    let mut second = netdev("ens2f0np0", 9000, second_up);
    second.pci_address = Some("0000:3c:00.0".to_owned());
    let mut parked = netdev("ens3f0np0", 1500, false);
    parked.pci_address = Some("0000:3d:00.0".to_owned());
    parked.carrier = None;
    let mut h = host(
        16,
        true,
        port(4, "5: LinkUp", vec![]),
        vec![second, vf, parked],
    );
    h.pci = Ok(vec![]);
    h.rdma = Ok(vec![
        rail_device("mlx5_0", "0000:3b:00.0", "ens1f0np0", 3, true),
        rail_device(
            "mlx5_1",
            "0000:3c:00.0",
            "ens2f0np0",
            second_gid_index,
            second_up,
        ),
        rail_device("mlx5_2", "0000:3b:00.2", "ens1f0v0", 3, true),
        rail_device("mlx5_3", "0000:3d:00.0", "ens3f0np0", 3, false),
    ]);
    h
}

fn results_of<'a>(judged: &'a [(&'static str, CheckVerdict)], id: &str) -> Vec<&'a CheckVerdict> {
    judged
        .iter()
        .filter(|(i, _)| *i == id)
        .map(|(_, v)| v)
        .collect()
}

fn unreachable() -> AgentFacts {
    AgentFacts::Unreachable("connection refused".to_owned())
}

#[test]
fn every_rail_is_judged_and_named_and_vfs_and_parked_ports_are_not_rails() {
    let judged = judge(
        &gpu_server(3, true),
        &unreachable(),
        &Expectations::default(),
    );
    for id in [
        "netdev.up",
        "netdev.mtu",
        "rdma.bound",
        "rdma.port",
        "rdma.link-layer",
        "rdma.gid",
        "rdma.mtu",
    ] {
        let subjects: Vec<Option<&str>> = results_of(&judged, id)
            .iter()
            .map(|v| v.subject.as_deref())
            .collect();
        assert_eq!(
            subjects,
            [Some("ens1f0np0"), Some("ens2f0np0")],
            "{id}: one result per rail, in device order"
        );
    }
    let bound = results_of(&judged, "rdma.bound");
    assert!(bound[1].detail.contains("mlx5_1"), "{}", bound[1].detail);
    assert!(
        results_of(&judged, "rdma.port")
            .iter()
            .all(|v| v.status == Status::Pass),
        "both rails are up"
    );
}

#[test]
fn without_a_bluefield_its_checks_and_an_absent_agent_skip_with_the_reason() {
    let judged = judge(
        &gpu_server(3, true),
        &unreachable(),
        &Expectations::default(),
    );
    let bluefield = results_of(&judged, "pcie.bluefield")[0];
    assert_eq!(bluefield.status, Status::Skip, "{}", bluefield.detail);
    assert!(
        bluefield.detail.contains("mlx5_0") && bluefield.detail.contains("mlx5_1"),
        "{}",
        bluefield.detail
    );
    let agent = results_of(&judged, "agent.reachable")[0];
    assert_eq!(agent.status, Status::Skip, "{}", agent.detail);
    assert!(agent.detail.contains("no BlueField"), "{}", agent.detail);

    // Negative control: on a BlueField host an agent that does not answer is a failure.
    let bluefield_host = host(16, true, port(4, "5: LinkUp", vec![]), vec![]);
    let judged = judge(&bluefield_host, &unreachable(), &Expectations::default());
    assert_eq!(
        results_of(&judged, "agent.reachable")[0].status,
        Status::Fail
    );
    assert_eq!(
        results_of(&judged, "pcie.bluefield")[0].status,
        Status::Pass
    );
}

#[test]
fn a_down_rail_fails_under_its_own_name_while_the_other_passes() {
    let judged = judge(
        &gpu_server(3, false),
        &unreachable(),
        &Expectations::default(),
    );
    let up = results_of(&judged, "netdev.up");
    assert_eq!(
        (up[0].status, up[1].status),
        (Status::Pass, Status::Fail),
        "{up:?}"
    );
    assert_eq!(up[1].subject.as_deref(), Some("ens2f0np0"));
    assert!(up[1].detail.contains("ens2f0np0"), "{}", up[1].detail);
}

#[test]
fn an_interface_the_host_does_not_have_is_refused_by_name_like_a_device() {
    let h = gpu_server(3, true);
    let rails = h
        .data_interfaces(&["ens2f0np0".to_owned()], &[])
        .expect("a netdev of the host");
    assert_eq!(rails[0].chosen_because, "--interface");
    let e = h
        .data_interfaces(&["ens2f0np0".to_owned(), "eth9".to_owned()], &[])
        .expect_err("eth9 is not there");
    assert!(
        e.starts_with("--interface eth9: no such interface (this host has ")
            && e.contains("ens1f0np0"),
        "{e}"
    );
    // Netdevs that cannot be listed: the checks say so, nothing is refused here.
    let mut unlisted = gpu_server(3, true);
    unlisted.netdevs = Err("cannot list".to_owned());
    assert!(unlisted.data_interfaces(&["eth9".to_owned()], &[]).is_ok());
}

#[test]
fn devices_select_rails_and_an_unknown_one_is_refused_by_name() {
    let h = gpu_server(3, true);
    let rails = h
        .data_interfaces(&[], &["mlx5_1".to_owned()])
        .expect("mlx5_1 is a rail");
    assert_eq!(rails.len(), 1);
    assert_eq!(rails[0].ifname, "ens2f0np0");
    assert_eq!(rails[0].chosen_because, "--device mlx5_1/1");

    // A VF is checked when asked for by name.
    let vf = h
        .data_interfaces(&[], &["mlx5_2/1".to_owned()])
        .expect("named");
    assert_eq!(vf[0].ifname, "ens1f0v0");

    for (wanted, names) in [
        ("mlx5_9", ["mlx5_9", "mlx5_0, mlx5_1"]),
        ("mlx5_0/2", ["mlx5_0 has no port 2", "ports: 1"]),
    ] {
        let e = h
            .data_interfaces(&[], &[wanted.to_owned()])
            .expect_err("refused");
        assert!(names.iter().all(|n| e.contains(n)), "{e}");
        let expect = Expectations {
            devices: vec![wanted.to_owned()],
            ..Expectations::default()
        };
        let judged = judge(&h, &unreachable(), &expect);
        let bound = results_of(&judged, "rdma.bound")[0];
        assert_eq!(bound.status, Status::Fail, "{}", bound.detail);
        assert!(bound.detail.contains(wanted), "{}", bound.detail);
    }
}

#[test]
fn the_fabric_settings_list_every_rail_and_refuse_rails_that_disagree_on_the_gid() {
    let results = describe(judge(
        &gpu_server(3, true),
        &AgentFacts::NotAsked,
        &Expectations::default(),
    ));
    let env = fabric_env(&results).expect("settings");
    assert_eq!(env.get("NCCL_IB_HCA"), Some("mlx5_0:1,mlx5_1:1"));
    assert_eq!(env.get("UCX_NET_DEVICES"), Some("mlx5_0:1,mlx5_1:1"));
    assert_eq!(env.get("NCCL_IB_GID_INDEX"), Some("3"));
    assert_eq!(env.get("NCCL_SOCKET_IFNAME"), Some("ens1f0np0"));
    assert_eq!(env.get("PERFTEST_FLAGS"), Some("-d mlx5_0 -i 1 -x 3"));

    let results = describe(judge(
        &gpu_server(5, true),
        &AgentFacts::NotAsked,
        &Expectations::default(),
    ));
    let refused = fabric_env(&results).expect_err("one GID index for all rails");
    let detail = &refused.unmet[0].detail;
    assert!(
        detail.contains("ens1f0np0 3") && detail.contains("ens2f0np0 5"),
        "{detail}"
    );

    // A down rail is named in the refusal.
    let results = describe(judge(
        &gpu_server(3, false),
        &AgentFacts::NotAsked,
        &Expectations::default(),
    ));
    let refused = fabric_env(&results).expect_err("a rail is down");
    assert!(
        refused
            .unmet
            .iter()
            .any(|u| u.id == "netdev.up" && u.detail.starts_with("ens2f0np0: ")),
        "{:?}",
        refused.unmet
    );
}
