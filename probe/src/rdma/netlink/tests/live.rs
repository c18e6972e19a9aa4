//! The live comparison, where this machine has RDMA devices: every port's netlink answer
//! against its `hw_counters/` files. Skipped (with the reason printed and appended to
//! `$DPU_TESTS_SKIP_LOG`, as the test crate's `record_skip` does) without an RDMA stack
//! or devices; the lab tier has both (a Soft-RoCE `rxe` device or real mlx5 ports).

use std::collections::HashMap;

use super::super::RdmaNetlink;
use crate::{error_chain, rdma, SysRoot};

fn skip(reason: &str) {
    use std::io::Write as _;
    eprintln!("SKIPPED: {reason}");
    if let Some(path) = std::env::var_os("DPU_TESTS_SKIP_LOG") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "SKIPPED {}: {reason}", module_path!());
        }
    }
}

#[test]
fn netlink_covers_every_sysfs_hw_counter_with_a_value_no_smaller() {
    let mut nl = match RdmaNetlink::open() {
        Ok(nl) => nl,
        Err(e) => return skip(&format!("no RDMA netlink here: {}", error_chain(&e))),
    };
    let devices = nl.devices().execute().expect("the device dump");
    if devices.is_empty() {
        return skip("no RDMA devices (ls /sys/class/infiniband)");
    }
    let root = SysRoot::default();
    let mut compared = 0;
    for device in &devices {
        for port in 1..=device.ports {
            // sysfs first: its values may be up to `lifespan` old, netlink's are read now,
            // so for counters that only grow netlink is never below.
            let sysfs = rdma::counters::read_hw_counters(&root, &device.name, port)
                .unwrap_or_else(|e| panic!("{}/{port}: {}", device.name, error_chain(&e)));
            let answer = match nl.port_hw_counters(device.index, port).execute() {
                Ok(answer) => answer,
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && sysfs.is_empty() => continue,
                Err(e) => panic!("{}/{port}: {}", device.name, error_chain(&e)),
            };
            assert_eq!(answer.dev_name, device.name);
            let netlink: HashMap<&str, u64> = answer
                .counters
                .iter()
                .map(|(name, value)| (name.as_str(), *value))
                .collect();
            for sample in &sysfs {
                let name = sample.key.counter.as_ref();
                let value = netlink
                    .get(name)
                    .unwrap_or_else(|| panic!("{}/{port}: netlink lacks {name}", device.name));
                assert!(
                    *value >= sample.value,
                    "{}/{port} {name}: netlink {value} < sysfs {}",
                    device.name,
                    sample.value
                );
                compared += 1;
            }
        }
    }
    eprintln!("compared {compared} counters on {} devices", devices.len());
}
