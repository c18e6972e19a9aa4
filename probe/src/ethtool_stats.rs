//! Driver statistics (`ethtool -S`) through the `SIOCETHTOOL` ioctl. The per-priority PFC
//! counters (`rx_prio3_pause`), the physical-port drops and the RDMA/Ethernet split that
//! mlx5 keeps are driver-private strings with no netlink equivalent (the ethtool netlink
//! `STATS_GET` covers only the standard groups), so this is the one way to read them
//! (reference §1.6): `ETHTOOL_GSSET_INFO` for the count, `ETHTOOL_GSTRINGS` for the
//! names, `ETHTOOL_GSTATS` for the values in the same order. The names are read on every
//! call because a driver reload or a channel change may reorder them.

use std::fs::File;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::Path;

use nix::sched::{setns, CloneFlags};

use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

use crate::ProbeError;

const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// More names than any driver has (mlx5 has a few thousand with many channels); a larger
/// count means a confused driver, not a reason to allocate without bound.
const MAX_STATS: usize = 1 << 16;

/// One driver statistic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthtoolStat {
    /// The driver's name for it, as `ethtool -S` prints it.
    pub name: String,
    /// Its value.
    pub value: u64,
}

/// A request buffer, 8-byte aligned as the kernel's structs need.
struct Buffer(Vec<u64>);

impl Buffer {
    fn new(bytes: usize) -> Self {
        Self(vec![0; bytes.div_ceil(8)])
    }

    /// Two u32 header fields packed into one word in native order.
    fn set_words(&mut self, index: usize, a: u32, b: u32) {
        let mut bytes = [0_u8; 8];
        bytes[..4].copy_from_slice(&a.to_ne_bytes());
        bytes[4..].copy_from_slice(&b.to_ne_bytes());
        self.0[index] = u64::from_ne_bytes(bytes);
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }
}

fn ioctl_error(ifname: &str, request: &'static str, errno: nix::errno::Errno) -> ProbeError {
    ProbeError::Ioctl {
        interface: ifname.to_owned(),
        request,
        source: std::io::Error::from(errno),
    }
}

/// Issues SIOCETHTOOL with `buf` as `ifr_data`.
fn ethtool(
    sock: &OwnedFd,
    ifname: &str,
    buf: &mut Buffer,
    what: &'static str,
) -> Result<(), ProbeError> {
    // SAFETY: ifreq is plain old data; all-zero is a valid value for it.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    let name = ifname.as_bytes();
    if name.is_empty() || name.len() >= ifr.ifr_name.len() || name.contains(&0) {
        return Err(ProbeError::InvalidName {
            what: "interface",
            name: ifname.to_owned(),
            why: "an interface name is 1 to 15 bytes without NUL",
        });
    }
    for (dst, &src) in ifr.ifr_name.iter_mut().zip(name) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = buf.0.as_mut_ptr().cast();
    // SAFETY: `ifr` is a valid ifreq naming the interface, and `ifru_data` points at a
    // live, 8-byte aligned buffer sized for the command being issued (each caller sizes
    // it from the count the kernel reported), which outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) };
    if rc < 0 {
        return Err(ioctl_error(ifname, what, nix::errno::Errno::last()));
    }
    Ok(())
}

/// All driver statistics of `ifname` (in the caller's network namespace), in the
/// driver's order. A driver without statistics gives an empty list.
pub fn read_ethtool_stats(ifname: &str) -> Result<Vec<EthtoolStat>, ProbeError> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| ioctl_error(ifname, "socket(AF_INET)", e))?;
    // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[1]; }
    let mut info = Buffer::new(24);
    info.set_words(0, ETHTOOL_GSSET_INFO, 0);
    info.0[1] = 1 << ETH_SS_STATS;
    match ethtool(&sock, ifname, &mut info, "ETHTOOL_GSSET_INFO") {
        Ok(()) => {}
        // No ethtool_ops at all (lo) or no string sets: nothing to read.
        Err(ProbeError::Ioctl { source, .. })
            if source.raw_os_error() == Some(libc::EOPNOTSUPP) =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e),
    }
    let count = if info.0[1] & (1 << ETH_SS_STATS) == 0 {
        0
    } else {
        let b = info.bytes();
        u32::from_ne_bytes([b[16], b[17], b[18], b[19]]) as usize
    };
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_STATS {
        return Err(ProbeError::Driver {
            interface: ifname.to_owned(),
            detail: format!("reports {count} ethtool statistics"),
        });
    }
    let n = u32::try_from(count).unwrap_or(u32::MAX);
    // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
    let mut strings = Buffer::new(12 + count * ETH_GSTRING_LEN);
    strings.set_words(0, ETHTOOL_GSTRINGS, ETH_SS_STATS);
    strings.set_words(1, n, 0);
    ethtool(&sock, ifname, &mut strings, "ETHTOOL_GSTRINGS")?;
    // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
    let mut stats = Buffer::new(8 + count * 8);
    stats.set_words(0, ETHTOOL_GSTATS, n);
    ethtool(&sock, ifname, &mut stats, "ETHTOOL_GSTATS")?;
    // The kernel writes back how many it filled; never read past either count.
    let sb = strings.bytes();
    let names_len = u32::from_ne_bytes([sb[8], sb[9], sb[10], sb[11]]) as usize;
    let stb = stats.bytes();
    let values_len = u32::from_ne_bytes([stb[4], stb[5], stb[6], stb[7]]) as usize;
    let filled = count.min(names_len).min(values_len);
    Ok((0..filled)
        .map(|i| {
            let raw = &sb[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN];
            let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
            EthtoolStat {
                name: String::from_utf8_lossy(&raw[..end]).into_owned(),
                value: stats.0[1 + i],
            }
        })
        .collect())
}

/// [`read_ethtool_stats`] for an interface in the network namespace at `netns` (e.g.
/// `/run/netns/NAME`): a short-lived thread enters the namespace and reads there, so the
/// caller's thread never changes namespace.
pub fn read_ethtool_stats_in(netns: &Path, ifname: &str) -> Result<Vec<EthtoolStat>, ProbeError> {
    let path = netns.to_path_buf();
    let ifname = ifname.to_owned();
    std::thread::Builder::new()
        .name("netns-ethtool".to_owned())
        .spawn(move || {
            let file = File::open(&path).map_err(|source| ProbeError::read(&path, source))?;
            setns(&file, CloneFlags::CLONE_NEWNET)
                .map_err(|e| ProbeError::read(&path, std::io::Error::from(e)))?;
            read_ethtool_stats(&ifname)
        })
        .map_err(|source| ProbeError::read(netns, source))?
        .join()
        .unwrap_or_else(|_| {
            Err(ProbeError::read(
                netns,
                std::io::Error::other("the namespace reader thread panicked"),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reading real interfaces is the kernel tier's (tests/tests/kernel/ethtool.rs): these
    // unit tests also run under qemu-user, which does not translate SIOCETHTOOL (ENOSYS).
    #[test]
    fn bad_names_are_refused_and_a_missing_interface_is_named() {
        assert!(read_ethtool_stats("").is_err());
        assert!(read_ethtool_stats("a-name-far-too-long-for-ifreq").is_err());
        let missing = read_ethtool_stats("nosuchif0").expect_err("missing");
        assert!(missing.to_string().contains("nosuchif0"), "{missing}");
    }
}
