//! Fixture trees in the exact sysfs/procfs formats of `shared/reference/rdma-bluefield.md`,
//! so readers see what a real BlueField shows.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A BlueField-3 Arm side in DPU mode: uplink `p0`, host-PF representor `pf0hpf`, VF
/// representor `pf0vf0`, a management `oob_net0`, and RDMA device `mlx5_0` (hca_type
/// MT41692) with an ACTIVE RoCE port and a GID table.
pub fn bluefield3_dpu(root: &Path) -> std::io::Result<()> {
    let write = |rel: &str, text: &str| -> std::io::Result<()> {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap_or(root))?;
        fs::write(path, text)
    };
    write("proc/sys/kernel/hostname", "dpu-bf3-lab\n")?;
    write("proc/sys/kernel/osrelease", "5.15.0-1035-bluefield\n")?;
    write(
        "proc/sys/kernel/random/boot_id",
        "5b0e4f8e-6a59-4e33-9a38-0b8c2d3c1f11\n",
    )?;
    write("proc/uptime", "86400.25 170000.00\n")?;
    write(
        "etc/os-release",
        "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n",
    )?;

    let pci = root.join("sys/devices/pci0000:00/0000:00:00.0/0000:03:00.0");
    fs::create_dir_all(&pci)?;
    let driver = root.join("sys/bus/pci/drivers/mlx5_core");
    fs::create_dir_all(&driver)?;
    symlink(&driver, pci.join("driver"))?;

    for (i, (ifname, port_name, mtu)) in [
        ("p0", Some("p0"), "9216"),
        ("pf0hpf", Some("pf0hpf"), "9000"),
        ("pf0vf0", Some("pf0vf0"), "9000"),
        ("oob_net0", None, "1500"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = root.join("sys/class/net").join(ifname);
        fs::create_dir_all(&dir)?;
        let ifindex = (i + 2).to_string();
        let attrs = [
            ("ifindex", ifindex.as_str()),
            ("mtu", mtu),
            ("address", "02:00:00:00:00:0a"),
            ("operstate", "up"),
            ("carrier", "1"),
            (
                "speed",
                if port_name.is_some() {
                    "200000"
                } else {
                    "1000"
                },
            ),
        ];
        for (attr, value) in attrs {
            fs::write(dir.join(attr), format!("{value}\n"))?;
        }
        if let Some(name) = port_name {
            fs::write(dir.join("phys_port_name"), format!("{name}\n"))?;
            fs::write(dir.join("phys_switch_id"), "f4ab580003a1420c\n")?;
            symlink(&pci, dir.join("device"))?;
        }
    }

    let ib = root.join("sys/class/infiniband/mlx5_0");
    fs::create_dir_all(&ib)?;
    symlink(&pci, ib.join("device"))?;
    for (attr, value) in [
        ("node_type", "1: CA"),
        ("node_guid", "946d:ae03:0051:9774"),
        ("sys_image_guid", "946d:ae03:0051:9774"),
        ("fw_ver", "32.38.1002"),
        ("hca_type", "MT41692"),
        ("board_id", "MT_0000000884"),
    ] {
        fs::write(ib.join(attr), format!("{value}\n"))?;
    }
    let port = ib.join("ports/1");
    for (rel, value) in [
        ("state", "4: ACTIVE"),
        ("phys_state", "5: LinkUp"),
        ("rate", "200 Gb/sec (2X NDR)"),
        ("link_layer", "Ethernet"),
        ("gids/0", "fe80:0000:0000:0000:9a6d:aeff:fe51:9774"),
        ("gid_attrs/types/0", "IB/RoCE v1"),
        ("gid_attrs/ndevs/0", "p0"),
        ("gids/1", "fe80:0000:0000:0000:9a6d:aeff:fe51:9774"),
        ("gid_attrs/types/1", "RoCE v2"),
        ("gid_attrs/ndevs/1", "p0"),
        ("gids/3", "0000:0000:0000:0000:0000:ffff:c0a8:6402"),
        ("gid_attrs/types/3", "RoCE v2"),
        ("gid_attrs/ndevs/3", "p0"),
        ("gids/4", "0000:0000:0000:0000:0000:0000:0000:0000"),
    ] {
        let path = port.join(rel);
        fs::create_dir_all(path.parent().unwrap_or(&port))?;
        fs::write(path, format!("{value}\n"))?;
    }
    Ok(())
}

/// A fresh temp directory holding a BlueField-3 fixture tree.
pub fn bluefield3_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    bluefield3_dpu(&root).expect("fixture tree");
    (dir, root)
}
