use super::*;

const PROPRIETARY: &str = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
const OPEN: &str = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.126.09  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Wed Jan  7 22:59:56 UTC 2026\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n";
const PROC_MODULES: &str = "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nnvidia_uvm 4931584 0 - Live 0x0000000000000000 (OE)\nib_core 516096 9 nvidia_peermem,rdma_ucm, Live 0x0000000000000000\n";

use crate::testing::SysTree;

#[test]
fn parses_driver_lines_and_kernel_releases() {
    let closed = parse_nvidia_version(PROPRIETARY).expect("line");
    assert!(!closed.open_kernel_module);
    assert_eq!(closed.version.as_deref(), Some("535.183.01"));
    let open = parse_nvidia_version(OPEN).expect("line");
    assert!(open.open_kernel_module);
    assert_eq!(open.version.as_deref(), Some("580.126.09"));
    assert!(open
        .version_line
        .starts_with("NVRM version: NVIDIA UNIX Open Kernel Module"));
    assert_eq!(parse_nvidia_version(""), None);
    assert_eq!(parse_kernel_version("6.8.0-49-generic"), Some((6, 8)));
    assert_eq!(parse_kernel_version("5.15.0"), Some((5, 15)));
    assert_eq!(parse_kernel_version("5.4.0-1103-aws\n"), Some((5, 4)));
    assert_eq!(parse_kernel_version("linux"), None);
    assert_eq!(peermem_modules(PROC_MODULES), ["nvidia_peermem"]);
    assert!(peermem_modules("nvidia 1 0 - Live 0x0\n").is_empty());
}

#[test]
fn reads_a_gpu_server_under_the_root() {
    let tree = SysTree::new();
    tree.write("sys/module/nvidia_peermem/version", "580.126.09\n");
    tree.write("proc/modules", PROC_MODULES);
    tree.write("proc/sys/kernel/osrelease", "6.8.0-49-generic\n");
    tree.write("proc/driver/nvidia/version", OPEN);
    tree.write(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=x ro intel_iommu=on iommu=pt\n",
    );
    tree.write("sys/kernel/iommu_groups/12/type", "identity\n");
    tree.write("sys/kernel/iommu_groups/12/devices/0000:1b:00.0", "");
    tree.write("sys/kernel/iommu_groups/3/type", "DMA-FQ\n");
    tree.dir("sys/kernel/iommu_groups/3/devices");
    let env = read_gdr_environment(&tree.root()).expect("reads");
    assert_eq!(
        env.peer_memory,
        [
            "/sys/module/nvidia_peermem/version",
            "/proc/modules: nvidia_peermem"
        ]
    );
    assert_eq!(env.kernel_version(), Some((6, 8)));
    assert!(env
        .nvidia_driver
        .as_ref()
        .is_some_and(|d| d.open_kernel_module));
    assert!(env.cmdline_has("iommu=pt"));
    assert!(!env.cmdline_has("iommu=p"));
    let ids: Vec<u32> = env.iommu_groups.iter().map(|g| g.id).collect();
    assert_eq!(ids, [3, 12]);
    assert!(env.iommu_groups[0].is_translated());
    let gpu = env.iommu_group_of("0000:1b:00.0").expect("group");
    assert_eq!((gpu.id, gpu.is_translated()), (12, false));
}

#[test]
fn an_empty_root_has_nothing_and_bad_groups_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = read_gdr_environment(&SysRoot::new(dir.path())).expect("reads");
    assert_eq!(env, GdrEnvironment::default());
    // The module directory alone (a module without a version attribute) still counts.
    std::fs::create_dir_all(dir.path().join("sys/module/nv_peer_mem")).expect("mkdir");
    let env = read_gdr_environment(&SysRoot::new(dir.path())).expect("reads");
    assert_eq!(env.peer_memory, ["/sys/module/nv_peer_mem"]);
    std::fs::create_dir_all(dir.path().join("sys/kernel/iommu_groups/x")).expect("mkdir");
    let err = read_gdr_environment(&SysRoot::new(dir.path())).expect_err("not a number");
    assert!(err.to_string().contains("iommu_groups"), "{err}");
}
