//! What a fleet command asks each agent: its system, netdevs, RDMA devices, PCI functions
//! and (where OVS runs) its offload settings.
//!
//! Why one gathering for `fleet info` and `fleet check`: both judge and compare the same
//! inventory, and asking it once per node keeps a two-hundred-node run to a few calls each.

use dpu_proto::v1::{self, inventory_client::InventoryClient, switch_client::SwitchClient};
use serde::Serialize;

use crate::agent::session::{rpc_error, AgentConnection, AgentError};

/// One DPU's inventory as its agent reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DpuFacts {
    /// `Inventory.GetSystem`.
    pub system: v1::System,
    /// `Inventory.ListNetdevs`.
    pub netdevs: Vec<v1::Netdev>,
    /// `Inventory.ListRdmaDevices`.
    pub rdma_devices: Vec<v1::RdmaDevice>,
    /// `Inventory.ListPciFunctions` (BlueField functions).
    pub pci_functions: Vec<v1::PciFunction>,
    /// `Switch.GetOffloadSettings`; `None` where the agent has no OVS (the call is refused)
    /// — a DPU without OVS is not a failure of the inventory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<v1::OffloadSettings>,
}

impl DpuFacts {
    /// Asks the agent. Any inventory call failing fails the gathering; the offload
    /// settings are optional.
    pub async fn gather(agent: &AgentConnection) -> Result<Self, AgentError> {
        let channel = agent.channel().await?;
        let mut inventory = InventoryClient::new(channel.clone())
            .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES);
        let system = inventory
            .get_system(v1::GetSystemRequest {})
            .await
            .map_err(rpc_error("Inventory.GetSystem"))?
            .into_inner();
        let netdevs = inventory
            .list_netdevs(v1::ListNetdevsRequest::default())
            .await
            .map_err(rpc_error("Inventory.ListNetdevs"))?
            .into_inner()
            .netdevs;
        let rdma_devices = inventory
            .list_rdma_devices(v1::ListRdmaDevicesRequest::default())
            .await
            .map_err(rpc_error("Inventory.ListRdmaDevices"))?
            .into_inner()
            .devices;
        let pci_functions = inventory
            .list_pci_functions(v1::ListPciFunctionsRequest::default())
            .await
            .map_err(rpc_error("Inventory.ListPciFunctions"))?
            .into_inner()
            .functions;
        let offload = SwitchClient::new(channel)
            .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
            .get_offload_settings(v1::GetOffloadSettingsRequest::default())
            .await
            .ok()
            .map(tonic::Response::into_inner);
        Ok(Self {
            system,
            netdevs,
            rdma_devices,
            pci_functions,
            offload,
        })
    }

    /// The uplink netdevs (p0, p1): the DPU's physical ports. Where no netdev carries the
    /// uplink role (an agent on a plain NIC), every netdev an RDMA port names.
    pub fn uplinks(&self) -> Vec<&v1::Netdev> {
        let uplinks: Vec<&v1::Netdev> = self
            .netdevs
            .iter()
            .filter(|n| n.role == v1::NetdevRole::UplinkRepresentor as i32)
            .collect();
        if !uplinks.is_empty() {
            return uplinks;
        }
        self.netdevs
            .iter()
            .filter(|n| {
                self.rdma_devices
                    .iter()
                    .flat_map(|d| &d.ports)
                    .any(|p| p.netdev == n.ifname)
            })
            .collect()
    }

    /// The RDMA ports of the uplinks, as (device, port); every port where none maps to an
    /// uplink.
    pub fn uplink_ports(&self) -> Vec<(&v1::RdmaDevice, &v1::RdmaPort)> {
        let uplinks: Vec<&str> = self.uplinks().iter().map(|n| n.ifname.as_str()).collect();
        let all = self
            .rdma_devices
            .iter()
            .flat_map(|d| d.ports.iter().map(move |p| (d, p)));
        let on_uplinks: Vec<_> = all
            .clone()
            .filter(|(_, p)| uplinks.contains(&p.netdev.as_str()))
            .collect();
        if on_uplinks.is_empty() {
            all.collect()
        } else {
            on_uplinks
        }
    }
}
