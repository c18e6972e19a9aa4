//! libFuzzer target: a host sysfs tree with one NVMe-oF controller and namespace whose
//! attribute files hold fuzzed bytes, read through `Fabrics::controllers` (controller
//! `address` parsing, state, cntlid, namespace size and block size),
//! `Fabrics::find_connected` (matching a spec against what was parsed) and
//! `Fabrics::io_stats` (block `stat`). No panic on any content.
//!
//! Input layout: file contents separated by 0xFF bytes, assigned to `FILES` in order.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dpu_nvmeof::kernel::{ConnectSpec, Fabrics, KernelPaths, Transport};
use libfuzzer_sys::fuzz_target;

const FILES: &[(&str, &str)] = &[
    (
        "sys/class/nvme/nvme0/address",
        "traddr=192.0.2.10,trsvcid=4420,src_addr=192.0.2.1\n",
    ),
    ("sys/class/nvme/nvme0/transport", "tcp\n"),
    (
        "sys/class/nvme/nvme0/subsysnqn",
        "nqn.2016-06.io.spdk:cnode1\n",
    ),
    ("sys/class/nvme/nvme0/state", "live\n"),
    ("sys/class/nvme/nvme0/cntlid", "1\n"),
    (
        "sys/class/nvme/nvme0/hostnqn",
        "nqn.2014-08.org.nvmexpress:uuid:6f1d1c9e-3b6c-4a4e-9d0e-3a8f2b6c1e00\n",
    ),
    ("sys/block/nvme0n1/nsid", "1\n"),
    ("sys/block/nvme0n1/size", "2097152\n"),
    ("sys/block/nvme0n1/queue/logical_block_size", "512\n"),
    (
        "sys/block/nvme0n1/stat",
        "582 0 262168 47647 0 0 0 0 0 13336 47647 0 0 0 0 0 0\n",
    ),
    (
        "sys/block/nvme0n1/uuid",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301\n",
    ),
];

/// tmpfs when there is one: the tree is rewritten on every input, and a disk-backed /tmp
/// makes that the whole cost of the target.
fn scratch_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

fn root() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch_base().join(format!("dpu-nvmeof-sysfs-{}", std::process::id()));
        for (file, _) in FILES {
            fs::create_dir_all(dir.join(file).parent().expect("parent")).expect("mkdir");
        }
        // The namespace appears under its controller, as `nvme0c0n1` for multipath heads.
        fs::create_dir_all(dir.join("sys/class/nvme/nvme0/nvme0c0n1")).expect("mkdir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = root();
    let mut parts = data.split(|&b| b == 0xFF);
    for (file, default) in FILES {
        let content = parts.next().unwrap_or(default.as_bytes());
        fs::write(dir.join(file), content).expect("write");
    }
    let fabrics = Fabrics::new(&KernelPaths::under(dir));
    let _ = fabrics.controllers();
    let mut spec = ConnectSpec::new(Transport::Tcp, "nqn.2016-06.io.spdk:cnode1");
    spec.traddr = Some("192.0.2.10".to_owned());
    spec.trsvcid = Some(4420);
    let _ = fabrics.find_connected(&spec);
    let _ = fabrics.io_stats("nvme0n1");
});
