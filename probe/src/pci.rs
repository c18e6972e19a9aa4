//! PCI functions from `/sys/bus/pci/devices`, classified for a BlueField deployment (IDs:
//! `docs/reference/rdma-bluefield.md` §2.1; discovery without MFT: §2.2; link files:
//! §1.1, kernel `drivers/pci/pci-sysfs.c`).
//!
//! The host checks need three answers from PCI alone: is a BlueField there (and which
//! generation), is its PCIe link running at what the card supports, and which netdevs,
//! RDMA devices and emulated functions (rshim, SNAP NVMe, virtio) hang off it.

pub mod acs;
pub mod topology;

use std::collections::BTreeMap;
use std::path::Path;

use crate::netdev::looks_like_pci_address;
use crate::root::{link_basename, list_dir, read_optional_attr};
use crate::{ProbeError, SysRoot};

/// PCI vendor ID of Mellanox / NVIDIA networking: every BlueField function except the
/// virtio emulations carries it.
pub const MELLANOX_VENDOR_ID: u16 = 0x15b3;

/// PCI vendor ID of virtio (Red Hat / Qumranet): BlueField virtio-net and virtio-blk
/// emulations present themselves with it, exactly like a hypervisor's virtio devices.
pub const VIRTIO_VENDOR_ID: u16 = 0x1af4;

/// BlueField generation, decided from the PCI device ID because `hca_type` exists only
/// once a driver and an RDMA device are up, while the ID is there even in recovery mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlueFieldGeneration {
    /// BlueField (ConnectX-5 based).
    BlueField1,
    /// BlueField-2 (ConnectX-6 Dx based).
    BlueField2,
    /// BlueField-3 Lx.
    BlueField3Lx,
    /// BlueField-3 (ConnectX-7 based).
    BlueField3,
    /// BlueField-4.
    BlueField4,
}

impl BlueFieldGeneration {
    /// The marketing name users search for, as the API reports it.
    pub fn name(self) -> &'static str {
        match self {
            Self::BlueField1 => "BlueField",
            Self::BlueField2 => "BlueField-2",
            Self::BlueField3Lx => "BlueField-3 Lx",
            Self::BlueField3 => "BlueField-3",
            Self::BlueField4 => "BlueField-4",
        }
    }
}

/// What a PCI function is in a BlueField deployment; checks and the API branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PciFunctionKind {
    /// The integrated ConnectX network function (`a2d2/a2d6/a2d9/a2dc/a2df`): the PF that
    /// carries the netdev and the RDMA device.
    BlueFieldNic,
    /// `a2d3`, "BlueField multicore SoC family VF": a VF of the integrated NIC.
    BlueFieldVf,
    /// The SoC management interface (`c2d2..c2d6`) the rshim daemon drives: boot, console,
    /// tmfifo networking from the host.
    Rshim,
    /// `c2d1`, the auxiliary communication channel.
    AuxChannel,
    /// The SoC itself as seen from the Arm's root complex (`a2d0/1`, `a2d4/5`, `a2d7/8`,
    /// `a2da/b`, `a2dd/e`, crypto enabled/disabled): its presence means "this is the Arm".
    Soc,
    /// SoC flash recovery ("livefish", `0211/0214/021c`, secure `0215/021d`): the card
    /// booted without usable firmware and needs reflashing.
    FlashRecovery,
    /// SNAP-emulated NVMe controller (`15b3:6001`, or a Mellanox function of class
    /// `0x0108xx`).
    SnapNvme,
    /// virtio-net 1.0 (`1af4:1041`), the BlueField virtio-net emulation on a host.
    VirtioNet,
    /// virtio-blk 1.0 (`1af4:1042`), the BlueField virtio-blk emulation on a host.
    VirtioBlk,
    /// A plain ConnectX adapter (`101d`, `1021`, `1023`, `1025`). mlnx-tools treats
    /// `1023|1025` as BF4 device IDs on the Arm; this reader does not, since pci.ids names
    /// them ConnectX-8/9.
    ConnectX,
    /// Any other Mellanox/NVIDIA function.
    OtherMellanox,
    /// Not Mellanox and not virtio (also: IDs unreadable).
    #[default]
    Other,
}

impl PciFunctionKind {
    /// Whether the function belongs to a BlueField deployment, i.e. what `ListPciFunctions`
    /// shows by default.
    ///
    /// virtio functions are included although a hypervisor's virtio devices have the same
    /// IDs: telling them apart needs the subsystem IDs, which the reference does not
    /// document for BlueField emulation (UNVERIFIED), so both are listed with their
    /// subsystem IDs and the reader decides.
    pub fn is_bluefield_related(self) -> bool {
        !matches!(self, Self::ConnectX | Self::OtherMellanox | Self::Other)
    }
}

/// Classifies a function from its IDs, so callers (and tests) can classify IDs they got
/// from elsewhere (`lspci -n`) the same way the reader does.
pub fn classify(
    vendor: u16,
    device: u16,
    class_code: Option<u32>,
) -> (PciFunctionKind, Option<BlueFieldGeneration>) {
    use BlueFieldGeneration::*;
    use PciFunctionKind::*;
    if vendor == VIRTIO_VENDOR_ID {
        return match device {
            0x1041 => (VirtioNet, None),
            0x1042 => (VirtioBlk, None),
            _ => (Other, None),
        };
    }
    if vendor != MELLANOX_VENDOR_ID {
        return (Other, None);
    }
    match device {
        0xa2d2 => (BlueFieldNic, Some(BlueField1)),
        0xa2d6 => (BlueFieldNic, Some(BlueField2)),
        0xa2d9 => (BlueFieldNic, Some(BlueField3Lx)),
        0xa2dc => (BlueFieldNic, Some(BlueField3)),
        0xa2df => (BlueFieldNic, Some(BlueField4)),
        0xa2d3 => (BlueFieldVf, None),
        0xa2d0 | 0xa2d1 => (Soc, Some(BlueField1)),
        0xa2d4 | 0xa2d5 => (Soc, Some(BlueField2)),
        0xa2d7 | 0xa2d8 => (Soc, Some(BlueField3Lx)),
        0xa2da | 0xa2db => (Soc, Some(BlueField3)),
        0xa2dd | 0xa2de => (Soc, Some(BlueField4)),
        0xc2d2 => (Rshim, Some(BlueField1)),
        0xc2d3 => (Rshim, Some(BlueField2)),
        // pci.ids names c2d4 BF3 Lx; rshim-user-space calls it BLUEFIELD3. pci.ids wins.
        0xc2d4 => (Rshim, Some(BlueField3Lx)),
        0xc2d5 => (Rshim, Some(BlueField3)),
        0xc2d6 => (Rshim, Some(BlueField4)),
        0xc2d1 => (AuxChannel, None),
        0x0211 => (FlashRecovery, Some(BlueField1)),
        // The secure variants sit next to their generation's ID (inferred, UNVERIFIED).
        0x0214 | 0x0215 => (FlashRecovery, Some(BlueField2)),
        0x021c | 0x021d => (FlashRecovery, Some(BlueField3)),
        0x6001 => (SnapNvme, None),
        0x101d | 0x1021 | 0x1023 | 0x1025 => (ConnectX, None),
        _ if class_code.is_some_and(|c| c >> 8 == 0x0108) => (SnapNvme, None),
        _ => (OtherMellanox, None),
    }
}

/// Which functions a listing returns. Reading a function's details costs a dozen files,
/// so the filter is applied on the IDs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PciFilter {
    /// BlueField-related functions ([`PciFunctionKind::is_bluefield_related`]).
    BlueField,
    /// Those plus every other function of vendor `0x15b3`.
    Mellanox,
    /// Every function.
    All,
}

impl PciFilter {
    fn admits(self, vendor: Option<u16>, kind: PciFunctionKind) -> bool {
        match self {
            Self::BlueField => kind.is_bluefield_related(),
            Self::Mellanox => kind.is_bluefield_related() || vendor == Some(MELLANOX_VENDOR_ID),
            Self::All => true,
        }
    }
}

/// A PCIe link, as negotiated or as the device's maximum. Either half may be unknown
/// (virtual functions, old kernels, "Unknown" speed), so both are optional.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PcieLink {
    /// Gigatransfers per second: 16.0 for Gen4, 32.0 for Gen5.
    pub speed_gts: Option<f64>,
    /// Lane count.
    pub width: Option<u32>,
}

impl PcieLink {
    /// Whether either half is known; an all-unknown link is reported as absent.
    pub fn is_known(&self) -> bool {
        self.speed_gts.is_some() || self.width.is_some()
    }
}

/// Parses `current_link_speed` / `max_link_speed`: older kernels print "16 GT/s", newer
/// ones "16.0 GT/s PCIe", and "Unknown" when the speed is not known; only the leading
/// number matters.
pub fn parse_link_speed(text: &str) -> Option<f64> {
    let number = text.split_whitespace().next()?;
    let speed: f64 = number.parse().ok()?;
    (speed.is_finite() && speed > 0.0).then_some(speed)
}

/// Parses `current_link_width` / `max_link_width` (a plain integer; 0 means unknown).
pub fn parse_link_width(text: &str) -> Option<u32> {
    let text = text.trim();
    let digits = text.strip_prefix('x').unwrap_or(text);
    digits.parse().ok().filter(|&w| w > 0)
}

/// One PCI function with what the checks need. Every field read from sysfs is optional:
/// virtual functions, containers and old kernels lack some files, and an absent file
/// must never stop the listing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PciFunction {
    /// Canonical address `dddd:bb:dd.f`.
    pub address: String,
    /// `vendor`.
    pub vendor_id: Option<u16>,
    /// `device`.
    pub device_id: Option<u16>,
    /// `subsystem_vendor`: tells an OEM card (or, possibly, an emulation) from another.
    pub subsystem_vendor_id: Option<u16>,
    /// `subsystem_device`.
    pub subsystem_device_id: Option<u16>,
    /// `class` (24 bits: class, subclass, prog-if).
    pub class_code: Option<u32>,
    /// What the function is.
    pub kind: PciFunctionKind,
    /// BlueField generation when the device ID says so.
    pub generation: Option<BlueFieldGeneration>,
    /// Bound driver (`driver` link), e.g. "mlx5_core", "nvme"; none when unbound.
    pub driver: Option<String>,
    /// NUMA node; `None` when the platform has none (`-1`).
    pub numa_node: Option<u32>,
    /// Negotiated link.
    pub current_link: PcieLink,
    /// What the device supports.
    pub max_link: PcieLink,
    /// NIC firmware (`fw_ver` of the function's RDMA device), when one is bound.
    pub firmware_version: Option<String>,
    /// Netdevs on the function (`net/`).
    pub netdevs: Vec<String>,
    /// RDMA devices on the function (`infiniband/`).
    pub rdma_devices: Vec<String>,
}

impl PciFunction {
    /// The generation's name ("BlueField-3"), for display and the API.
    pub fn model(&self) -> Option<&'static str> {
        self.generation.map(BlueFieldGeneration::name)
    }

    /// Domain, bus and device without the function number ("0000:3b:00"): functions of
    /// one card share it, so the rshim of a NIC function is found in its slot.
    pub fn slot(&self) -> &str {
        self.address
            .rsplit_once('.')
            .map_or(self.address.as_str(), |(slot, _)| slot)
    }

    /// Whether the link runs below what the device supports (fewer lanes or a lower
    /// speed); `None` when neither can be compared. A narrower link is a slot or riser
    /// problem; a slower one may also be the slot's generation or power saving.
    pub fn link_degraded(&self) -> Option<bool> {
        let width = self
            .current_link
            .width
            .zip(self.max_link.width)
            .map(|(cur, max)| cur < max);
        let speed = self
            .current_link
            .speed_gts
            .zip(self.max_link.speed_gts)
            .map(|(cur, max)| cur + 0.01 < max);
        match (width, speed) {
            (None, None) => None,
            (w, s) => Some(w.unwrap_or(false) || s.unwrap_or(false)),
        }
    }

    /// A one-line finding for a degraded link, e.g. "PCIe link x8 of x16, 16.0 of 16.0
    /// GT/s: about 50% of the bandwidth the device supports"; `None` when not degraded.
    pub fn link_finding(&self) -> Option<String> {
        if self.link_degraded() != Some(true) {
            return None;
        }
        let width = |w: Option<u32>| w.map_or("x?".to_owned(), |w| format!("x{w}"));
        let speed = |s: Option<f64>| s.map_or("?".to_owned(), |s| format!("{s:.1}"));
        let (cur, max) = (&self.current_link, &self.max_link);
        let mut text = format!(
            "PCIe link {} of {}, {} of {} GT/s",
            width(cur.width),
            width(max.width),
            speed(cur.speed_gts),
            speed(max.speed_gts)
        );
        let lanes = |l: &PcieLink| Some(l.speed_gts? * f64::from(l.width?));
        if let (Some(have), Some(could)) = (lanes(cur), lanes(max)) {
            // Ignores the Gen1/2 vs Gen3+ line encoding: "about" is honest enough.
            let percent = (have / could * 100.0).round();
            text.push_str(&format!(
                ": about {percent}% of the bandwidth the device supports"
            ));
        }
        Some(text)
    }
}

/// Lists PCI functions, sorted by address; an absent `/sys/bus/pci/devices` means none.
pub fn list_pci_functions(
    root: &SysRoot,
    filter: PciFilter,
) -> Result<Vec<PciFunction>, ProbeError> {
    let dir = root.sys("bus/pci/devices");
    let mut ibdev_owners = None;
    let mut functions = Vec::new();
    for address in list_dir(&dir)? {
        if !looks_like_pci_address(&address) {
            continue;
        }
        let mut function = read_ids(&dir.join(&address), &address);
        if filter.admits(function.vendor_id, function.kind) {
            let owners = ibdev_owners.get_or_insert_with(|| rdma_owners(root));
            read_details(root, &dir.join(&address), &mut function, owners)?;
            functions.push(function);
        }
    }
    Ok(functions)
}

/// Reads one function; [`ProbeError::NotFound`] when it does not exist.
pub fn read_pci_function(root: &SysRoot, address: &str) -> Result<PciFunction, ProbeError> {
    let dir = root.sys("bus/pci/devices").join(address);
    if !looks_like_pci_address(address) || !crate::root::is_dir(&dir) {
        return Err(ProbeError::NotFound {
            what: "PCI function",
            name: address.to_owned(),
            root: root.sys("bus/pci/devices"),
        });
    }
    let mut function = read_ids(&dir, address);
    read_details(root, &dir, &mut function, &rdma_owners(root))?;
    Ok(function)
}

fn read_ids(dir: &Path, address: &str) -> PciFunction {
    let hex16 = |name: &str| {
        read_optional_attr(&dir.join(name)).and_then(|t| parse_hex(&t)?.try_into().ok())
    };
    let vendor_id = hex16("vendor");
    let device_id = hex16("device");
    let class_code = read_optional_attr(&dir.join("class")).and_then(|t| parse_hex(&t));
    let (kind, generation) = match (vendor_id, device_id) {
        (Some(vendor), Some(device)) => classify(vendor, device, class_code),
        _ => (PciFunctionKind::Other, None),
    };
    PciFunction {
        address: address.to_owned(),
        vendor_id,
        device_id,
        subsystem_vendor_id: hex16("subsystem_vendor"),
        subsystem_device_id: hex16("subsystem_device"),
        class_code,
        kind,
        generation,
        ..PciFunction::default()
    }
}

fn read_details(
    root: &SysRoot,
    dir: &Path,
    function: &mut PciFunction,
    ibdev_owners: &BTreeMap<String, Vec<String>>,
) -> Result<(), ProbeError> {
    let attr = |name: &str| read_optional_attr(&dir.join(name));
    function.driver = link_basename(&dir.join("driver"));
    function.numa_node = attr("numa_node").and_then(|n| n.parse::<u32>().ok());
    function.current_link = PcieLink {
        speed_gts: attr("current_link_speed").and_then(|s| parse_link_speed(&s)),
        width: attr("current_link_width").and_then(|w| parse_link_width(&w)),
    };
    function.max_link = PcieLink {
        speed_gts: attr("max_link_speed").and_then(|s| parse_link_speed(&s)),
        width: attr("max_link_width").and_then(|w| parse_link_width(&w)),
    };
    function.netdevs = list_dir(&dir.join("net"))?;
    function.rdma_devices = list_dir(&dir.join("infiniband"))?;
    if function.rdma_devices.is_empty() {
        // Some trees (containers, copied images) lack the function's `infiniband/`
        // directory but keep /sys/class/infiniband/*/device links.
        if let Some(owned) = ibdev_owners.get(&function.address) {
            function.rdma_devices.clone_from(owned);
        }
    }
    function.firmware_version = function.rdma_devices.iter().find_map(|ibdev| {
        read_optional_attr(&dir.join("infiniband").join(ibdev).join("fw_ver")).or_else(|| {
            read_optional_attr(&root.sys("class/infiniband").join(ibdev).join("fw_ver"))
        })
    });
    Ok(())
}

/// PCI address -> RDMA devices, from the `/sys/class/infiniband/*/device` links.
fn rdma_owners(root: &SysRoot) -> BTreeMap<String, Vec<String>> {
    let class = root.sys("class/infiniband");
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ibdev in list_dir(&class).unwrap_or_default() {
        if let Some(bdf) = link_basename(&class.join(&ibdev).join("device")) {
            owners.entry(bdf).or_default().push(ibdev);
        }
    }
    owners
}

/// Parses "0x15b3" (sysfs always prints the prefix; it is optional here).
fn parse_hex(text: &str) -> Option<u32> {
    let text = text.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests;
