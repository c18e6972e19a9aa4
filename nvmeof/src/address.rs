//! Fabrics transport addresses (`traddr`, `trsvcid`), validated before they reach SPDK's
//! `bdev_nvme_attach_controller` or `/dev/nvme-fabrics`.
//!
//! Both consumers take the address as a string and report a bad one late and vaguely (a
//! failed connect after a timeout), so the agent checks it up front and names the problem.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The address family of an IP fabrics transport (RDMA or TCP); spelled as SPDK's `adrfam`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressFamily {
    /// IPv4, `adrfam` `ipv4`.
    Ipv4,
    /// IPv6, `adrfam` `ipv6`.
    Ipv6,
}

impl AddressFamily {
    /// The spelling SPDK (`adrfam`) and the kernel fabrics options use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ipv4 => "ipv4",
            Self::Ipv6 => "ipv6",
        }
    }
}

impl fmt::Display for AddressFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a transport address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// `traddr` is not an address of the requested family.
    #[error("traddr {addr:?} is not a valid {family} address")]
    InvalidTraddr {
        /// The requested family.
        family: AddressFamily,
        /// The rejected address.
        addr: String,
        /// The parser's complaint.
        #[source]
        source: std::net::AddrParseError,
    },
    /// `trsvcid` is not a TCP port number.
    #[error("trsvcid {port} is not a port number (1-65535)")]
    InvalidTrsvcid {
        /// The rejected value.
        port: u32,
    },
}

/// Checks that `addr` is a plain address of `family` (no brackets, no port, no zone) and
/// returns it parsed.
pub fn validate_traddr(family: AddressFamily, addr: &str) -> Result<IpAddr, AddressError> {
    let parsed = match family {
        AddressFamily::Ipv4 => addr.parse::<Ipv4Addr>().map(IpAddr::V4),
        AddressFamily::Ipv6 => addr.parse::<Ipv6Addr>().map(IpAddr::V6),
    };
    parsed.map_err(|source| AddressError::InvalidTraddr {
        family,
        addr: addr.to_owned(),
        source,
    })
}

/// Checks that `port` is a usable service id (1-65535; NVMe-oF's default is 4420).
pub fn validate_trsvcid(port: u32) -> Result<u16, AddressError> {
    u16::try_from(port)
        .ok()
        .filter(|&p| p != 0)
        .ok_or(AddressError::InvalidTrsvcid { port })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_must_match_their_family() {
        assert_eq!(
            validate_traddr(AddressFamily::Ipv4, "192.168.100.2").expect("v4"),
            IpAddr::V4(Ipv4Addr::new(192, 168, 100, 2))
        );
        assert!(validate_traddr(AddressFamily::Ipv6, "fe80::1").is_ok());
        for (family, bad) in [
            (AddressFamily::Ipv4, "fe80::1"),
            (AddressFamily::Ipv4, "10.0.0"),
            (AddressFamily::Ipv4, "10.0.0.1:4420"),
            (AddressFamily::Ipv4, "010.0.0.1"),
            (AddressFamily::Ipv4, " 10.0.0.1"),
            (AddressFamily::Ipv4, "host.example"),
            (AddressFamily::Ipv6, "10.0.0.1"),
            (AddressFamily::Ipv6, "[fe80::1]"),
            (AddressFamily::Ipv6, ""),
        ] {
            let err = validate_traddr(family, bad).expect_err(bad);
            assert!(err.to_string().contains(family.as_str()), "{err}");
        }
    }

    #[test]
    fn ports_are_1_to_65535() {
        assert_eq!(validate_trsvcid(4420), Ok(4420));
        assert_eq!(validate_trsvcid(1), Ok(1));
        assert_eq!(validate_trsvcid(65535), Ok(65535));
        for bad in [0, 65536, u32::MAX] {
            assert_eq!(
                validate_trsvcid(bad),
                Err(AddressError::InvalidTrsvcid { port: bad })
            );
        }
    }
}
