//! libFuzzer target: a BlueField-shaped sysfs tree whose attribute files hold fuzzed bytes,
//! read through the public readers the agent uses (netdev and RDMA inventory, GID search,
//! PCI functions, block stats, the counter sampler over every default selector). Reading
//! a hostile or corrupt tree must give values or errors, never a panic.
//!
//! Input layout: the attribute contents, separated by 0xFF bytes (never in UTF-8 text),
//! assigned to `FILES` in order; files without a part are left empty.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dpu_probe::counters::{CounterSelector, NetdevSource, Sampler};
use dpu_probe::{block, netdev, netdev_stats, pci, rdma, rdma::counters, SysRoot};
use libfuzzer_sys::fuzz_target;

const FILES: &[&str] = &[
    "sys/class/net/pf0hpf/mtu",
    "sys/class/net/pf0hpf/ifindex",
    "sys/class/net/pf0hpf/statistics/rx_bytes",
    "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
    "sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence",
    "sys/class/infiniband/mlx5_0/ports/1/gids/3",
    "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3",
    "sys/class/infiniband/mlx5_0/ports/1/state",
    "sys/block/nvme0n1/stat",
    "sys/bus/pci/devices/0000:03:00.0/current_link_speed",
    "sys/bus/pci/devices/0000:03:00.0/current_link_width",
    "sys/bus/pci/devices/0000:03:00.0/class",
    "sys/class/net/pf0hpf/phys_port_name",
    "sys/class/net/pf0hpf/speed",
    "sys/class/net/pf0hpf/statistics/tx_packets",
    "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data",
    "sys/class/infiniband/mlx5_0/hw_counters/lifespan",
    "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3",
    "sys/class/infiniband/mlx5_0/ports/1/rate",
    "sys/bus/pci/devices/0000:03:00.0/vendor",
    "sys/bus/pci/devices/0000:03:00.0/device",
    "sys/bus/pci/devices/0000:03:00.0/max_link_speed",
    "sys/bus/pci/devices/0000:03:00.0/numa_node",
    "proc/sys/kernel/random/boot_id",
];

/// Good values for every file, so the tree is valid before a part replaces one.
const DEFAULTS: &[&str] = &[
    "9000\n",
    "5\n",
    "123456\n",
    "42\n",
    "0\n",
    "0000:0000:0000:0000:0000:ffff:c0a8:6402\n",
    "RoCE v2\n",
    "4: ACTIVE\n",
    "  100   0  800  20  5  0  40  3  0  2  23  0  0  0  0  0  0\n",
    "16.0 GT/s PCIe\n",
    "16\n",
    "0x020000\n",
    "pf0hpf\n",
    "100000\n",
    "99\n",
    "77\n",
    "10\n",
    "pf0hpf\n",
    "100 Gb/sec (4X EDR)\n",
    "0x15b3\n",
    "0xa2dc\n",
    "32.0 GT/s PCIe\n",
    "0\n",
    "6f1d1c9e-3b6c-4a4e-9d0e-3a8f2b6c1e00\n",
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

fn tree() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch_base().join(format!("dpu-probe-fuzz-{}", std::process::id()));
        for file in FILES {
            fs::create_dir_all(dir.join(file).parent().expect("parent")).expect("mkdir");
        }
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = tree();
    let mut parts = data.split(|&b| b == 0xFF);
    for (file, default) in FILES.iter().zip(DEFAULTS) {
        let content = parts.next().unwrap_or(default.as_bytes());
        fs::write(dir.join(file), content).expect("write");
    }
    let root = SysRoot::new(dir);
    let _ = netdev::read_netdev(&root, "pf0hpf");
    let _ = netdev::read_mtu(&root, "pf0hpf");
    let _ = netdev::list_netdevs(&root);
    let _ = netdev_stats::read_netdev_stats(&root, "pf0hpf");
    let _ = netdev_stats::read_all_netdev_stats(&root);
    let _ = rdma::read_rdma_device(&root, "mlx5_0");
    let _ = rdma::gid_candidates(&root, "pf0hpf");
    let _ = rdma::counters::read_all_counters(&root);
    let _ = rdma::counters::list_ports(&root, "mlx5_0");
    let _ = block::read_block_stat(&root, "nvme0n1");
    let _ = pci::read_pci_function(&root, "0000:03:00.0");
    let mut sampler = Sampler::with_netdev_source(root, NetdevSource::Sysfs);
    let mut selectors = CounterSelector::defaults();
    selectors.push(CounterSelector::Rdma {
        device: Some("mlx5_0".to_owned()),
        port: Some(1),
    });
    let _ = sampler.snapshot(&selectors);
});
