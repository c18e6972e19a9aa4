//! `dpu.v1.Inventory`: the machine, its netdevs and RDMA devices, read from sysfs.

use std::sync::Arc;

use dpu_probe::fw_config::SystemFwTool;
use dpu_probe::netdev::RepresentorRole;
use dpu_probe::{netdev, pci, rdma, system, SysRoot};
use dpu_proto::names::Collection;
use dpu_proto::v1::{self, inventory_server::Inventory};
use tonic::{Request, Response, Status};

use super::convert::{self, bluefield_model};
use super::status::{blocking, invalid_field};
use crate::context::AgentContext;

/// Serves inventory from the agent's sysfs root.
#[derive(Debug, Clone)]
pub(crate) struct InventoryService {
    ctx: Arc<AgentContext>,
}

impl InventoryService {
    pub(crate) fn new(ctx: Arc<AgentContext>) -> Self {
        Self { ctx }
    }

    fn root(&self) -> SysRoot {
        self.ctx.root.clone()
    }
}

#[tonic::async_trait]
impl Inventory for InventoryService {
    async fn get_system(
        &self,
        _request: Request<v1::GetSystemRequest>,
    ) -> Result<Response<v1::System>, Status> {
        let root = self.root();
        let (facts, devices, netdevs, bluefield_pci) = blocking(move || {
            // The PCI IDs are asked only where the RDMA devices cannot tell: a BlueField
            // whose mlx5_ib is not loaded shows no RDMA device but still its functions.
            let devices = rdma::list_rdma_devices(&root)?;
            let bluefield_pci = devices.is_empty()
                && pci::list_pci_functions(&root, pci::PciFilter::BlueField)?
                    .iter()
                    .any(|f| f.generation.is_some());
            Ok((
                system::read_system_facts(&root),
                devices,
                netdev::list_netdevs(&root)?,
                bluefield_pci,
            ))
        })
        .await?;
        let bluefield = devices.iter().find_map(|d| {
            let model = bluefield_model(d.hca_type.as_deref()?)?;
            Some((model, d.firmware_version.clone().unwrap_or_default()))
        });
        let has_role = |role| netdevs.iter().any(|n| n.role() == Some(role));
        let dpu_mode = dpu_mode(
            bluefield.is_some(),
            has_role(RepresentorRole::Uplink) && has_role(RepresentorRole::HostPf),
            bluefield_pci,
        );
        let (model, firmware_version) = bluefield
            .map(|(m, fw)| (m.to_owned(), fw))
            .unwrap_or_default();
        for why in &facts.unreadable {
            tracing::warn!(error = %why, "Inventory.GetSystem: a system fact is unreadable; answered without it");
        }
        Ok(Response::new(v1::System {
            hostname: facts.hostname.unwrap_or_default(),
            model,
            dpu_mode: dpu_mode as i32,
            firmware_version,
            os: Some(v1::OperatingSystem {
                name: facts.os_name.unwrap_or_default(),
                kernel_release: facts.kernel_release.unwrap_or_default(),
            }),
            architecture: std::env::consts::ARCH.to_owned(),
            agent_version: crate::version::AGENT_VERSION.to_owned(),
            agent_uptime: Some(duration(self.ctx.started.elapsed())),
            backends: self.ctx.backends.check_all().await,
            system_uptime: facts.uptime.map(duration),
            sys_root: self.ctx.root.path().display().to_string(),
        }))
    }

    async fn list_netdevs(
        &self,
        request: Request<v1::ListNetdevsRequest>,
    ) -> Result<Response<v1::ListNetdevsResponse>, Status> {
        let req = request.into_inner();
        reject_paging(req.page.as_ref())?;
        let root = self.root();
        let mut devices = blocking(move || netdev::list_netdevs(&root)).await?;
        if req.representors_only {
            devices.retain(|d| d.role().is_some());
        }
        Ok(Response::new(v1::ListNetdevsResponse {
            netdevs: devices.into_iter().map(convert::netdev).collect(),
            next_page_token: String::new(),
        }))
    }

    async fn get_netdev(
        &self,
        request: Request<v1::GetNetdevRequest>,
    ) -> Result<Response<v1::Netdev>, Status> {
        let name = Collection::Netdevs
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        let root = self.root();
        let info = blocking(move || netdev::read_netdev(&root, &name.id)).await?;
        Ok(Response::new(convert::netdev(info)))
    }

    async fn list_rdma_devices(
        &self,
        request: Request<v1::ListRdmaDevicesRequest>,
    ) -> Result<Response<v1::ListRdmaDevicesResponse>, Status> {
        reject_paging(request.get_ref().page.as_ref())?;
        let root = self.root();
        let devices = blocking(move || {
            let devices = rdma::list_rdma_devices(&root)?;
            Ok(devices
                .into_iter()
                .map(|d| convert::rdma_device(d, |ifname| netdev::read_mtu(&root, ifname)))
                .collect())
        })
        .await?;
        Ok(Response::new(v1::ListRdmaDevicesResponse {
            devices,
            next_page_token: String::new(),
        }))
    }

    async fn get_rdma_device(
        &self,
        request: Request<v1::GetRdmaDeviceRequest>,
    ) -> Result<Response<v1::RdmaDevice>, Status> {
        let name = Collection::RdmaDevices
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        let root = self.root();
        let device = blocking(move || {
            let device = rdma::read_rdma_device(&root, &name.id)?;
            Ok(convert::rdma_device(device, |ifname| {
                netdev::read_mtu(&root, ifname)
            }))
        })
        .await?;
        Ok(Response::new(device))
    }

    async fn list_pci_functions(
        &self,
        request: Request<v1::ListPciFunctionsRequest>,
    ) -> Result<Response<v1::ListPciFunctionsResponse>, Status> {
        let filter = if request.get_ref().all_mellanox {
            pci::PciFilter::Mellanox
        } else {
            pci::PciFilter::BlueField
        };
        let root = self.root();
        let functions = blocking(move || pci::list_pci_functions(&root, filter)).await?;
        Ok(Response::new(v1::ListPciFunctionsResponse {
            functions: functions.into_iter().map(convert::pci_function).collect(),
        }))
    }

    async fn list_emulation_functions(
        &self,
        _request: Request<v1::ListEmulationFunctionsRequest>,
    ) -> Result<Response<v1::ListEmulationFunctionsResponse>, Status> {
        let functions = self
            .ctx
            .storage
            .emulation_functions()
            .await
            .map_err(|e| super::status::from_backend(&e))?;
        Ok(Response::new(v1::ListEmulationFunctionsResponse {
            functions: functions
                .into_iter()
                .map(|f| v1::EmulationFunctionInfo {
                    pf_index: f.pf_index,
                    vf_index: f.vf_index,
                    pci_bdf: f.pci_bdf,
                    vuid: f.vuid,
                    emulation_type: f.emulation_type,
                    backend_controller: f.controller,
                })
                .collect(),
        }))
    }

    async fn get_fabric_config(
        &self,
        _request: Request<v1::GetFabricConfigRequest>,
    ) -> Result<Response<v1::FabricConfig>, Status> {
        // One reading at a time: each may start up to eight firmware tool processes of up
        // to a minute each, and a burst of callers must not multiply them. Waiting callers
        // hold nothing; a caller that gives up (its deadline) leaves the queue.
        static FABRIC_READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);
        let _turn = FABRIC_READS
            .acquire()
            .await
            .map_err(|_| Status::unavailable("the agent is shutting down"))?;
        let root = self.root();
        // Netlink and the firmware tool (each query stopped at its deadline) block.
        let config =
            blocking(move || super::fabric::read_fabric_config(&root, &SystemFwTool)).await?;
        Ok(Response::new(config))
    }
}

/// The collections here are small (tens of devices), so the agent returns them whole; a
/// page token it did not issue is a client error.
/// The DPU mode the machine's devices show, one answer per kind of machine: `bluefield`
/// when an RDMA device is a BlueField's, `eswitch_representors` when the uplink and
/// host-PF representors exist (the Arm owns the eswitch: DPU mode), `bluefield_pci` when a
/// BlueField function is on the PCI bus. A machine with no BlueField anywhere (a VM, the
/// lab, a host with another NIC) is NOT_BLUEFIELD whether or not it has RDMA devices;
/// UNSPECIFIED is kept for a BlueField whose mode cannot be read.
fn dpu_mode(bluefield: bool, eswitch_representors: bool, bluefield_pci: bool) -> v1::DpuMode {
    match (bluefield, eswitch_representors, bluefield_pci) {
        (true, true, _) => v1::DpuMode::Dpu,
        // A BlueField without the representors (the eswitch not in switchdev mode yet, or
        // the host's side of a NIC-mode card), or one whose RDMA devices are not visible.
        (true, false, _) | (false, _, true) => v1::DpuMode::Unspecified,
        (false, _, false) => v1::DpuMode::NotBluefield,
    }
}

fn reject_paging(page: Option<&v1::PageRequest>) -> Result<(), Status> {
    match page {
        Some(page) if !page.page_token.is_empty() => Err(super::status::invalid(
            "page.page_token",
            "this collection is returned whole; no page token was issued",
        )),
        _ => Ok(()),
    }
}

fn duration(d: std::time::Duration) -> dpu_proto::pbjson_types::Duration {
    dpu_proto::pbjson_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_a_bluefield_is_not_bluefield_with_or_without_rdma() {
        // A VM without RDMA and the lab's soft-RoCE machine give one answer.
        assert_eq!(dpu_mode(false, false, false), v1::DpuMode::NotBluefield);
        assert_eq!(dpu_mode(false, true, false), v1::DpuMode::NotBluefield);
        assert_eq!(dpu_mode(true, true, false), v1::DpuMode::Dpu);
        // A BlueField whose mode cannot be read stays unspecified.
        assert_eq!(dpu_mode(true, false, false), v1::DpuMode::Unspecified);
        assert_eq!(dpu_mode(false, false, true), v1::DpuMode::Unspecified);
    }
}
