//! Conversions from reader types (`dpu-probe`) to API messages.

use dpu_probe::netdev::{NetdevInfo, RepresentorRole};
use dpu_probe::pci::{PciFunction, PciFunctionKind, PcieLink};
use dpu_probe::rdma::{roce_path_mtu, RdmaDeviceInfo, RdmaPortInfo};
use dpu_proto::names::Collection;
use dpu_proto::v1;

pub(crate) fn netdev(info: NetdevInfo) -> v1::Netdev {
    let role = match info.role() {
        Some(RepresentorRole::Uplink) => v1::NetdevRole::UplinkRepresentor,
        Some(RepresentorRole::HostPf) => v1::NetdevRole::PfRepresentor,
        Some(RepresentorRole::HostVf) => v1::NetdevRole::VfRepresentor,
        Some(RepresentorRole::SubFunction) => v1::NetdevRole::SfRepresentor,
        None if info.driver.as_deref() == Some("openvswitch") => v1::NetdevRole::OvsInternal,
        None => v1::NetdevRole::Plain,
    };
    v1::Netdev {
        name: Collection::Netdevs.format(&info.ifname),
        oper_state: oper_state(&info.operstate) as i32,
        carrier: info.carrier.unwrap_or(false),
        speed_mbps: info.speed_mbps.unwrap_or(0),
        driver: info.driver.unwrap_or_default(),
        pci_address: info.pci_address.map(|bdf| v1::PciAddress { bdf }),
        role: role as i32,
        phys_port_name: info.phys_port_name.unwrap_or_default(),
        phys_switch_id: info.phys_switch_id.unwrap_or_default(),
        ifname: info.ifname,
        ifindex: info.ifindex,
        mac_address: info.mac_address,
        mtu: info.mtu,
        // Addresses come from netlink, which the agent does not read yet.
        addresses: Vec::new(),
    }
}

fn oper_state(text: &str) -> v1::OperState {
    match text {
        "up" => v1::OperState::Up,
        "down" => v1::OperState::Down,
        "dormant" => v1::OperState::Dormant,
        "lowerlayerdown" => v1::OperState::LowerLayerDown,
        "notpresent" => v1::OperState::NotPresent,
        "testing" => v1::OperState::Testing,
        _ => v1::OperState::Unknown,
    }
}

/// Converts an RDMA device; `netdev_mtu` looks up the MTU of a port's netdev.
pub(crate) fn rdma_device(
    info: RdmaDeviceInfo,
    netdev_mtu: impl Fn(&str) -> Option<u32>,
) -> v1::RdmaDevice {
    v1::RdmaDevice {
        name: Collection::RdmaDevices.format(&info.ibdev),
        node_type: info.node_type.unwrap_or_default(),
        node_guid: info.node_guid.unwrap_or_default(),
        sys_image_guid: info.sys_image_guid.unwrap_or_default(),
        firmware_version: info.firmware_version.unwrap_or_default(),
        hca_type: info.hca_type.unwrap_or_default(),
        board_id: info.board_id.unwrap_or_default(),
        pci_address: info.pci_address.map(|bdf| v1::PciAddress { bdf }),
        ports: info
            .ports
            .into_iter()
            .map(|p| rdma_port(p, &netdev_mtu))
            .collect(),
        ibdev: info.ibdev,
    }
}

fn rdma_port(port: RdmaPortInfo, netdev_mtu: &impl Fn(&str) -> Option<u32>) -> v1::RdmaPort {
    let netdev = port.netdev().map(str::to_owned).unwrap_or_default();
    let mtu = netdev_mtu(&netdev);
    v1::RdmaPort {
        port: port.port,
        state: rdma_port_state(port.state) as i32,
        phys_state: port.phys_state,
        rate_gbps: port.rate_gbps.unwrap_or(0.0),
        rate: port.rate,
        link_layer: match port.link_layer.as_str() {
            "Ethernet" => v1::LinkLayer::Ethernet,
            "InfiniBand" => v1::LinkLayer::Infiniband,
            _ => v1::LinkLayer::Unspecified,
        } as i32,
        netdev_mtu: mtu.unwrap_or(0),
        roce_path_mtu: mtu.and_then(roce_path_mtu).unwrap_or(0),
        netdev,
        gids: port
            .gids
            .into_iter()
            .map(|g| v1::Gid {
                index: g.index,
                r#type: match g.gid_type.as_deref() {
                    Some("RoCE v2") => v1::GidType::RoceV2,
                    Some("IB/RoCE v1") => v1::GidType::IbRoceV1,
                    _ => v1::GidType::Unspecified,
                } as i32,
                netdev: g.netdev.unwrap_or_default(),
                ip_address: g.ip.map(|ip| ip.to_string()).unwrap_or_default(),
                gid: g.gid,
            })
            .collect(),
    }
}

fn rdma_port_state(state: u32) -> v1::RdmaPortState {
    match state {
        1 => v1::RdmaPortState::Down,
        2 => v1::RdmaPortState::Init,
        3 => v1::RdmaPortState::Armed,
        4 => v1::RdmaPortState::Active,
        5 => v1::RdmaPortState::ActiveDefer,
        _ => v1::RdmaPortState::Unspecified,
    }
}

/// Converts a PCI function. Kinds the API has no value for (a BlueField VF, the SoC, the
/// auxiliary channel, flash recovery, a plain ConnectX) are `OTHER_MELLANOX`; their
/// device ID and generation still say what they are.
pub(crate) fn pci_function(f: PciFunction) -> v1::PciFunction {
    let kind = match f.kind {
        PciFunctionKind::BlueFieldNic => v1::PciFunctionKind::BluefieldNic,
        PciFunctionKind::Rshim => v1::PciFunctionKind::Rshim,
        PciFunctionKind::SnapNvme => v1::PciFunctionKind::SnapNvme,
        PciFunctionKind::VirtioNet => v1::PciFunctionKind::VirtioNet,
        PciFunctionKind::VirtioBlk => v1::PciFunctionKind::VirtioBlk,
        PciFunctionKind::Other => v1::PciFunctionKind::Unspecified,
        _ => v1::PciFunctionKind::OtherMellanox,
    };
    v1::PciFunction {
        vendor_id: f
            .vendor_id
            .map(|id| format!("0x{id:04x}"))
            .unwrap_or_default(),
        device_id: f
            .device_id
            .map(|id| format!("0x{id:04x}"))
            .unwrap_or_default(),
        class_code: f
            .class_code
            .map(|c| format!("0x{c:06x}"))
            .unwrap_or_default(),
        kind: kind as i32,
        generation: f.model().unwrap_or_default().to_owned(),
        numa_node: f
            .numa_node
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(-1),
        driver: f.driver.unwrap_or_default(),
        current_link: pcie_link(f.current_link),
        max_link: pcie_link(f.max_link),
        netdevs: f.netdevs,
        rdma_devices: f.rdma_devices,
        address: Some(v1::PciAddress { bdf: f.address }),
    }
}

/// An all-unknown link is absent rather than a misleading x0 at 0 GT/s.
fn pcie_link(link: PcieLink) -> Option<v1::PcieLink> {
    link.is_known().then(|| v1::PcieLink {
        speed_gts: link.speed_gts.unwrap_or(0.0),
        width: link.width.unwrap_or(0),
    })
}

/// BlueField model from an mlx5 `hca_type` ("MT" + the PCI device id in decimal).
pub(crate) fn bluefield_model(hca_type: &str) -> Option<&'static str> {
    let id: u32 = hca_type.strip_prefix("MT")?.parse().ok()?;
    match id {
        0xa2d2 => Some("BlueField"),
        0xa2d6 => Some("BlueField-2"),
        0xa2d9 => Some("BlueField-3 Lx"),
        0xa2dc => Some("BlueField-3"),
        0xa2df => Some("BlueField-4"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_functions_map_ids_kinds_and_unknown_links() {
        let f = PciFunction {
            address: "0000:3b:00.1".to_owned(),
            vendor_id: Some(0x15b3),
            device_id: Some(0xa2dc),
            class_code: Some(0x020000),
            kind: PciFunctionKind::BlueFieldNic,
            generation: Some(dpu_probe::pci::BlueFieldGeneration::BlueField3),
            current_link: PcieLink {
                speed_gts: Some(32.0),
                width: Some(8),
            },
            max_link: PcieLink {
                speed_gts: Some(32.0),
                width: Some(16),
            },
            ..PciFunction::default()
        };
        let m = pci_function(f);
        assert_eq!(m.address.map(|a| a.bdf).as_deref(), Some("0000:3b:00.1"));
        assert_eq!(
            (m.vendor_id.as_str(), m.device_id.as_str()),
            ("0x15b3", "0xa2dc")
        );
        assert_eq!(m.class_code, "0x020000");
        assert_eq!(m.kind, v1::PciFunctionKind::BluefieldNic as i32);
        assert_eq!(m.generation, "BlueField-3");
        assert_eq!(m.numa_node, -1, "no NUMA information");
        assert_eq!(m.current_link.map(|l| l.width), Some(8));
        assert_eq!(m.max_link.map(|l| l.width), Some(16));

        let bare = pci_function(PciFunction {
            kind: PciFunctionKind::Soc,
            numa_node: Some(1),
            ..PciFunction::default()
        });
        assert_eq!(bare.kind, v1::PciFunctionKind::OtherMellanox as i32);
        assert_eq!((bare.numa_node, bare.current_link), (1, None));
        assert!(bare.vendor_id.is_empty() && bare.generation.is_empty());
    }

    #[test]
    fn hca_types_map_to_models() {
        assert_eq!(bluefield_model("MT41692"), Some("BlueField-3"));
        assert_eq!(bluefield_model("MT41686"), Some("BlueField-2"));
        assert_eq!(bluefield_model("MT4123"), None);
        assert_eq!(bluefield_model("garbage"), None);
    }
}
