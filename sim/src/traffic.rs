//! Counters with life: a background traffic model that advances the simulated machine's
//! netdev and RDMA port counters, and reads through its volumes that move the volume's
//! and the RDMA port's counters together, as an NVMe-oF read over RDMA does.
//!
//! Counters are rewritten in place (same file, same inode, never shorter), because the
//! agent keeps its counter files open between snapshots: a file replaced by a rename would
//! leave it reading the old one. A link that is down carries nothing, so a `link-down`
//! fault stops its counters as a real one would.

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;

use crate::fake_snap::FakeSnap;

/// Bytes a frame carries, for the packet counters that move with the byte counters.
const FRAME_BYTES: u64 = 1500;

/// What one step of the model moved, for the caller's log and for tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Moved {
    /// Netdevs whose counters moved (up links only).
    pub netdevs: Vec<String>,
    /// RDMA ports whose counters moved, as `device/port` (active ports only).
    pub rdma_ports: Vec<String>,
    /// Volumes read through.
    pub volumes: Vec<String>,
}

/// Advances every up netdev and every active RDMA port under `root` by `bytes` (received;
/// half as many sent), their packet counters by the frames that takes.
pub fn advance_links(root: &Path, bytes: u64) -> io::Result<Moved> {
    let mut moved = Moved::default();
    if bytes == 0 {
        return Ok(moved);
    }
    let frames = bytes.div_ceil(FRAME_BYTES);
    let net = root.join("sys/class/net");
    for ifname in sorted_names(&net)? {
        let dir = net.join(&ifname);
        let stats = dir.join("statistics");
        if !stats.is_dir() || read_trimmed(&dir.join("operstate")).as_deref() != Some("up") {
            continue;
        }
        bump(&stats.join("rx_bytes"), bytes)?;
        bump(&stats.join("tx_bytes"), bytes / 2)?;
        bump(&stats.join("rx_packets"), frames)?;
        bump(&stats.join("tx_packets"), frames.div_ceil(2))?;
        moved.netdevs.push(ifname);
    }
    let ib = root.join("sys/class/infiniband");
    for device in sorted_names(&ib)? {
        let ports = ib.join(&device).join("ports");
        for port in sorted_names(&ports)? {
            let dir = ports.join(&port);
            let active = read_trimmed(&dir.join("state")).is_some_and(|s| s.ends_with("ACTIVE"));
            if !active {
                continue;
            }
            // `port_*_data` counts 4-byte words (the PMA's unit).
            bump_port(&dir, "port_rcv_data", bytes / 4)?;
            bump_port(&dir, "port_xmit_data", bytes / 8)?;
            bump_port(&dir, "port_rcv_packets", frames)?;
            bump_port(&dir, "port_xmit_packets", frames.div_ceil(2))?;
            moved.rdma_ports.push(format!("{device}/{port}"));
        }
    }
    Ok(moved)
}

/// Reads `bytes` through every volume `snap` holds: the volume's read counters move in
/// SNAP, and the same bytes arrive on RDMA port `port` of `device` under `root` (when it
/// is active), so the volume's and the port's counters agree as a proof expects.
pub fn read_volumes(
    root: &Path,
    snap: &FakeSnap,
    (device, port): (&str, u32),
    bytes: u64,
) -> io::Result<Vec<String>> {
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let volumes: Vec<String> = snap.state().bdevs.keys().cloned().collect();
    let mut read = Vec::new();
    for volume in volumes {
        if snap.record_io(&volume, bytes, 0) {
            read.push(volume);
        }
    }
    arrive_on_port(root, (device, port), bytes * read.len() as u64)?;
    Ok(read)
}

/// `bytes` arrive on RDMA port `port` of `device` under `root` (its received data and
/// packets), when the port is active: what an NVMe-oF read over RDMA moves on the side
/// that receives the data. False when the port is not active (nothing moved).
pub fn arrive_on_port(root: &Path, (device, port): (&str, u32), bytes: u64) -> io::Result<bool> {
    let dir = root
        .join("sys/class/infiniband")
        .join(device)
        .join("ports")
        .join(port.to_string());
    let active = read_trimmed(&dir.join("state")).is_some_and(|s| s.ends_with("ACTIVE"));
    if !active || bytes == 0 {
        return Ok(false);
    }
    // `port_*_data` counts 4-byte words (the PMA's unit).
    bump_port(&dir, "port_rcv_data", bytes / 4)?;
    bump_port(&dir, "port_rcv_packets", bytes.div_ceil(FRAME_BYTES))?;
    Ok(true)
}

/// A port counter: `hw_counters/NAME` where the driver has it there, else `counters/NAME`.
fn bump_port(port_dir: &Path, name: &str, delta: u64) -> io::Result<()> {
    let hw = port_dir.join("hw_counters").join(name);
    if hw.is_file() {
        bump(&hw, delta)
    } else {
        bump(&port_dir.join("counters").join(name), delta)
    }
}

/// Adds `delta` to the decimal counter in `path`, in place. A file that is absent or does
/// not hold a number (a fault made it unreadable) is left alone: the model never makes a
/// counter up.
fn bump(path: &Path, delta: u64) -> io::Result<()> {
    let Some(value) = read_trimmed(path).and_then(|text| text.parse::<u64>().ok()) else {
        return Ok(());
    };
    // A counter past u64::MAX wraps, as the kernel's do.
    let text = format!("{}\n", value.wrapping_add(delta));
    // Not truncated: the new text is never shorter than the old one while the value
    // grows, and a reader never sees an empty file in between.
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.write_all(text.as_bytes())
}

fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// The entries of `dir`, sorted; none when it does not exist.
fn sorted_names(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn value(path: &Path) -> u64 {
        read_trimmed(path)
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{} holds no number", path.display()))
    }

    #[test]
    fn up_links_and_active_ports_move_and_a_down_link_does_not() {
        let (_dir, root) = fixture::bluefield3_tempdir();
        let rx = root.join("sys/class/net/p0/statistics/rx_bytes");
        let vf_rx = root.join("sys/class/net/pf0vf0/statistics/rx_bytes");
        let port_rcv = root.join("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data");
        let (rx0, vf0, port0) = (value(&rx), value(&vf_rx), value(&port_rcv));
        fs::write(root.join("sys/class/net/pf0vf0/operstate"), "down\n").expect("down");
        let moved = advance_links(&root, 4_000).expect("advance");
        assert_eq!(value(&rx), rx0 + 4_000);
        assert_eq!(value(&vf_rx), vf0, "a down link carries nothing");
        assert_eq!(value(&port_rcv), port0 + 1_000, "4-byte words");
        assert!(moved.netdevs.contains(&"p0".to_owned()), "{moved:?}");
        assert!(!moved.netdevs.contains(&"pf0vf0".to_owned()), "{moved:?}");
        assert_eq!(moved.rdma_ports, ["mlx5_0/1"]);
    }

    #[test]
    fn a_counter_grows_in_place_and_an_unreadable_one_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c");
        fs::write(&path, "999\n").expect("write");
        let inode = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).expect("stat"));
        bump(&path, 1).expect("bump");
        assert_eq!(fs::read_to_string(&path).expect("read"), "1000\n");
        let after = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).expect("stat"));
        assert_eq!(inode, after, "same file: the agent keeps it open");
        fs::write(&path, "garbage\n").expect("write");
        bump(&path, 1).expect("bump");
        assert_eq!(fs::read_to_string(&path).expect("read"), "garbage\n");
    }
}
