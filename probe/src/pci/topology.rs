//! Where the NVIDIA GPUs sit relative to the RDMA NICs on PCIe, in the terms of
//! `nvidia-smi topo -m` (PIX, PXB, PHB, NODE, SYS), read from the `/sys/devices` tree.
//! NCCL sends each GPU's network traffic through its nearest NIC and allows GPUDirect
//! RDMA only up to PXB by default, so this relation decides a GPU server's network
//! bandwidth (definitions and sources: `docs/reference/gpu-topology.md`).
//!
//! Each device's link (`sys/bus/pci/devices/<bdf>`, `sys/class/infiniband/<dev>/device`)
//! resolves to its real path, `sys/devices/[...]/pciDDDD:BB/<root port>/<bridge>.../<bdf>`:
//! `pciDDDD:BB` is its PCI host bridge (root complex), the addresses between it and the
//! device are the PCIe bridges above it (root port, switch ports). Two devices' relation
//! follows from where their paths part, and from their `numa_node` files.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::root::{list_dir, read_attr};
use crate::{ProbeError, SysRoot};

/// PCI vendor ID of NVIDIA (GPUs; NVIDIA networking keeps Mellanox's `0x15b3`).
pub const NVIDIA_VENDOR_ID: u16 = 0x10de;

/// How two PCI functions are connected, nearest first (the order is meaningful: a GPU's
/// nearest NIC is the one with the smallest relation). Names and meanings are those of
/// the `nvidia-smi topo -m` legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PciRelation {
    /// At most a single PCIe bridge (switch) between them: they hang off the same switch
    /// (or the same bus).
    Pix,
    /// Several PCIe bridges between them, but not the host bridge.
    Pxb,
    /// Through the PCIe host bridge (the CPU's root complex): below different root ports
    /// of one host bridge.
    Phb,
    /// Different host bridges within one NUMA node.
    Node,
    /// Different host bridges and at least one `numa_node` unknown: NODE or SYS, which
    /// one is not known (and not guessed).
    NodeOrSys,
    /// Different host bridges on different NUMA nodes: across the SMP interconnect
    /// (QPI/UPI, xGMI) between sockets.
    Sys,
}

impl PciRelation {
    /// The `nvidia-smi topo -m` label ("PIX", ...); `NODE|SYS` when undecided.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pix => "PIX",
            Self::Pxb => "PXB",
            Self::Phb => "PHB",
            Self::Node => "NODE",
            Self::NodeOrSys => "NODE|SYS",
            Self::Sys => "SYS",
        }
    }
}

/// Where one PCI function sits in the PCIe hierarchy: what a relation is computed from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PciPlacement {
    /// Its address, `dddd:bb:dd.f`.
    pub address: String,
    /// Its host bridge's sysfs path below `sys/devices` (ends in `pciDDDD:BB`): devices
    /// share a root complex exactly when this is equal.
    pub host_bridge: String,
    /// The PCIe bridges between the host bridge and the function, root port first.
    pub bridges: Vec<String>,
    /// `numa_node`; `None` when the file is absent (no `CONFIG_NUMA`) or says -1.
    pub numa_node: Option<u32>,
}

impl PciPlacement {
    /// The host bridge's name (`pci0000:17`), for display.
    pub fn host_bridge_name(&self) -> &str {
        self.host_bridge
            .rsplit('/')
            .next()
            .unwrap_or(&self.host_bridge)
    }
}

/// The relation of two placed functions (symmetric).
///
/// Same host bridge: parting right below it (different root ports) is PHB; otherwise
/// each side's bridges below the last shared one are counted, and at most one on each
/// side (the two downstream ports of one switch, or none: the same bus) is PIX, more is
/// PXB. Different host bridges: NODE or SYS by `numa_node`, NODE|SYS when one is unknown.
pub fn pci_relation(a: &PciPlacement, b: &PciPlacement) -> PciRelation {
    if a.host_bridge != b.host_bridge {
        return match (a.numa_node, b.numa_node) {
            (Some(x), Some(y)) if x == y => PciRelation::Node,
            (Some(_), Some(_)) => PciRelation::Sys,
            _ => PciRelation::NodeOrSys,
        };
    }
    let shared = a
        .bridges
        .iter()
        .zip(&b.bridges)
        .take_while(|(x, y)| x == y)
        .count();
    if shared == 0 {
        return PciRelation::Phb;
    }
    let below_a = a.bridges.len() - shared;
    let below_b = b.bridges.len() - shared;
    if below_a <= 1 && below_b <= 1 {
        PciRelation::Pix
    } else {
        PciRelation::Pxb
    }
}

/// An NVIDIA GPU: vendor `0x10de`, class 3D controller (`0x0302xx`) or VGA (`0x0300xx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyGpu {
    /// Where it sits.
    pub placement: PciPlacement,
    /// `class` (24 bits), which tells a data-center GPU (3D controller) from a display one.
    pub class_code: u32,
}

/// An RDMA device on a PCI function (one ConnectX/BlueField PF or VF).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyNic {
    /// Its name (`mlx5_0`), what `NCCL_IB_HCA` lists.
    pub ibdev: String,
    /// Its port numbers (`ports/`): all share the function's PCIe relation.
    pub ports: Vec<u32>,
    /// Where its function sits.
    pub placement: PciPlacement,
}

/// The GPUs, the RDMA NICs and the relation of every GPU to every NIC: the GPU x NIC part
/// of `nvidia-smi topo -m`, without NVLink (sysfs does not show it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PciTopology {
    gpus: Vec<TopologyGpu>,
    nics: Vec<TopologyNic>,
    unplaced_rdma: Vec<String>,
    relations: Vec<Vec<PciRelation>>,
}

impl PciTopology {
    /// A topology of these devices, the relations computed; GPUs sorted by address, NICs
    /// by address then name (so a matrix reads in PCIe order, like `lspci`).
    pub fn new(
        mut gpus: Vec<TopologyGpu>,
        mut nics: Vec<TopologyNic>,
        unplaced_rdma: Vec<String>,
    ) -> Self {
        gpus.sort_by(|a, b| a.placement.address.cmp(&b.placement.address));
        nics.sort_by(|a, b| {
            (&a.placement.address, &a.ibdev).cmp(&(&b.placement.address, &b.ibdev))
        });
        let relations = gpus
            .iter()
            .map(|g| {
                nics.iter()
                    .map(|n| pci_relation(&g.placement, &n.placement))
                    .collect()
            })
            .collect();
        Self {
            gpus,
            nics,
            unplaced_rdma,
            relations,
        }
    }

    /// The GPUs, by address.
    pub fn gpus(&self) -> &[TopologyGpu] {
        &self.gpus
    }

    /// The RDMA NICs on PCI functions, by address.
    pub fn nics(&self) -> &[TopologyNic] {
        &self.nics
    }

    /// RDMA devices without a PCI function (soft-RoCE `rxe`, `siw`): no relation exists.
    pub fn unplaced_rdma(&self) -> &[String] {
        &self.unplaced_rdma
    }

    /// The relation of GPU `gpu` to NIC `nic` (indexes into [`Self::gpus`], [`Self::nics`]).
    pub fn relation(&self, gpu: usize, nic: usize) -> Option<PciRelation> {
        self.relations.get(gpu)?.get(nic).copied()
    }

    /// GPU `gpu`'s row of the matrix, one relation per NIC in [`Self::nics`] order.
    pub fn row(&self, gpu: usize) -> &[PciRelation] {
        self.relations.get(gpu).map_or(&[], Vec::as_slice)
    }

    /// The NICs nearest to GPU `gpu` (several when tied) and their relation; `None` when
    /// there is no such GPU or no NIC.
    pub fn nearest_nics(&self, gpu: usize) -> Option<(PciRelation, Vec<usize>)> {
        let row = self.row(gpu);
        let best = row.iter().min().copied()?;
        let nearest = (0..row.len()).filter(|&n| row[n] == best).collect();
        Some((best, nearest))
    }
}

/// Reads the GPUs (`sys/bus/pci/devices`) and RDMA NICs (`sys/class/infiniband`) under
/// `root` and relates them. Absent directories mean none; an unreadable or malformed
/// `vendor`, `class` or `numa_node`, or a link that does not resolve into a PCI hierarchy
/// under `sys/devices`, is an error naming the file. An RDMA device whose `device` link is
/// absent or not a PCI function is listed as unplaced.
pub fn read_pci_topology(root: &SysRoot) -> Result<PciTopology, ProbeError> {
    let devices = Devices::new(root)?;
    let gpus = read_gpus(root, &devices)?;
    let (nics, unplaced) = read_nics(root, &devices)?;
    Ok(PciTopology::new(gpus, nics, unplaced))
}

fn read_gpus(root: &SysRoot, devices: &Devices) -> Result<Vec<TopologyGpu>, ProbeError> {
    let dir = root.sys("bus/pci/devices");
    let mut gpus = Vec::new();
    for address in list_dir(&dir)? {
        if !looks_like_bdf(&address) {
            continue;
        }
        let function = dir.join(&address);
        let vendor = read_hex(&function.join("vendor"))?;
        if vendor != u32::from(NVIDIA_VENDOR_ID) {
            continue;
        }
        let class_code = read_hex(&function.join("class"))?;
        if matches!(class_code >> 8, 0x0302 | 0x0300) {
            let placement = devices.place(&function)?;
            gpus.push(TopologyGpu {
                placement,
                class_code,
            });
        }
    }
    Ok(gpus)
}

fn read_nics(
    root: &SysRoot,
    devices: &Devices,
) -> Result<(Vec<TopologyNic>, Vec<String>), ProbeError> {
    let class = root.sys("class/infiniband");
    let mut nics = Vec::new();
    let mut unplaced = Vec::new();
    for ibdev in list_dir(&class)? {
        let link = class.join(&ibdev).join("device");
        let is_pci = match fs::symlink_metadata(&link) {
            Ok(_) => {
                let real =
                    crate::root::canonicalize(&link).map_err(|e| ProbeError::read(&link, e))?;
                real.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(looks_like_bdf)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(ProbeError::read(&link, e)),
        };
        if !is_pci {
            unplaced.push(ibdev);
            continue;
        }
        let ports_dir = class.join(&ibdev).join("ports");
        let ports = list_dir(&ports_dir)?
            .iter()
            .map(|p| {
                p.parse::<u32>().map_err(|_| ProbeError::Format {
                    path: ports_dir.clone(),
                    detail: format!("port {p:?} is not a number"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let placement = devices.place(&link)?;
        nics.push(TopologyNic {
            ibdev,
            ports,
            placement,
        });
    }
    Ok((nics, unplaced))
}

/// `sys/devices` under the root, resolved once, against which device links are placed.
struct Devices {
    link_root: PathBuf,
    real: Option<PathBuf>,
}

impl Devices {
    fn new(root: &SysRoot) -> Result<Self, ProbeError> {
        let link_root = root.sys("devices");
        let real = match crate::root::canonicalize(&link_root) {
            Ok(real) => Some(real),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(ProbeError::read(&link_root, e)),
        };
        Ok(Self { link_root, real })
    }

    /// Resolves `link` (a function's directory or a link to it) and reads its place.
    fn place(&self, link: &Path) -> Result<PciPlacement, ProbeError> {
        let real = crate::root::canonicalize(link).map_err(|e| ProbeError::read(link, e))?;
        let not_pci = |why: &str| ProbeError::Format {
            path: link.to_owned(),
            detail: format!(
                "resolves to {}: {why} (expected {}/.../pciDDDD:BB/<bridges>/<bdf>)",
                real.display(),
                self.link_root.display()
            ),
        };
        let below = self
            .real
            .as_ref()
            .and_then(|devices| real.strip_prefix(devices).ok())
            .ok_or_else(|| not_pci("not under sys/devices"))?;
        let parts: Vec<&str> = below
            .iter()
            .map(|c| c.to_str().ok_or_else(|| not_pci("a non-UTF-8 name")))
            .collect::<Result<_, _>>()?;
        // The function and the bridges above it are addresses; the component before the
        // first of them is the host bridge.
        let first_address = parts
            .iter()
            .rposition(|p| !looks_like_bdf(p))
            .map_or(0, |i| i + 1);
        let Some((address, bridges)) = parts[first_address..].split_last() else {
            return Err(not_pci("the last component is not a PCI address"));
        };
        let under_host_bridge = first_address
            .checked_sub(1)
            .is_some_and(|i| looks_like_host_bridge(parts[i]));
        if !under_host_bridge {
            return Err(not_pci("no PCI host bridge pciDDDD:BB above the bridges"));
        }
        Ok(PciPlacement {
            address: (*address).to_owned(),
            host_bridge: parts[..first_address].join("/"),
            bridges: bridges.iter().map(|b| (*b).to_owned()).collect(),
            numa_node: read_numa_node(&real.join("numa_node"))?,
        })
    }
}

/// `numa_node` (the kernel prints `%d`, -1 for `NUMA_NO_NODE`); absent without
/// `CONFIG_NUMA`. Absent or -1 is unknown; anything else unparsable is an error.
fn read_numa_node(path: &Path) -> Result<Option<u32>, ProbeError> {
    let text = match read_attr(path) {
        Ok(text) => text,
        Err(ProbeError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    match text.trim().parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(node) => u32::try_from(node)
            .map(Some)
            .map_err(|_| ProbeError::Format {
                path: path.to_owned(),
                detail: format!("NUMA node {node} is neither -1 nor a node number"),
            }),
        Err(_) => Err(ProbeError::Format {
            path: path.to_owned(),
            detail: format!("{text:?} is not a NUMA node number"),
        }),
    }
}

/// Reads a hex attribute such as `vendor` ("0x10de") or `class` ("0x030200").
fn read_hex(path: &Path) -> Result<u32, ProbeError> {
    let text = read_attr(path)?;
    let digits = text.trim();
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .unwrap_or(digits);
    u32::from_str_radix(digits, 16).map_err(|_| ProbeError::Format {
        path: path.to_owned(),
        detail: format!("{text:?} is not a hexadecimal number"),
    })
}

/// `dddd:bb:dd.f`, with a domain of 4 to 8 hex digits (VMD domains have 5).
fn looks_like_bdf(text: &str) -> bool {
    let mut parts = text.split(':');
    let (Some(domain), Some(bus), Some(slot), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((device, function)) = slot.split_once('.') else {
        return false;
    };
    is_hex(domain, 4..=8)
        && is_hex(bus, 2..=2)
        && is_hex(device, 2..=2)
        && matches!(function.as_bytes(), [b'0'..=b'7'])
}

/// `pciDDDD:BB`: the directory the kernel names after a host bridge's domain and root bus.
fn looks_like_host_bridge(text: &str) -> bool {
    text.strip_prefix("pci")
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(domain, bus)| is_hex(domain, 4..=8) && is_hex(bus, 2..=2))
}

fn is_hex(text: &str, len: std::ops::RangeInclusive<usize>) -> bool {
    len.contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests;
