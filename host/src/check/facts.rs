//! What the checks look at, gathered once before any check runs: the host's PCI functions,
//! netdevs and RDMA devices (from `--sys-root`), the data interface, and the agent's view.
//! Gathering and judging are separate so the rules are plain functions of data.

use std::time::Duration;

use dpu_probe::netdev::{self, NetdevInfo};
use dpu_probe::pci::topology::{self, PciTopology};
use dpu_probe::pci::{self, PciFilter, PciFunction, PciFunctionKind};
use dpu_probe::rdma::ib::{self, IbPortAttributes};
use dpu_probe::rdma::{self, RdmaDeviceInfo, RdmaPortInfo};
use dpu_probe::SysRoot;
use dpu_proto::v1::{self, inventory_client::InventoryClient};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use super::gdr::GdrFacts;
use crate::agent::session::AgentConnection;
use crate::facts::dcb::DcbFacts;
use dpu_probe::fw_config::{gather_fw, FwFacts, SystemFwTool};

/// The host as sysfs shows it. Each part keeps its own error so one unreadable tree
/// fails only the checks that need it.
#[derive(Debug)]
pub struct HostFacts {
    /// PCI functions (BlueField ones are looked for).
    pub pci: Result<Vec<PciFunction>, String>,
    /// Network interfaces.
    pub netdevs: Result<Vec<NetdevInfo>, String>,
    /// RDMA devices and their ports.
    pub rdma: Result<Vec<RdmaDeviceInfo>, String>,
    /// NVIDIA GPUs, RDMA NICs and their PCIe relation (the `gpu.*` checks).
    pub gpu_topology: Result<PciTopology, String>,
    /// Every RDMA port's InfiniBand attributes (LID, SM, rate, P_Key), RoCE ports too so
    /// the `ib.*` checks can name what they skipped.
    pub ib_ports: Result<Vec<IbPortAttributes>, String>,
    /// The NICs' firmware settings (`mlxconfig`/`mstconfig -e query`; the `fw.*` checks).
    pub firmware: FwFacts,
    /// Peer memory, DMA-BUF, IOMMU mode and the ACS of the bridges between GPUs and
    /// their NICs (the `gdr.*` checks).
    pub gdr: GdrFacts,
    /// Each rail's DCB configuration (`RTM_GETDCB`, live system only) and RoCE default
    /// ToS (the `dcb.*` checks).
    pub dcb: DcbFacts,
    /// The hypervisor this host runs under, `None` on bare metal: a VM without a NIC
    /// gets a fix that fits it.
    pub hypervisor: Option<String>,
}

/// The interface the RDMA and MTU checks are about, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataInterface {
    /// Its name.
    pub ifname: String,
    /// Why it was chosen (`--interface`, first BlueField netdev with carrier ...).
    pub chosen_because: String,
}

/// What the agent said, if it was asked.
#[derive(Debug)]
pub enum AgentFacts {
    /// `--no-agent`.
    NotAsked,
    /// Connecting or the health call failed.
    Unreachable(String),
    /// It answered.
    Reached {
        /// Whether its health check said SERVING.
        serving: bool,
        /// `Inventory.GetSystem`.
        system: Box<Result<v1::System, String>>,
        /// `Inventory.ListNetdevs`.
        netdevs: Result<Vec<v1::Netdev>, String>,
        /// `Inventory.GetFabricConfig`: the uplinks' DCB and the firmware settings as the
        /// DPU reads them (the DPU-side `dcb.*` and `fw.*` results).
        fabric: Box<Result<v1::FabricConfig, String>>,
    },
}

impl HostFacts {
    /// Reads everything under `root`.
    pub fn gather(root: &SysRoot) -> Self {
        let text = |e: dpu_probe::ProbeError| dpu_probe::error_chain(&e);
        let mut host = Self {
            pci: pci::list_pci_functions(root, PciFilter::BlueField).map_err(text),
            netdevs: netdev::list_netdevs(root).map_err(text),
            rdma: rdma::list_rdma_devices(root).map_err(text),
            gpu_topology: topology::read_pci_topology(root).map_err(text),
            ib_ports: ib::list_ib_port_attributes(root).map_err(text),
            firmware: gather_fw(root, &SystemFwTool),
            gdr: GdrFacts::gather(root),
            dcb: DcbFacts::default(),
            hypervisor: dpu_probe::virtualization::hypervisor(root),
        };
        host.gather_dcb(root, &[], &[]);
        host
    }

    /// Reads the DCB facts of the rails `interfaces`/`devices` select (as
    /// [`data_interfaces`](Self::data_interfaces) picks them) that are not read yet:
    /// [`gather`](Self::gather) reads the default rails, `dpuctl check --interface IF`
    /// adds its own. A selection that names nothing reads nothing (it is refused later).
    pub fn gather_dcb(&mut self, root: &SysRoot, interfaces: &[String], devices: &[String]) {
        let Ok(rails) = self.data_interfaces(interfaces, devices) else {
            return;
        };
        for data in rails {
            let rdma = self
                .rdma_port_for(&data.ifname)
                .map(|(device, port)| (device.ibdev.clone(), port.port));
            let rdma = rdma.as_ref().map(|(ibdev, port)| (ibdev.as_str(), *port));
            self.dcb.read_rail(root, &data.ifname, rdma);
        }
    }

    /// BlueField integrated NIC functions.
    pub fn bluefield_nics(&self) -> Vec<&PciFunction> {
        self.pci
            .as_ref()
            .map(|all| {
                all.iter()
                    .filter(|f| f.kind == PciFunctionKind::BlueFieldNic)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A netdev by name.
    pub fn netdev(&self, ifname: &str) -> Option<&NetdevInfo> {
        self.netdevs
            .as_ref()
            .ok()?
            .iter()
            .find(|n| n.ifname == ifname)
    }

    /// The data interfaces (rails) the per-port checks judge, in order: every
    /// `--interface` given; else the netdev of every `--device DEV[/PORT]` given; else the
    /// netdev of every RDMA port of the host that is not on an SR-IOV virtual function and
    /// not administratively down (a GPU server's eight ConnectX rails, a BlueField's
    /// uplink PFs in use, a soft-RoCE port);
    /// else, on a host whose BlueField has no RDMA device, its first netdev (so the RDMA
    /// checks say what is missing). An unknown device or port, or a port without a
    /// netdev, is an error naming it and what the host has.
    pub fn data_interfaces(
        &self,
        interfaces: &[String],
        devices: &[String],
    ) -> Result<Vec<DataInterface>, String> {
        if !interfaces.is_empty() {
            // The same rule as `--device`: a name the host does not have is bad input,
            // not a failed check (whose fix would send someone to check a cable).
            if let Ok(netdevs) = &self.netdevs {
                if let Some(missing) = interfaces
                    .iter()
                    .find(|wanted| !netdevs.iter().any(|n| &n.ifname == *wanted))
                {
                    let names: Vec<&str> = netdevs.iter().map(|n| n.ifname.as_str()).collect();
                    let known = if names.is_empty() {
                        "this host has no network interface".to_owned()
                    } else {
                        format!("this host has {}", names.join(", "))
                    };
                    return Err(format!(
                        "--interface {missing}: no such interface ({known})"
                    ));
                }
            }
            return Ok(interfaces
                .iter()
                .map(|ifname| DataInterface {
                    ifname: ifname.clone(),
                    chosen_because: "--interface".to_owned(),
                })
                .collect());
        }
        let rdma = self.rdma.as_deref().unwrap_or_default();
        if !devices.is_empty() {
            return devices
                .iter()
                .map(|wanted| self.selected_rail(rdma, wanted))
                .collect();
        }
        let mut rails = Vec::new();
        for device in rdma {
            for port in &device.ports {
                let Some(netdev) = self.rail_netdev(device, port) else {
                    continue;
                };
                // An SR-IOV VF left in the host, or a netdev the operator keeps
                // administratively down (its `carrier` is unreadable then), is not a rail.
                let unused = netdev.virtual_function || netdev.carrier.is_none();
                if unused
                    || rails
                        .iter()
                        .any(|r: &DataInterface| r.ifname == netdev.ifname)
                {
                    continue;
                }
                rails.push(DataInterface {
                    ifname: netdev.ifname.clone(),
                    chosen_because: format!(
                        "the netdev of RDMA port {}/{}",
                        device.ibdev, port.port
                    ),
                });
            }
        }
        if rails.is_empty() {
            if let Some(first) = self.bluefield_netdev() {
                rails.push(first);
            }
        }
        Ok(rails)
    }

    /// The rail `--device DEV[/PORT]` names (port 1 when none is given).
    fn selected_rail(
        &self,
        rdma: &[RdmaDeviceInfo],
        wanted: &str,
    ) -> Result<DataInterface, String> {
        let (ibdev, port) = match wanted.split_once('/') {
            Some((ibdev, port)) => {
                let port = port
                    .parse::<u32>()
                    .map_err(|_| format!("--device {wanted}: {port:?} is not a port number"))?;
                (ibdev, port)
            }
            None => (wanted, 1),
        };
        let known = || {
            let names: Vec<&str> = rdma.iter().map(|d| d.ibdev.as_str()).collect();
            if names.is_empty() {
                "this host has no RDMA device".to_owned()
            } else {
                format!("this host has {}", names.join(", "))
            }
        };
        let device = rdma
            .iter()
            .find(|d| d.ibdev == ibdev)
            .ok_or_else(|| format!("--device {wanted}: no RDMA device {ibdev} ({})", known()))?;
        let rdma_port = device
            .ports
            .iter()
            .find(|p| p.port == port)
            .ok_or_else(|| {
                let ports: Vec<String> = device.ports.iter().map(|p| p.port.to_string()).collect();
                format!(
                    "--device {wanted}: {ibdev} has no port {port} (ports: {})",
                    ports.join(", ")
                )
            })?;
        let netdev = self.rail_netdev(device, rdma_port).ok_or_else(|| {
            format!(
                "--device {wanted}: {ibdev}/{port} has no netdev to check (pass --interface IF)"
            )
        })?;
        Ok(DataInterface {
            ifname: netdev.ifname.clone(),
            chosen_because: format!("--device {ibdev}/{port}"),
        })
    }

    /// The netdev that carries an RDMA port's traffic: the netdev of the port's own GIDs
    /// that sits on the device's PCI function (any, for a device without one, such as
    /// soft-RoCE), else a netdev of that function that is not a representor.
    fn rail_netdev(&self, device: &RdmaDeviceInfo, port: &RdmaPortInfo) -> Option<&NetdevInfo> {
        let on_function =
            |n: &NetdevInfo| device.pci_address.is_none() || n.pci_address == device.pci_address;
        port.gids
            .iter()
            .filter_map(|g| self.netdev(g.netdev.as_deref()?))
            .find(|n| on_function(n))
            .or_else(|| {
                let netdevs = self.netdevs.as_deref().unwrap_or_default();
                netdevs.iter().find(|n| {
                    device.pci_address.is_some()
                        && n.pci_address == device.pci_address
                        && n.role().is_none()
                })
            })
    }

    /// The first BlueField NIC netdev with an RDMA device and carrier, else the first
    /// BlueField NIC netdev.
    fn bluefield_netdev(&self) -> Option<DataInterface> {
        let nics = self.bluefield_nics();
        let candidates = nics
            .iter()
            .flat_map(|f| f.netdevs.iter().map(move |n| (*f, n.as_str())));
        let mut first = None;
        for (function, ifname) in candidates {
            first.get_or_insert((function, ifname));
            let carrier = self.netdev(ifname).and_then(|n| n.carrier) == Some(true);
            if carrier && !function.rdma_devices.is_empty() {
                return Some(DataInterface {
                    ifname: ifname.to_owned(),
                    chosen_because: format!(
                        "first BlueField netdev with carrier and RDMA ({})",
                        function.address
                    ),
                });
            }
        }
        first.map(|(function, ifname)| DataInterface {
            ifname: ifname.to_owned(),
            chosen_because: format!("first BlueField netdev ({})", function.address),
        })
    }

    /// The RDMA device and port bound to a netdev: by the GID table's netdev first (what
    /// RoCE really uses), then by the PCI function.
    pub fn rdma_port_for(&self, ifname: &str) -> Option<(&RdmaDeviceInfo, &RdmaPortInfo)> {
        let devices = self.rdma.as_ref().ok()?;
        for device in devices {
            for port in &device.ports {
                if port
                    .gids
                    .iter()
                    .any(|g| g.netdev.as_deref() == Some(ifname))
                {
                    return Some((device, port));
                }
            }
        }
        let pci = self.netdev(ifname)?.pci_address.as_deref()?;
        let device = devices
            .iter()
            .find(|d| d.pci_address.as_deref() == Some(pci))?;
        Some((device, device.ports.first()?))
    }
}

impl AgentFacts {
    /// Asks the agent for health, system, netdevs and fabric configuration.
    pub async fn gather(agent: &AgentConnection) -> Self {
        let channel = match agent.channel().await {
            Ok(channel) => channel,
            Err(e) => return Self::Unreachable(format!("{e:#}")),
        };
        let deadline = agent.timeout();
        let health = tokio::time::timeout(
            deadline,
            HealthClient::new(channel.clone()).check(HealthCheckRequest {
                service: String::new(),
            }),
        )
        .await;
        let serving = match health {
            Ok(Ok(reply)) => reply.into_inner().status == ServingStatus::Serving as i32,
            Ok(Err(status)) => {
                return Self::Unreachable(format!(
                    "health check failed: {:?}: {}",
                    status.code(),
                    status.message()
                ))
            }
            Err(_) => return Self::Unreachable(format!("no health answer within {deadline:?}")),
        };
        let mut inventory =
            InventoryClient::new(channel).max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES);
        let system = call(deadline, inventory.get_system(v1::GetSystemRequest {}))
            .await
            .map(tonic::Response::into_inner);
        let netdevs = call(
            deadline,
            inventory.list_netdevs(v1::ListNetdevsRequest::default()),
        )
        .await
        .map(|r| r.into_inner().netdevs);
        let fabric = call(
            deadline,
            inventory.get_fabric_config(v1::GetFabricConfigRequest {}),
        )
        .await
        .map(tonic::Response::into_inner);
        Self::Reached {
            serving,
            system: Box::new(system),
            netdevs,
            fabric: Box::new(fabric),
        }
    }
}

async fn call<T>(
    deadline: Duration,
    fut: impl std::future::Future<Output = Result<T, tonic::Status>>,
) -> Result<T, String> {
    match tokio::time::timeout(deadline, fut).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(status)) => Err(format!("{:?}: {}", status.code(), status.message())),
        Err(_) => Err(format!("no answer within {deadline:?}")),
    }
}
