//! The `gdr.*` checks: can a NIC read and write GPU memory directly (GPUDirect RDMA)?
//! It needs a way to register GPU memory with the NIC (`nvidia_peermem`, or DMA-BUF),
//! PCIe switch ports that do not redirect the peer traffic to the root complex (ACS), and
//! an IOMMU that does not translate it. Without the first NCCL logs "GPU Direct RDMA
//! Disabled" and stages every byte through host memory; the other two cost bandwidth or
//! break the transfers. Sources and what is unverified: `docs/reference/gpudirect-rdma.md`.
//!
//! The checks take [`GdrFacts`] and the PCIe topology rather than the whole `HostFacts`,
//! so that `facts.rs` can hold a [`GdrFacts`] without this module importing it back.

use std::collections::BTreeMap;

use dpu_probe::gdr_env::{self, GdrEnvironment};
use dpu_probe::pci::acs::{self, BridgeAcs};
use dpu_probe::pci::topology::{self, PciRelation, PciTopology, TopologyGpu, TopologyNic};
use dpu_probe::{error_chain, SysRoot};

use super::verdict::{fail, pass, put, skip, warn, CheckVerdict, Facts};

/// The oldest kernel with RDMA DMA-BUF memory registration (`ibv_reg_dmabuf_mr`).
const DMABUF_MIN_KERNEL: (u32, u32) = (5, 12);

/// What the `gdr.*` checks read, gathered with the host's other facts: the kernel's
/// GPUDirect RDMA environment and the ACS state of every PCIe bridge between a GPU and
/// its nearest NICs. Each keeps its own error, so one unreadable file skips only the
/// checks that need it.
#[derive(Debug)]
pub struct GdrFacts {
    /// Peer-memory modules, kernel release, NVIDIA driver, command line, IOMMU groups.
    pub environment: Result<GdrEnvironment, String>,
    /// ACS of each bridge below a GPU's and its nearest NIC's common ancestor, by PCI
    /// address (only pairs behind one PCIe switch hierarchy have such bridges).
    pub bridge_acs: BTreeMap<String, Result<BridgeAcs, String>>,
}

impl Default for GdrFacts {
    /// A host with nothing GPUDirect-related on it (what hand-built test hosts use).
    fn default() -> Self {
        Self {
            environment: Ok(GdrEnvironment::default()),
            bridge_acs: BTreeMap::new(),
        }
    }
}

impl GdrFacts {
    /// Reads everything under `root`. The topology is read again here (the `gpu.*`
    /// checks' copy lives in `HostFacts`) to know which bridges to read; when it cannot
    /// be read no bridge is, and `gdr.acs` skips on the topology error.
    pub fn gather(root: &SysRoot) -> Self {
        let environment = gdr_env::read_gdr_environment(root).map_err(|e| error_chain(&e));
        let mut bridge_acs = BTreeMap::new();
        if let Ok(topology) = topology::read_pci_topology(root) {
            for path in peer_paths(&topology) {
                for bridge in path.bridges.unwrap_or_default() {
                    bridge_acs.entry(bridge.to_owned()).or_insert_with(|| {
                        acs::read_bridge_acs(root, bridge).map_err(|e| error_chain(&e))
                    });
                }
            }
        }
        Self {
            environment,
            bridge_acs,
        }
    }
}

/// A GPU, one of its nearest NICs, and the bridges peer traffic between them crosses.
struct PeerPath<'a> {
    gpu: &'a TopologyGpu,
    nic: &'a TopologyNic,
    relation: PciRelation,
    /// The bridges below their common ancestor (switch ports), `None` when they share no
    /// bridge: their traffic crosses the root complex whatever ACS says.
    bridges: Option<Vec<&'a str>>,
}

fn peer_paths(topo: &PciTopology) -> Vec<PeerPath<'_>> {
    let mut paths = Vec::new();
    for (g, gpu) in topo.gpus().iter().enumerate() {
        let Some((relation, nics)) = topo.nearest_nics(g) else {
            continue;
        };
        for n in nics {
            let nic = &topo.nics()[n];
            let (a, b) = (&gpu.placement, &nic.placement);
            let shared = a
                .bridges
                .iter()
                .zip(&b.bridges)
                .take_while(|(x, y)| x == y)
                .count();
            let bridges = (a.host_bridge == b.host_bridge && shared > 0).then(|| {
                let mut below: Vec<&str> = Vec::new();
                for bridge in a.bridges[shared..].iter().chain(&b.bridges[shared..]) {
                    if !below.contains(&bridge.as_str()) {
                        below.push(bridge);
                    }
                }
                below
            });
            paths.push(PeerPath {
                gpu,
                nic,
                relation,
                bridges,
            });
        }
    }
    paths
}

/// The topology with GPUs and RDMA NICs on PCI functions, or the skip that says why
/// there is nothing to judge.
fn gpus_and_nics(topology: &Result<PciTopology, String>) -> Result<&PciTopology, CheckVerdict> {
    let topo = topology
        .as_ref()
        .map_err(|e| skip(format!("cannot read the PCIe topology: {e}")))?;
    if topo.gpus().is_empty() {
        return Err(skip(
            "no NVIDIA GPU on PCIe (vendor 0x10de, class 0x0302xx or 0x0300xx): no GPU memory to reach",
        ));
    }
    if topo.nics().is_empty() {
        return Err(skip(format!(
            "no RDMA NIC on a PCI function: nothing to do GPUDirect RDMA for the {} GPU(s)",
            topo.gpus().len()
        )));
    }
    Ok(topo)
}

fn environment(gdr: &GdrFacts) -> Result<&GdrEnvironment, CheckVerdict> {
    gdr.environment
        .as_ref()
        .map_err(|e| skip(format!("cannot read the GPUDirect RDMA environment: {e}")))
}

/// `gdr.peermem`: FAIL when GPUs and RDMA NICs exist but neither a peer-memory client
/// is loaded nor DMA-BUF is possible (kernel 5.12+ with the open kernel module).
pub(super) fn peermem(
    gdr: &GdrFacts,
    topology: &Result<PciTopology, String>,
    f: &mut Facts,
) -> CheckVerdict {
    let topo = match gpus_and_nics(topology) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    let env = match environment(gdr) {
        Ok(env) => env,
        Err(skipped) => return skipped,
    };
    f.insert("peer_memory", env.peer_memory.clone().into());
    put(f, "kernel_release", env.kernel_release.as_deref());
    let driver = env.nvidia_driver.as_ref();
    put(
        f,
        "nvidia_driver",
        driver.and_then(|d| d.version.as_deref()),
    );
    put(
        f,
        "open_kernel_module",
        driver.map(|d| d.open_kernel_module),
    );
    let kernel_ok = env.kernel_version().map(|v| v >= DMABUF_MIN_KERNEL);
    let open = driver.is_some_and(|d| d.open_kernel_module);
    let dmabuf = kernel_ok == Some(true) && open;
    f.insert("dmabuf_possible", dmabuf.into());
    let kernel = env.kernel_release.as_deref().unwrap_or("unknown");
    let driver_text = driver.map_or(
        "the NVIDIA driver is not loaded (no /proc/driver/nvidia/version)".to_owned(),
        |d| {
            format!(
                "{} driver {}",
                if d.open_kernel_module {
                    "open kernel module"
                } else {
                    "proprietary"
                },
                d.version.as_deref().unwrap_or("(version unknown)")
            )
        },
    );
    if !env.peer_memory.is_empty() {
        f.insert("path", "peermem".into());
        let also = if dmabuf {
            "; DMA-BUF is possible too"
        } else {
            ""
        };
        return pass(format!(
            "peer-memory client loaded ({}){also}",
            env.peer_memory.join(", ")
        ));
    }
    if dmabuf {
        f.insert("path", "dmabuf".into());
        return pass(format!(
            "no nvidia_peermem, but DMA-BUF: kernel {kernel} with the {driver_text}; NCCL \
             registers GPU memory through ibv_reg_dmabuf_mr unless NCCL_DMABUF_ENABLE=0"
        ));
    }
    if env.kernel_release.is_none() && driver.is_none() {
        return skip(
            "no kernel release or NVIDIA driver version under the root's /proc \
             (a sysfs-only image?), and no peer-memory module in /sys/module",
        );
    }
    let why_not_dmabuf = match (kernel_ok, open) {
        (Some(false), _) => format!("kernel {kernel} is older than 5.12"),
        (None, _) => format!("the kernel release {kernel:?} is not readable as a version"),
        (Some(true), false) => format!("{driver_text}, not the open kernel module"),
        (Some(true), true) => String::new(),
    };
    fail(format!(
        "{} GPU(s) and {} RDMA NIC(s) but no GPUDirect RDMA path: nvidia_peermem is not loaded \
         (no /sys/module/nvidia_peermem, no /proc/modules line) and DMA-BUF is not possible \
         ({why_not_dmabuf}); NCCL logs \"GPU Direct RDMA Disabled for HCA\" and stages every \
         transfer through host memory",
        topo.gpus().len(),
        topo.nics().len()
    ))
}

/// One bridge's ACS state in words, and whether it redirects peer traffic.
fn acs_text(acs: &BridgeAcs) -> (String, bool) {
    match acs {
        BridgeAcs::NeedsRoot { bytes } => (format!("needs root ({bytes} bytes readable)"), false),
        BridgeAcs::NoExtendedConfig => ("no extended config space".to_owned(), false),
        BridgeAcs::NotImplemented => ("no ACS capability".to_owned(), false),
        BridgeAcs::Implemented(cap) => (
            format!("ACSCtl {}", cap.control),
            cap.control.redirects_peer_traffic(),
        ),
    }
}

/// `gdr.acs`: FAIL when a bridge between a GPU and its nearest NIC (below their common
/// switch) has ACS P2P Request or Completion Redirect on.
pub(super) fn acs(
    gdr: &GdrFacts,
    topology: &Result<PciTopology, String>,
    f: &mut Facts,
) -> CheckVerdict {
    let topo = match gpus_and_nics(topology) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    let paths = peer_paths(topo);
    let (mut faults, mut needs_root, mut unread, mut judged) = (vec![], vec![], vec![], vec![]);
    let mut across = Vec::new();
    let mut records = Vec::new();
    for path in &paths {
        let (gpu, nic) = (&path.gpu.placement.address, &path.nic.ibdev);
        let mut r = Facts::new();
        r.insert("gpu", gpu.into());
        r.insert("rdma_device", nic.into());
        r.insert("relation", path.relation.label().into());
        let Some(bridges) = &path.bridges else {
            across.push(format!("{gpu} -> {nic} {}", path.relation.label()));
            records.push(r);
            continue;
        };
        let mut seen = Vec::new();
        let mut bridge_facts = Vec::new();
        for bridge in bridges {
            let mut b = Facts::new();
            b.insert("address", (*bridge).into());
            match gdr.bridge_acs.get(*bridge) {
                None => unread.push(format!("{bridge}: not read")),
                Some(Err(e)) => unread.push(e.clone()),
                Some(Ok(acs)) => {
                    let (text, redirects) = acs_text(acs);
                    if let BridgeAcs::Implemented(cap) = acs {
                        b.insert("acs_control", cap.control.names().into());
                        b.insert("acs_capability", cap.capability.names().into());
                    }
                    b.insert("acs", text.clone().into());
                    b.insert("redirects", redirects.into());
                    if matches!(acs, BridgeAcs::NeedsRoot { .. }) {
                        needs_root.push(format!("{bridge}/config"));
                    }
                    if redirects {
                        faults.push(format!(
                            "bridge {bridge} has {text} between GPU {gpu} and {nic}"
                        ));
                    }
                    seen.push(format!("{bridge} {text}"));
                }
            }
            bridge_facts.push(b);
        }
        r.insert("bridges", bridge_facts.into());
        records.push(r);
        judged.push(format!("{gpu} -> {nic} via {}", seen.join(", ")));
    }
    f.insert("pairs", records.into());
    if !faults.is_empty() {
        return fail(format!(
            "ACS P2P redirect on: {}: the switch sends GPUDirect RDMA traffic up to the \
             root complex (and its IOMMU) instead of across, which costs bandwidth or fails",
            faults.join("; ")
        ));
    }
    if !needs_root.is_empty() {
        return skip(format!(
            "needs root to read PCI extended config space ({}: shorter than 256 bytes \
             without CAP_SYS_ADMIN); run dpuctl check as root",
            needs_root.join(", ")
        ));
    }
    if !unread.is_empty() {
        return skip(format!("cannot read ACS: {}", unread.join("; ")));
    }
    if judged.is_empty() {
        return skip(format!(
            "no GPU shares a PCIe switch with its nearest NIC ({}): their traffic crosses the \
             root complex anyway (see gpu.nic-affinity)",
            across.join(", ")
        ));
    }
    pass(format!("no ACS P2P redirect: {}", judged.join("; ")))
}

/// Whether the command line turns IOMMU translation off for DMA (`iommu=pt`,
/// `iommu.passthrough=1`, `intel_iommu=off`, `amd_iommu=off`, `iommu=off`): which one.
fn passthrough_param(env: &GdrEnvironment) -> Option<&'static str> {
    [
        "iommu=pt",
        "iommu.passthrough=1",
        "intel_iommu=off",
        "amd_iommu=off",
        "iommu=off",
    ]
    .into_iter()
    .find(|p| env.cmdline_has(p))
}

/// `gdr.iommu`: WARN when a GPU's IOMMU group translates DMA (`DMA`, `DMA-FQ`).
pub(super) fn iommu(
    gdr: &GdrFacts,
    topology: &Result<PciTopology, String>,
    f: &mut Facts,
) -> CheckVerdict {
    let topo = match gpus_and_nics(topology) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    let env = match environment(gdr) {
        Ok(env) => env,
        Err(skipped) => return skipped,
    };
    let params: Vec<&str> = env
        .cmdline
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .filter(|w| w.contains("iommu"))
        .collect();
    f.insert("cmdline_iommu", params.clone().into());
    f.insert("iommu_groups", (env.iommu_groups.len() as u64).into());
    let passthrough = passthrough_param(env);
    if env.iommu_groups.is_empty() {
        return pass(format!(
            "no IOMMU groups: the IOMMU is off, DMA is not translated{}",
            passthrough.map_or(String::new(), |p| format!(" ({p})"))
        ));
    }
    let (mut translated, mut unknown, mut direct) = (vec![], vec![], vec![]);
    let mut records = Vec::new();
    for gpu in topo.gpus() {
        let address = &gpu.placement.address;
        let mut r = Facts::new();
        r.insert("gpu", address.into());
        let group = env.iommu_group_of(address);
        put(&mut r, "iommu_group", group.map(|g| g.id));
        put(
            &mut r,
            "domain_type",
            group.and_then(|g| g.domain_type.as_deref()),
        );
        match group {
            Some(g) if g.is_translated() => translated.push(format!(
                "GPU {address} (group {}, {})",
                g.id,
                g.domain_type.as_deref().unwrap_or_default()
            )),
            Some(g) if g.domain_type.is_some() => direct.push(format!(
                "GPU {address} group {} {}",
                g.id,
                g.domain_type.as_deref().unwrap_or_default()
            )),
            Some(g) => unknown.push(format!("GPU {address} (group {} has no type file)", g.id)),
            None => unknown.push(format!("GPU {address} (in no IOMMU group)")),
        }
        records.push(r);
    }
    f.insert("gpus", records.into());
    if !translated.is_empty() {
        let despite = passthrough.map_or(String::new(), |p| format!(" despite {p}"));
        return warn(format!(
            "IOMMU in translated mode{despite} for {}: peer-to-peer DMA through a translating \
             IOMMU breaks or slows GPUDirect RDMA; boot with iommu=pt",
            translated.join(", ")
        ));
    }
    if let Some(p) = passthrough {
        return pass(format!(
            "{p} on the kernel command line{}",
            if direct.is_empty() {
                String::new()
            } else {
                format!("; {}", direct.join(", "))
            }
        ));
    }
    if !unknown.is_empty() {
        return skip(format!(
            "cannot tell the IOMMU mode for {} and /proc/cmdline has no iommu=pt",
            unknown.join(", ")
        ));
    }
    pass(format!("passthrough domains: {}", direct.join(", ")))
}
