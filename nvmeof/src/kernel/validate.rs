//! Input checks done before anything under configfs, sysfs or `/dev` is touched; each
//! failure names the spec field.

use std::net::IpAddr;
use std::path::{Component, Path};

use super::KernelError;
use crate::address::{validate_traddr, validate_trsvcid, AddressFamily};
use crate::nqn::Nqn;

/// The largest NSID nvmet accepts as a namespace directory name (0 and 0xFFFFFFFF are
/// reserved by the spec and refused by `nvmet_ns_make`).
pub(crate) const MAX_NSID: u32 = 0xFFFF_FFFE;

/// nvmet's serial number limit, `NVMET_SN_MAX_SIZE`.
const MAX_SERIAL: usize = 20;
/// The Identify Controller model number field size.
const MAX_MODEL: usize = 40;

pub(crate) fn nqn(field: &'static str, value: &str) -> Result<Nqn, KernelError> {
    Nqn::parse(value).map_err(|e| KernelError::invalid(field, value, e.to_string()))
}

pub(crate) fn nsid(nsid: u32) -> Result<u32, KernelError> {
    if (1..=MAX_NSID).contains(&nsid) {
        Ok(nsid)
    } else {
        Err(KernelError::invalid(
            "nsid",
            &nsid.to_string(),
            "must be 1..=0xFFFFFFFE",
        ))
    }
}

/// An absolute path with no `..`, no NUL and no newline (configfs takes the first line).
pub(crate) fn device_path(value: &str) -> Result<&Path, KernelError> {
    let bad = |reason: &str| Err(KernelError::invalid("device_path", value, reason));
    if value.contains(['\0', '\n']) {
        return bad("contains NUL or newline");
    }
    let path = Path::new(value);
    if !path.is_absolute() {
        return bad("must be absolute");
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return bad("must not contain '..'");
    }
    Ok(path)
}

/// `8-4-4-4-12` hex digits, as `uuid_parse` in the kernel wants.
pub(crate) fn uuid(value: &str) -> Result<(), KernelError> {
    let groups: Vec<&str> = value.split('-').collect();
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(KernelError::invalid(
            "uuid",
            value,
            "not an 8-4-4-4-12 hex UUID",
        ))
    }
}

/// Printable ASCII within `max` bytes: nvmet refuses anything else for serial and model.
fn ascii_attr(field: &'static str, value: &str, max: usize) -> Result<(), KernelError> {
    if value.is_empty() || value.len() > max {
        return Err(KernelError::invalid(
            field,
            value,
            format!("must be 1-{max} bytes"),
        ));
    }
    if !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(KernelError::invalid(
            field,
            value,
            "must be printable ASCII",
        ));
    }
    Ok(())
}

pub(crate) fn serial(value: &str) -> Result<(), KernelError> {
    ascii_attr("serial", value, MAX_SERIAL)
}

pub(crate) fn model(value: &str) -> Result<(), KernelError> {
    ascii_attr("model", value, MAX_MODEL)
}

/// An IP `traddr`; the family is taken from the spelling (a `:` means IPv6).
pub(crate) fn traddr(field: &'static str, value: &str) -> Result<IpAddr, KernelError> {
    let family = if value.contains(':') {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    };
    traddr_of(field, family, value)
}

pub(crate) fn traddr_of(
    field: &'static str,
    family: AddressFamily,
    value: &str,
) -> Result<IpAddr, KernelError> {
    validate_traddr(family, value).map_err(|e| KernelError::invalid(field, value, e.to_string()))
}

pub(crate) fn trsvcid(port: u16) -> Result<u16, KernelError> {
    validate_trsvcid(u32::from(port))
        .map_err(|e| KernelError::invalid("trsvcid", &port.to_string(), e.to_string()))
}

/// A value for the `/dev/nvme-fabrics` option string: the kernel splits on `,` and `\n`
/// and then on `=`, so any of those (or other whitespace, or NUL) would smuggle in or
/// break an option.
pub(crate) fn option_value(field: &'static str, value: &str) -> Result<(), KernelError> {
    if value.is_empty() {
        return Err(KernelError::invalid(field, value, "is empty"));
    }
    match value
        .chars()
        .find(|&c| c == ',' || c == '=' || c == '\0' || c.is_whitespace())
    {
        Some(c) => Err(KernelError::invalid(
            field,
            value,
            format!("contains {c:?}, which the fabrics option parser would split on"),
        )),
        None => Ok(()),
    }
}

/// A controller device name, `nvme<N>`.
pub(crate) fn controller_name(value: &str) -> Result<(), KernelError> {
    match value.strip_prefix("nvme") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(KernelError::invalid(
            "device",
            value,
            "must be a controller name nvme<N>",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_names_its_field() {
        let field = |r: Result<(), KernelError>| match r {
            Err(KernelError::Invalid { field, .. }) => field,
            other => panic!("expected Invalid, got {other:?}"),
        };
        assert_eq!(field(nqn("nqn", "nqn.2022-10.io.x:a b").map(drop)), "nqn");
        assert_eq!(field(nsid(0).map(drop)), "nsid");
        assert_eq!(field(nsid(u32::MAX).map(drop)), "nsid");
        assert!(nsid(MAX_NSID).is_ok());
        assert_eq!(field(device_path("/dev/../etc/x").map(drop)), "device_path");
        assert_eq!(field(device_path("dev/nullb0").map(drop)), "device_path");
        assert_eq!(field(device_path("/dev/a\0b").map(drop)), "device_path");
        assert!(device_path("/dev/nullb0").is_ok());
        assert_eq!(field(uuid("1234")), "uuid");
        assert!(uuid("f81d4fae-7dec-11d0-a765-00a0c91e6bf6").is_ok());
        assert_eq!(field(serial(&"x".repeat(21))), "serial");
        assert_eq!(field(model("caf\u{e9}")), "model");
        assert_eq!(field(option_value("subnqn", "a,b")), "subnqn");
        assert_eq!(field(option_value("hostnqn", "a=b")), "hostnqn");
        assert_eq!(field(option_value("traddr", "a b")), "traddr");
        assert_eq!(field(controller_name("nvme0n1")), "device");
        assert_eq!(field(controller_name("../nvme0")), "device");
        assert!(controller_name("nvme12").is_ok());
        assert_eq!(field(traddr("traddr", "10.0.0").map(drop)), "traddr");
        assert!(traddr("traddr", "fe80::1").is_ok());
        assert_eq!(field(trsvcid(0).map(drop)), "trsvcid");
    }
}
