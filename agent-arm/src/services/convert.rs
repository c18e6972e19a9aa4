//! Conversions from reader types (`dpu-probe`) to API messages.

use dpu_probe::netdev::{NetdevInfo, RepresentorRole};
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
    fn hca_types_map_to_models() {
        assert_eq!(bluefield_model("MT41692"), Some("BlueField-3"));
        assert_eq!(bluefield_model("MT41686"), Some("BlueField-2"));
        assert_eq!(bluefield_model("MT4123"), None);
        assert_eq!(bluefield_model("garbage"), None);
    }
}
