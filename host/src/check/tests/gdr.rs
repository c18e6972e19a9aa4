//! The `gdr.*` checks against sysfs/procfs trees of one GPU server slot: an H100 and a
//! ConnectX-7 on two downstream ports of one PCIe switch. Ready for GPUDirect RDMA
//! (peermem loaded, ACS off, `iommu=pt`) every check passes; each fault (no peermem with
//! the proprietary driver, ACS P2P Request Redirect on the GPU's switch port, a
//! translated IOMMU) is named, DMA-BUF passes without peermem, and what cannot be judged
//! (64 bytes of config space without root, no GPU) skips.

use std::fs;

use dpu_probe::pci::acs::PCI_EXT_CAP_ID_ACS;
use dpu_probe::testing::SysTree;
use dpu_probe::SysRoot;

use super::super::catalog::spec;
use super::super::facts::HostFacts;
use super::super::gdr;
use super::super::rules::{CheckVerdict, FactValue, Facts, Status};

const ROOT_PORT: &str = "pci0000:17/0000:17:01.0";
const UPSTREAM: &str = "pci0000:17/0000:17:01.0/0000:18:00.0";
/// The switch's downstream port above the NIC.
const NIC_PORT: &str = "0000:19:00.0";
/// The switch's downstream port above the GPU.
const GPU_PORT: &str = "0000:19:01.0";
const GPU: &str = "0000:1b:00.0";

const PROPRIETARY: &str = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\nGCC version:  gcc version 12.3.0\n";
const OPEN: &str = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Wed Jan  7 22:59:56 UTC 2026\n";

/// ACS control values: all off, and what the kernel sets for an IOMMU (SV RR CR UF).
const ACS_OFF: u16 = 0x0000;
const ACS_ISOLATING: u16 = 0x001d;

/// The slot: root port -> switch upstream port -> two downstream ports, the NIC
/// (`mlx5_0`) below one, the GPU below the other; every bridge with 4096 bytes of config
/// space whose ACS control is `acs` (root port and upstream port: off).
fn slot(acs: u16) -> SysTree {
    let tree = SysTree::new();
    tree.nic(
        &format!("{UPSTREAM}/{NIC_PORT}/0000:1a:00.0"),
        "mlx5_0",
        "0",
    );
    tree.gpu(&format!("{UPSTREAM}/{GPU_PORT}/{GPU}"), "0");
    tree.config(ROOT_PORT, &config_space(ACS_OFF));
    tree.config(UPSTREAM, &vec![0u8; 4096]);
    tree.config(&format!("{UPSTREAM}/{NIC_PORT}"), &config_space(acs));
    tree.config(&format!("{UPSTREAM}/{GPU_PORT}"), &config_space(acs));
    tree
}

/// The kernel, driver and command line of a host ready for GPUDirect RDMA.
fn ready(acs: u16) -> SysTree {
    let tree = slot(acs);
    tree.attr("sys/module/nvidia_peermem/version", "580.126.09");
    tree.attr("proc/modules", "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nnvidia 104095744 2 nvidia_peermem, Live 0x0 (POE)");
    tree.attr("proc/sys/kernel/osrelease", "6.8.0-49-generic");
    tree.attr("proc/driver/nvidia/version", OPEN);
    tree.attr(
        "proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=9ff8 ro intel_iommu=on iommu=pt",
    );
    group(&tree, 31, "identity", GPU);
    tree
}

/// IOMMU group `id` of domain type `domain_type` holding `device`.
fn group(tree: &SysTree, id: u32, domain_type: &str, device: &str) {
    let group = format!("sys/kernel/iommu_groups/{id}");
    tree.attr(&format!("{group}/type"), domain_type);
    tree.link(
        &format!("{group}/devices/{device}"),
        &format!("sys/devices/pci0000:17/{device}"),
    );
}

/// The host's facts as `dpuctl check` gathers them from `tree`.
fn gathered(tree: &SysTree) -> HostFacts {
    let host = HostFacts::gather(&tree.root());
    assert!(host.gpu_topology.is_ok(), "{:?}", host.gpu_topology);
    host
}

/// 4096 bytes of a Broadcom-style switch port: AER at 0x100, ACS at 0x148 (all seven
/// controls implemented, `control` on), end of list.
fn config_space(control: u16) -> Vec<u8> {
    let mut config = vec![0u8; 4096];
    config[0..4].copy_from_slice(&[0xb5, 0x10, 0x00, 0xc0]);
    let aer: u32 = 0x0001 | (2 << 16) | (0x148 << 20);
    config[0x100..0x104].copy_from_slice(&aer.to_le_bytes());
    let acs: u32 = u32::from(PCI_EXT_CAP_ID_ACS) | (1 << 16);
    config[0x148..0x14c].copy_from_slice(&acs.to_le_bytes());
    config[0x14c..0x14e].copy_from_slice(&0x007fu16.to_le_bytes());
    config[0x14e..0x150].copy_from_slice(&control.to_le_bytes());
    config
}

type Check = fn(
    &gdr::GdrFacts,
    &Result<dpu_probe::pci::topology::PciTopology, String>,
    &mut Facts,
) -> CheckVerdict;

const CHECKS: [(&str, Check); 3] = [
    ("gdr.peermem", gdr::peermem),
    ("gdr.acs", gdr::acs),
    ("gdr.iommu", gdr::iommu),
];

fn judged(host: &HostFacts, id: &str) -> CheckVerdict {
    let (_, check) = CHECKS.iter().find(|(i, _)| *i == id).expect("a gdr check");
    let mut facts = Facts::new();
    let mut verdict = check(&host.gdr, &host.gpu_topology, &mut facts);
    verdict.facts = facts;
    verdict
}

#[test]
fn a_host_ready_for_gpudirect_rdma_passes_every_check() {
    let host = gathered(&ready(ACS_OFF));
    for (id, _) in CHECKS {
        let v = judged(&host, id);
        assert_eq!(v.status, Status::Pass, "{id}: {}", v.detail);
        assert!(!spec(id).fix.is_empty());
    }
    let peermem = judged(&host, "gdr.peermem");
    assert!(
        peermem
            .detail
            .contains("/sys/module/nvidia_peermem/version"),
        "{}",
        peermem.detail
    );
    assert_eq!(
        peermem.facts.get("path").and_then(FactValue::as_str),
        Some("peermem")
    );
    let acs = judged(&host, "gdr.acs");
    assert_eq!(
        acs.detail,
        format!("no ACS P2P redirect: {GPU} -> mlx5_0 via {GPU_PORT} ACSCtl none, {NIC_PORT} ACSCtl none")
    );
    let iommu = judged(&host, "gdr.iommu");
    assert!(
        iommu
            .detail
            .starts_with("iommu=pt on the kernel command line"),
        "{}",
        iommu.detail
    );
}

#[test]
fn no_peermem_with_the_proprietary_driver_fails() {
    let tree = slot(ACS_OFF);
    tree.attr("proc/modules", "nvidia 104095744 0 - Live 0x0 (POE)");
    tree.attr("proc/sys/kernel/osrelease", "6.8.0-49-generic");
    tree.attr("proc/driver/nvidia/version", PROPRIETARY);
    let v = judged(&gathered(&tree), "gdr.peermem");
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
    assert!(
        v.detail.contains("nvidia_peermem is not loaded"),
        "{}",
        v.detail
    );
    assert!(
        v.detail
            .contains("proprietary driver 535.183.01, not the open kernel module"),
        "{}",
        v.detail
    );
    assert!(
        v.detail.contains("GPU Direct RDMA Disabled for HCA"),
        "{}",
        v.detail
    );
    assert_eq!(
        v.facts.get("dmabuf_possible"),
        Some(&FactValue::Bool(false))
    );
    assert!(spec("gdr.peermem").why.contains("GPU Direct RDMA Disabled"));
}

#[test]
fn an_old_kernel_with_the_open_driver_and_no_peermem_fails() {
    let tree = slot(ACS_OFF);
    tree.attr("proc/sys/kernel/osrelease", "5.4.0-1103-aws");
    tree.attr("proc/driver/nvidia/version", OPEN);
    let v = judged(&gathered(&tree), "gdr.peermem");
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
    assert!(
        v.detail
            .contains("kernel 5.4.0-1103-aws is older than 5.12"),
        "{}",
        v.detail
    );
}

#[test]
fn dmabuf_with_the_open_driver_on_a_6x_kernel_passes_without_peermem() {
    let tree = slot(ACS_OFF);
    tree.attr("proc/modules", "nvidia 104095744 0 - Live 0x0 (OE)");
    tree.attr("proc/sys/kernel/osrelease", "6.8.0-49-generic");
    tree.attr("proc/driver/nvidia/version", OPEN);
    let v = judged(&gathered(&tree), "gdr.peermem");
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert!(v.detail.starts_with("no nvidia_peermem, but DMA-BUF: kernel 6.8.0-49-generic with the open kernel module driver 580.126.09"), "{}", v.detail);
    assert_eq!(
        v.facts.get("path").and_then(FactValue::as_str),
        Some("dmabuf")
    );
}

#[test]
fn acs_request_redirect_on_the_switch_port_fails_naming_the_bridge() {
    let tree = ready(ACS_OFF);
    tree.config(
        &format!("{UPSTREAM}/{GPU_PORT}"),
        &config_space(ACS_ISOLATING),
    );
    let v = judged(&gathered(&tree), "gdr.acs");
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
    assert!(
        v.detail.starts_with(&format!(
            "ACS P2P redirect on: bridge {GPU_PORT} has ACSCtl SrcValid ReqRedir CmpltRedir UpstreamFwd between GPU {GPU} and mlx5_0"
        )),
        "{}",
        v.detail
    );
    assert!(!v.detail.contains(NIC_PORT), "{}", v.detail);
    // The root port above the switch is not between them: its ACS does not matter here.
    tree.config(ROOT_PORT, &config_space(ACS_ISOLATING));
    tree.config(&format!("{UPSTREAM}/{GPU_PORT}"), &config_space(ACS_OFF));
    assert_eq!(judged(&gathered(&tree), "gdr.acs").status, Status::Pass);
    // Request Redirect alone is enough.
    tree.config(&format!("{UPSTREAM}/{NIC_PORT}"), &config_space(0x0004));
    let v = judged(&gathered(&tree), "gdr.acs");
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
    assert!(
        v.detail
            .contains(&format!("bridge {NIC_PORT} has ACSCtl ReqRedir")),
        "{}",
        v.detail
    );
}

#[test]
fn config_space_of_64_bytes_skips_needing_root() {
    let tree = ready(ACS_OFF);
    tree.config(
        &format!("{UPSTREAM}/{GPU_PORT}"),
        &config_space(ACS_OFF)[..64],
    );
    let v = judged(&gathered(&tree), "gdr.acs");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(
        v.detail
            .starts_with("needs root to read PCI extended config space"),
        "{}",
        v.detail
    );
    assert!(
        v.detail.contains(&format!("{GPU_PORT}/config")),
        "{}",
        v.detail
    );
}

#[test]
fn a_malformed_capability_list_skips_naming_the_file() {
    let tree = ready(ACS_OFF);
    let mut looped = vec![0u8; 4096];
    looped[0x100..0x104].copy_from_slice(&(1u32 | (0x100 << 20)).to_le_bytes());
    tree.config(&format!("{UPSTREAM}/{NIC_PORT}"), &looped);
    let v = judged(&gathered(&tree), "gdr.acs");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(
        v.detail.contains(&format!("{NIC_PORT}/config")),
        "{}",
        v.detail
    );
    assert!(v.detail.contains("loops back to 0x100"), "{}", v.detail);
}

#[test]
fn a_translated_iommu_warns_naming_the_gpu_group() {
    let tree = ready(ACS_OFF);
    tree.attr(
        "proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.8.0-49-generic root=UUID=9ff8 ro intel_iommu=on",
    );
    tree.attr("sys/kernel/iommu_groups/31/type", "DMA-FQ");
    let v = judged(&gathered(&tree), "gdr.iommu");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.starts_with(&format!(
            "IOMMU in translated mode for GPU {GPU} (group 31, DMA-FQ)"
        )),
        "{}",
        v.detail
    );
    assert!(v.detail.contains("iommu=pt"), "{}", v.detail);
    // Strict translation too.
    tree.attr("sys/kernel/iommu_groups/31/type", "DMA");
    assert_eq!(judged(&gathered(&tree), "gdr.iommu").status, Status::Warn);
    // Passthrough by default (CONFIG_IOMMU_DEFAULT_PASSTHROUGH) without iommu=pt passes.
    tree.attr("sys/kernel/iommu_groups/31/type", "identity");
    let v = judged(&gathered(&tree), "gdr.iommu");
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert_eq!(
        v.detail,
        format!("passthrough domains: GPU {GPU} group 31 identity")
    );
}

#[test]
fn no_iommu_groups_pass_and_unknown_types_skip() {
    let tree = slot(ACS_OFF);
    tree.attr("proc/cmdline", "ro quiet");
    let v = judged(&gathered(&tree), "gdr.iommu");
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert!(v.detail.starts_with("no IOMMU groups"), "{}", v.detail);
    // A group without a type file (kernel before 5.11) and no iommu=pt: not known.
    tree.dir("sys/kernel/iommu_groups/4/devices");
    let v = judged(&gathered(&tree), "gdr.iommu");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(
        v.detail.contains(&format!("GPU {GPU} (in no IOMMU group)")),
        "{}",
        v.detail
    );
}

#[test]
fn without_gpus_or_rdma_nics_every_check_skips() {
    let tree = slot(ACS_OFF);
    fs::remove_dir_all(tree.path("sys/class/infiniband")).expect("rm");
    let host = gathered(&tree);
    for (id, _) in CHECKS {
        let v = judged(&host, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(
            v.detail.starts_with("no RDMA NIC on a PCI function"),
            "{id}: {}",
            v.detail
        );
    }
    let empty = tempfile::tempdir().expect("tempdir");
    let host = HostFacts::gather(&SysRoot::new(empty.path()));
    for (id, _) in CHECKS {
        let v = judged(&host, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(
            v.detail.starts_with("no NVIDIA GPU on PCIe"),
            "{id}: {}",
            v.detail
        );
    }
}

#[test]
fn a_gpu_and_nic_on_different_root_ports_are_not_judged_for_acs() {
    let tree = ready(ACS_ISOLATING);
    // Move the NIC below another root port of the same host bridge (PHB).
    fs::remove_dir_all(tree.path("sys/class/infiniband")).expect("rm");
    let nic = "pci0000:17/0000:17:02.0/0000:30:00.0";
    tree.nic(nic, "mlx5_1", "0");
    let v = judged(&gathered(&tree), "gdr.acs");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(
        v.detail.contains(&format!("{GPU} -> mlx5_1 PHB")),
        "{}",
        v.detail
    );
}
