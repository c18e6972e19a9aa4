//! `Inventory.GetFabricConfig`: the uplinks' lossless-RoCE (DCB) configuration and the
//! BlueField's firmware settings, read with the same probe code `dpuctl check` uses on the
//! host. In DPU mode QoS lives on the Arm's uplinks (p0, p1), not on the host PF, so the
//! host asks here. Each part that cannot be read carries its reason in the answer (a
//! fixture root, no DCB on the device, no tool, not root); only an unreadable netdev list
//! fails the call. Blocking (netlink, the tool with its deadline): the caller runs it in
//! `spawn_blocking`.

use dpu_probe::dcb::read_dcb_config;
use dpu_probe::dcb::read_roce_tos;
use dpu_probe::fabric_wire::{dcb_to_wire, fw_to_wire, roce_tos_to_wire};
use dpu_probe::fw_config::{gather_fw, FwToolRunner};
use dpu_probe::netdev::{self, NetdevInfo, RepresentorRole};
use dpu_probe::rdma::{self, RdmaDeviceInfo};
use dpu_probe::{error_chain, ProbeError, SysRoot};
use dpu_proto::v1;

/// Reads every uplink's DCB configuration and default RoCE ToS under `root`, and the
/// firmware settings with `runner` (live root and root only, as on the host).
pub(super) fn read_fabric_config(
    root: &SysRoot,
    runner: &dyn FwToolRunner,
) -> Result<v1::FabricConfig, ProbeError> {
    Ok(v1::FabricConfig {
        uplinks: read_uplinks(root)?,
        firmware: Some(fw_to_wire(&gather_fw(root, runner))),
    })
}

/// The uplink representors in name order, each with its DCB configuration or why not.
pub(super) fn read_uplinks(root: &SysRoot) -> Result<Vec<v1::UplinkDcb>, ProbeError> {
    let mut uplinks: Vec<NetdevInfo> = netdev::list_netdevs(root)?
        .into_iter()
        .filter(|n| n.role() == Some(RepresentorRole::Uplink))
        .collect();
    uplinks.sort_by(|a, b| a.ifname.cmp(&b.ifname));
    // Without RDMA devices each uplink says so in its ToS; the DCB part still answers.
    let rdma = rdma::list_rdma_devices(root).map_err(|e| error_chain(&e));
    Ok(uplinks
        .iter()
        .map(|uplink| {
            let dcb = match read_dcb_config(root, &uplink.ifname) {
                Ok(config) => v1::uplink_dcb::Dcb::Config(dcb_to_wire(&config)),
                Err(e) => v1::uplink_dcb::Dcb::DcbError(error_chain(&e)),
            };
            let tos = match &rdma {
                Err(e) => Err(format!("cannot list RDMA devices: {e}")),
                Ok(devices) => match rdma_port_of(devices, uplink) {
                    None => Err(format!("no RDMA port bound to {}", uplink.ifname)),
                    Some((ibdev, port)) => {
                        read_roce_tos(root, ibdev, port).map_err(|e| error_chain(&e))
                    }
                },
            };
            v1::UplinkDcb {
                ifname: uplink.ifname.clone(),
                dcb: Some(dcb),
                tos: Some(match tos {
                    Ok(tos) => v1::uplink_dcb::Tos::RoceTos(roce_tos_to_wire(&tos)),
                    Err(e) => v1::uplink_dcb::Tos::RoceTosError(e),
                }),
            }
        })
        .collect())
}

/// The RDMA port carrying an uplink: the port whose GIDs name it, else the first port of
/// the device on the uplink's PCI function (the way `dpuctl check` binds a rail).
fn rdma_port_of<'a>(devices: &'a [RdmaDeviceInfo], uplink: &NetdevInfo) -> Option<(&'a str, u32)> {
    let by_gid = devices.iter().find_map(|d| {
        d.ports
            .iter()
            .find(|p| {
                p.gids
                    .iter()
                    .any(|g| g.netdev.as_deref() == Some(&uplink.ifname))
            })
            .map(|p| (d.ibdev.as_str(), p.port))
    });
    by_gid.or_else(|| {
        let pci = uplink.pci_address.as_deref()?;
        let device = devices
            .iter()
            .find(|d| d.pci_address.as_deref() == Some(pci))?;
        Some((device.ibdev.as_str(), device.ports.first()?.port))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use dpu_probe::fabric_wire::fw_from_wire;
    use dpu_probe::fw_config::{gather_fw_devices, FwFacts, FwTool, ToolOutput};

    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    const PCI: &str = "sys/devices/pci0000:00/0000:00:00.0/0000:03:00.0";

    /// An Arm side: uplinks p1 and p0 (listed out of order), a host-PF representor, a
    /// plain netdev, one BlueField-3 NIC function and mlx5_0 whose GIDs name p0.
    fn arm_tree(root: &Path, rdma_cm_tos: Option<&str>) {
        write(root, &format!("{PCI}/vendor"), "0x15b3\n");
        write(root, &format!("{PCI}/device"), "0xa2dc\n");
        write(root, &format!("{PCI}/class"), "0x020000\n");
        std::fs::create_dir_all(root.join("sys/bus/pci/devices")).expect("mkdir");
        std::os::unix::fs::symlink(
            root.join(PCI),
            root.join("sys/bus/pci/devices/0000:03:00.0"),
        )
        .expect("link");
        for (i, (ifname, port)) in [
            ("p1", Some("p1")),
            ("p0", Some("p0")),
            ("pf0hpf", Some("pf0hpf")),
            ("oob_net0", None),
        ]
        .into_iter()
        .enumerate()
        {
            let dir = format!("sys/class/net/{ifname}");
            write(root, &format!("{dir}/ifindex"), &format!("{}\n", i + 2));
            write(root, &format!("{dir}/mtu"), "9000\n");
            write(root, &format!("{dir}/operstate"), "up\n");
            write(root, &format!("{dir}/carrier"), "1\n");
            if let Some(port) = port {
                write(root, &format!("{dir}/phys_port_name"), &format!("{port}\n"));
                write(root, &format!("{dir}/phys_switch_id"), "f4ab580003a1420c\n");
            }
        }
        let ib = "sys/class/infiniband/mlx5_0";
        write(root, &format!("{ib}/ports/1/state"), "4: ACTIVE\n");
        write(root, &format!("{ib}/ports/1/link_layer"), "Ethernet\n");
        write(
            root,
            &format!("{ib}/ports/1/gids/1"),
            "0000:0000:0000:0000:0000:ffff:c0a8:6401\n",
        );
        write(
            root,
            &format!("{ib}/ports/1/gid_attrs/types/1"),
            "RoCE v2\n",
        );
        write(root, &format!("{ib}/ports/1/gid_attrs/ndevs/1"), "p0\n");
        if let Some(tos) = rdma_cm_tos {
            write(
                root,
                "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
                tos,
            );
        }
    }

    #[test]
    fn every_uplink_answers_with_why_dcb_is_unreadable_under_a_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        arm_tree(dir.path(), Some("106\n"));
        let root = SysRoot::new(dir.path());
        let uplinks = read_uplinks(&root).expect("netdevs readable");
        let names: Vec<&str> = uplinks.iter().map(|u| u.ifname.as_str()).collect();
        assert_eq!(names, ["p0", "p1"], "uplinks only, in name order");
        for uplink in &uplinks {
            let Some(v1::uplink_dcb::Dcb::DcbError(e)) = &uplink.dcb else {
                panic!("{}: a tree has no DCB: {:?}", uplink.ifname, uplink.dcb);
            };
            assert!(
                e.contains("running kernel only") && e.contains("--sys-root"),
                "{e}"
            );
        }
        match &uplinks[0].tos {
            Some(v1::uplink_dcb::Tos::RoceTos(t)) => {
                assert_eq!(t.tos, 106);
                assert!(
                    t.file.ends_with("rdma_cm/mlx5_0/ports/1/default_roce_tos"),
                    "{}",
                    t.file
                );
            }
            other => panic!("p0's ToS: {other:?}"),
        }
        match &uplinks[1].tos {
            Some(v1::uplink_dcb::Tos::RoceTosError(e)) => {
                assert_eq!(e, "no RDMA port bound to p1");
            }
            other => panic!("p1 has no RDMA port: {other:?}"),
        }
    }

    #[test]
    fn without_a_configfs_entry_the_kernel_default_tos_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        arm_tree(dir.path(), None);
        let uplinks = read_uplinks(&SysRoot::new(dir.path())).expect("readable");
        match &uplinks[0].tos {
            Some(v1::uplink_dcb::Tos::RoceTos(t)) => assert_eq!((t.tos, t.file.as_str()), (0, "")),
            other => panic!("{other:?}"),
        }
    }

    /// Answers every query with one canned table; never runs anything.
    struct CannedTool(&'static str);

    impl FwToolRunner for CannedTool {
        fn locate(&self) -> Option<FwTool> {
            Some(FwTool {
                name: "mstconfig",
                path: "/usr/bin/mstconfig".into(),
            })
        }
        fn run(&self, _: &FwTool, args: &[String], _: Duration) -> std::io::Result<ToolOutput> {
            assert_eq!(args.last().map(String::as_str), Some("query"), "read-only");
            Ok(ToolOutput {
                stdout: self.0.to_owned(),
                stderr: String::new(),
                exit_code: Some(0),
                timed_out: false,
            })
        }
    }

    const NIC_MODE_NEXT_BOOT: &str = "Device type:        BlueField3\n\
Configurations:                              Default         Current         Next Boot\n\
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)\n\
*        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      DISABLED(1)\n";

    #[test]
    fn under_a_tree_the_firmware_is_not_queried_and_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        arm_tree(dir.path(), None);
        let config = read_fabric_config(&SysRoot::new(dir.path()), &CannedTool(NIC_MODE_NEXT_BOOT))
            .expect("readable");
        let fw = config.firmware.expect("firmware part");
        assert_eq!(fw.unavailable, v1::FirmwareUnavailable::NotLive as i32);
        assert!(
            fw.unavailable_detail.contains("not a tree"),
            "{}",
            fw.unavailable_detail
        );
        assert!(fw.devices.is_empty());
    }

    #[test]
    fn the_arm_side_table_reaches_the_host_as_the_same_facts() {
        let dir = tempfile::tempdir().expect("tempdir");
        arm_tree(dir.path(), None);
        let root = SysRoot::new(dir.path());
        // gather_fw_devices: the live-root and root rules are the probe's, tested there.
        let facts = gather_fw_devices(&root, &CannedTool(NIC_MODE_NEXT_BOOT));
        let back = fw_from_wire(&fw_to_wire(&facts), "").expect("valid");
        let FwFacts::Queried { devices, .. } = back else {
            panic!("queried: {back:?}");
        };
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].address, "0000:03:00.0");
        assert!(devices[0].is_bluefield());
        let query = devices[0].query.as_ref().expect("a table");
        let engine = query.param("INTERNAL_CPU_OFFLOAD_ENGINE").expect("row");
        assert!(engine.pending(), "DPU now, NIC after the reset");
    }
}
