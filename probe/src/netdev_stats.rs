//! Link statistics from sysfs, `{root}/sys/class/net/{if}/statistics/*`: the same
//! `netdevs/{ifname}` [`Source::Netdev`] samples the netlink reader produces, for a
//! `--sys-root` fixture or a mounted image, where no kernel answers netlink for it.
//!
//! The directory is listed rather than assumed: which files exist depends on the kernel
//! version, and their names are exactly the `rtnl_link_stats64` field names.

use std::fs;
use std::path::Path;

use crate::netlink::{link_counter_unit, netdev_object};
use crate::root::{list_dir, read_attr};
use crate::snapshot::{Sample, Source, Unit};
use crate::{ProbeError, SysRoot};

/// One device's statistics, or why they could not be read: one unreadable device must
/// not hide the others from a snapshot.
#[derive(Debug)]
pub struct NetdevStatsReading {
    /// Interface name.
    pub ifname: String,
    /// Its samples, or the error naming the file that failed.
    pub result: Result<Vec<Sample>, ProbeError>,
}

/// Reads every counter in `statistics/` of one device, sorted by name. Errors name the
/// file: a missing device is [`ProbeError::NotFound`], a missing `statistics/` directory
/// a read error on it, a non-numeric value a [`ProbeError::Format`].
pub fn read_netdev_stats(root: &SysRoot, ifname: &str) -> Result<Vec<Sample>, ProbeError> {
    let dev = root.sys("class/net").join(ifname);
    if ifname.is_empty() || ifname.contains('/') || !crate::root::is_dir(&dev) {
        return Err(ProbeError::NotFound {
            what: "netdev",
            name: ifname.to_owned(),
            root: root.sys("class/net"),
        });
    }
    let dir = dev.join("statistics");
    let names = list_counters(&dir)?;
    let object = netdev_object(ifname);
    names
        .iter()
        .map(|name| {
            let value = read_counter(&dir.join(name))?;
            let unit = link_counter_unit(name).unwrap_or(Unit::Unspecified);
            Ok(Sample::cumulative(
                Source::Netdev,
                object.clone(),
                name.clone(),
                value,
                unit,
            ))
        })
        .collect()
}

/// Reads the statistics of every device under `class/net`, sorted by name. Fails only
/// when the device list itself cannot be read; per-device failures are in each reading.
pub fn read_all_netdev_stats(root: &SysRoot) -> Result<Vec<NetdevStatsReading>, ProbeError> {
    Ok(list_dir(&root.sys("class/net"))?
        .into_iter()
        .map(|ifname| NetdevStatsReading {
            result: read_netdev_stats(root, &ifname),
            ifname,
        })
        .collect())
}

/// Lists the regular files of `statistics/`; unlike [`list_dir`], a missing directory is
/// an error, because a netdev without statistics would otherwise look like one with
/// nothing to count.
fn list_counters(dir: &Path) -> Result<Vec<String>, ProbeError> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| ProbeError::read(dir, e))? {
        let entry = entry.map_err(|e| ProbeError::read(dir, e))?;
        let is_file = entry
            .file_type()
            .map_err(|e| ProbeError::read(entry.path(), e))?
            .is_file();
        match entry.file_name().into_string() {
            Ok(name) if is_file => names.push(name),
            _ => {}
        }
    }
    names.sort();
    if crate::capture::is_active() {
        crate::capture::note_listing(dir, Ok(&names));
    }
    Ok(names)
}

fn read_counter(path: &Path) -> Result<u64, ProbeError> {
    let text = read_attr(path)?;
    text.parse().map_err(|_| ProbeError::Format {
        path: path.to_owned(),
        detail: format!("expected an unsigned decimal counter, found {text:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn is_not_found(err: &ProbeError) -> bool {
        matches!(err, ProbeError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    fn device(root: &SysRoot, ifname: &str, counters: &[(&str, &str)]) {
        let dir = root.sys("class/net").join(ifname).join("statistics");
        fs::create_dir_all(&dir).expect("mkdir");
        for (name, value) in counters {
            fs::write(dir.join(name), value).expect("write");
        }
    }

    #[test]
    fn reads_whatever_counters_the_directory_holds() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        device(
            &root,
            "pf0hpf",
            &[
                ("rx_packets", "5\n"),
                ("tx_bytes", "18446744073709551615\n"),
                ("rx_crc_errors", "0\n"),
                ("multicast", "2\n"),
            ],
        );
        let samples = read_netdev_stats(&root, "pf0hpf").expect("read");
        let names: Vec<_> = samples.iter().map(|s| s.key.counter.as_ref()).collect();
        assert_eq!(
            names,
            ["multicast", "rx_crc_errors", "rx_packets", "tx_bytes"]
        );
        assert!(samples
            .iter()
            .all(|s| s.key.object == "netdevs/pf0hpf" && s.key.source == Source::Netdev));
        assert_eq!(samples[3].value, u64::MAX, "64-bit counters");
        assert_eq!(samples[3].unit, Unit::Bytes);
        assert_eq!(samples[2].unit, Unit::Packets);
        assert_eq!(samples[1].unit, Unit::Events);
        assert_eq!(samples[0].unit, Unit::Packets);
        assert_eq!(samples[0].width_bits, 64);
    }

    #[test]
    fn a_missing_statistics_directory_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        fs::create_dir_all(root.sys("class/net/eth0")).expect("mkdir");
        let err = read_netdev_stats(&root, "eth0").expect_err("no statistics");
        assert!(is_not_found(&err), "{err:?}");
        assert!(err.to_string().contains("eth0/statistics"), "{err}");

        let err = read_netdev_stats(&root, "eth9").expect_err("no device");
        assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
        let err = read_netdev_stats(&root, "../eth0").expect_err("not a name");
        assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    }

    #[test]
    fn a_garbage_value_names_the_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        device(
            &root,
            "p0",
            &[("rx_bytes", "12\n"), ("tx_dropped", "lots\n")],
        );
        let err = read_netdev_stats(&root, "p0").expect_err("garbage");
        assert!(matches!(err, ProbeError::Format { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("p0/statistics/tx_dropped"), "{text}");
        assert!(text.contains("\"lots\""), "{text}");
    }

    #[test]
    fn all_devices_are_read_and_one_failure_stays_local() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        device(&root, "p0", &[("rx_packets", "1\n")]);
        device(&root, "pf0vf0", &[("rx_packets", "-1\n")]);
        fs::create_dir_all(root.sys("class/net/lo/statistics/subdir")).expect("mkdir");
        let all = read_all_netdev_stats(&root).expect("list");
        let names: Vec<_> = all.iter().map(|r| r.ifname.as_str()).collect();
        assert_eq!(names, ["lo", "p0", "pf0vf0"]);
        assert_eq!(
            all[0].result.as_ref().map(Vec::len).ok(),
            Some(0),
            "dirs skipped"
        );
        assert_eq!(all[1].result.as_ref().map(Vec::len).ok(), Some(1));
        assert!(all[2].result.is_err());

        let empty = SysRoot::new(tmp.path().join("nothing"));
        assert!(read_all_netdev_stats(&empty)
            .expect("no class/net")
            .is_empty());
    }
}
