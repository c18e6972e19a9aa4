//! InfiniBand port attributes from `/sys/class/infiniband/<dev>/ports/<n>/`, typed: what
//! the subnet manager configured (port state, LID, SM LID and SL), the negotiated rate and
//! width, and the P_Key at index 0. Every port of every device is read, Ethernet (RoCE)
//! ones too, so a caller can tell which ports are InfiniBand and name the others.
//!
//! Formats are the kernel's (`drivers/infiniband/core/sysfs.c`), with sources in
//! `docs/reference/rdma-sysfs-ib.md`. A missing attribute is `None`, never a guessed
//! value; an unreadable or malformed one is an error naming the file.

use std::io;
use std::path::{Path, PathBuf};

use crate::root::list_dir;
use crate::{ProbeError, SysRoot};

/// `state` code of a port the subnet manager activated (`IB_PORT_ACTIVE`).
pub const PORT_STATE_ACTIVE: u32 = 4;
/// `state` code of a port whose link is up but which no subnet manager configured yet
/// (`IB_PORT_INIT`).
pub const PORT_STATE_INIT: u32 = 2;
/// `state` code of a port the subnet manager configured but has not activated
/// (`IB_PORT_ARMED`).
pub const PORT_STATE_ARMED: u32 = 3;
/// `phys_state` code of a trained physical link (`IB_PORT_PHYS_STATE_LINK_UP`).
pub const PHYS_STATE_LINK_UP: u32 = 5;
/// The default partition key with full membership (kernel `IB_DEFAULT_PKEY_FULL`).
pub const DEFAULT_PKEY_FULL: u16 = 0xffff;
/// The default partition key with limited membership (kernel `IB_DEFAULT_PKEY_PARTIAL`).
pub const DEFAULT_PKEY_LIMITED: u16 = 0x7fff;
/// The highest unicast LID; 0xC000 and above are multicast, 0xFFFF permissive
/// (opensm/rdma-core `IB_LID_UCAST_END_HO`).
pub const LAST_UNICAST_LID: u32 = 0xbfff;

/// A state file's "number: name" pair ("4: ACTIVE", "5: LinkUp").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedState {
    /// The number, which is what the kernel and the IB spec define.
    pub code: u32,
    /// The kernel's name for it (`ACTIVE`, `INIT`, `LinkUp`, `Polling` ...).
    pub name: String,
}

/// A port's `rate`, e.g. "400 Gb/sec (4X NDR)": active width times lane speed.
#[derive(Debug, Clone, PartialEq)]
pub struct IbRate {
    /// The data rate in Gbit/s (400, 2.5).
    pub gbps: f64,
    /// Active width in lanes (1, 2, 4, 8, 12).
    pub width: u32,
    /// Lane speed name (`SDR` ... `NDR`, `XDR`); older kernels print none for SDR.
    pub speed: Option<String>,
}

/// How a port belongs to the partition of a P_Key: bit 15 of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PkeyMembership {
    /// Bit 15 set: may talk to every member of the partition.
    Full,
    /// Bit 15 clear: may talk only to full members.
    Limited,
}

/// One RDMA port's InfiniBand attributes. On an Ethernet (RoCE) port the LIDs read 0 and
/// mean nothing; check [`IbPortAttributes::is_infiniband`] first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IbPortAttributes {
    /// Device name ("mlx5_0").
    pub ibdev: String,
    /// Port number (1-based).
    pub port: u32,
    /// `link_layer`: "InfiniBand", "Ethernet" or "Unknown".
    pub link_layer: Option<String>,
    /// `state` ("4: ACTIVE").
    pub state: Option<NumberedState>,
    /// `phys_state` ("5: LinkUp").
    pub phys_state: Option<NumberedState>,
    /// `lid`, printed in hex ("0x1a"); 0 until a subnet manager assigns one.
    pub lid: Option<u32>,
    /// `sm_lid`: the LID of the subnet manager that configured the port; 0 when none did.
    pub sm_lid: Option<u32>,
    /// `sm_sl`: the service level to reach the subnet manager.
    pub sm_sl: Option<u8>,
    /// `rate`; `None` also when the kernel refuses it (EINVAL: active width unknown).
    pub rate: Option<IbRate>,
    /// `pkeys/0`: the P_Key at index 0, which verbs users take unless told otherwise;
    /// `None` when the port has no P_Key table.
    pub default_pkey: Option<u16>,
}

impl IbPortAttributes {
    /// "mlx5_0/1", the name `rdma link` and NCCL_IB_HCA use.
    pub fn name(&self) -> String {
        format!("{}/{}", self.ibdev, self.port)
    }

    /// Whether the port's link layer is InfiniBand (not RoCE).
    pub fn is_infiniband(&self) -> bool {
        self.link_layer.as_deref() == Some("InfiniBand")
    }
}

/// Whether `pkey` is the default partition's key (low 15 bits all ones) and with which
/// membership; `None` for any other partition.
pub fn default_partition_membership(pkey: u16) -> Option<PkeyMembership> {
    if pkey & DEFAULT_PKEY_LIMITED != DEFAULT_PKEY_LIMITED {
        return None;
    }
    Some(if pkey & 0x8000 != 0 {
        PkeyMembership::Full
    } else {
        PkeyMembership::Limited
    })
}

/// Every port of every RDMA device, by device name then port number; an absent
/// `/sys/class/infiniband` means none.
pub fn list_ib_port_attributes(root: &SysRoot) -> Result<Vec<IbPortAttributes>, ProbeError> {
    let mut all = Vec::new();
    for ibdev in list_dir(&root.sys("class/infiniband"))? {
        let ports_dir = root.sys("class/infiniband").join(&ibdev).join("ports");
        let mut numbers: Vec<u32> = list_dir(&ports_dir)?
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect();
        numbers.sort_unstable();
        for port in numbers {
            all.push(read_ib_port_attributes(root, &ibdev, port)?);
        }
    }
    Ok(all)
}

/// Reads one port; [`ProbeError::NotFound`] when it does not exist.
pub fn read_ib_port_attributes(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<IbPortAttributes, ProbeError> {
    let dir = root
        .sys("class/infiniband")
        .join(ibdev)
        .join("ports")
        .join(port.to_string());
    if !crate::root::is_dir(&dir) {
        return Err(ProbeError::NotFound {
            what: "RDMA port",
            name: format!("{ibdev}/{port}"),
            root: root.sys("class/infiniband"),
        });
    }
    Ok(IbPortAttributes {
        ibdev: ibdev.to_owned(),
        port,
        link_layer: read_optional(&dir.join("link_layer"))?,
        state: parsed(&dir.join("state"), "\"<n>: <STATE>\"", parse_numbered)?,
        phys_state: parsed(&dir.join("phys_state"), "\"<n>: <state>\"", parse_numbered)?,
        lid: parsed(&dir.join("lid"), "a hex LID (\"0x1a\")", parse_hex)?,
        sm_lid: parsed(&dir.join("sm_lid"), "a hex LID (\"0x1\")", parse_hex)?,
        sm_sl: parsed(&dir.join("sm_sl"), "a decimal SL", |t| t.parse().ok())?,
        rate: read_rate(&dir.join("rate"))?,
        default_pkey: parsed(&dir.join("pkeys/0"), "a hex P_Key (\"0xffff\")", |t| {
            parse_hex(t).and_then(|v| u16::try_from(v).ok())
        })?,
    })
}

/// An attribute's text without the trailing newline; `None` when the file is absent.
fn read_optional(path: &Path) -> Result<Option<String>, ProbeError> {
    match crate::root::read_text(path) {
        Ok(text) => Ok(Some(trimmed(&text))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ProbeError::read(path, e)),
    }
}

fn trimmed(text: &str) -> String {
    text.trim_end_matches(['\n', '\0']).trim().to_owned()
}

/// An attribute parsed by `parse`; `None` when absent, a format error naming the file and
/// what was `expected` when present but not parseable.
fn parsed<T>(
    path: &Path,
    expected: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, ProbeError> {
    match read_optional(path)? {
        Some(text) => parse_or_error(path, expected, &text, parse).map(Some),
        None => Ok(None),
    }
}

fn parse_or_error<T>(
    path: &Path,
    expected: &str,
    text: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, ProbeError> {
    parse(text).ok_or_else(|| ProbeError::Format {
        path: PathBuf::from(path),
        detail: format!("expected {expected}, got {text:?}"),
    })
}

/// `rate`: the kernel answers EINVAL when the active width is not one it knows
/// (`rate_show`), which is "no rate", not a broken tree.
fn read_rate(path: &Path) -> Result<Option<IbRate>, ProbeError> {
    let text = match crate::root::read_text(path) {
        Ok(text) => trimmed(&text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
        Err(e) => return Err(ProbeError::read(path, e)),
    };
    parse_or_error(path, "\"<n> Gb/sec (<w>X <SPEED>)\"", &text, parse_rate).map(Some)
}

/// "4: ACTIVE" -> (4, "ACTIVE").
fn parse_numbered(text: &str) -> Option<NumberedState> {
    let (code, name) = text.split_once(':')?;
    Some(NumberedState {
        code: code.trim().parse().ok()?,
        name: name.trim().to_owned(),
    })
}

/// "0x1a" -> 26 (the kernel prints `0x%x` and `0x%04x`).
fn parse_hex(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0x")?;
    u32::from_str_radix(digits, 16).ok()
}

/// "400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)".
fn parse_rate(text: &str) -> Option<IbRate> {
    let (number, rest) = text.split_once(" Gb/sec")?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (width, speed) = inner.split_once('X')?;
    let speed = speed.trim();
    Some(IbRate {
        gbps: number.trim().parse().ok()?,
        width: width.parse().ok()?,
        speed: (!speed.is_empty()).then(|| speed.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    /// A port as the kernel prints it on an NDR 4X link with a subnet manager.
    fn ndr_port(root: &SysRoot, ibdev: &str, port: u32) -> PathBuf {
        let dir = root.sys(format!("class/infiniband/{ibdev}/ports/{port}"));
        write(&dir, "link_layer", "InfiniBand\n");
        write(&dir, "state", "4: ACTIVE\n");
        write(&dir, "phys_state", "5: LinkUp\n");
        write(&dir, "lid", "0x1a\n");
        write(&dir, "sm_lid", "0x1\n");
        write(&dir, "sm_sl", "0\n");
        write(&dir, "rate", "400 Gb/sec (4X NDR)\n");
        write(&dir, "pkeys/0", "0xffff\n");
        write(&dir, "pkeys/1", "0x0000\n");
        dir
    }

    #[test]
    fn reads_an_ndr_port_with_its_subnet_manager() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        ndr_port(&root, "mlx5_0", 1);
        let ports = list_ib_port_attributes(&root).expect("list");
        assert_eq!(ports.len(), 1);
        let p = &ports[0];
        assert_eq!(p.name(), "mlx5_0/1");
        assert!(p.is_infiniband());
        assert_eq!(p.state.as_ref().map(|s| s.code), Some(PORT_STATE_ACTIVE));
        assert_eq!(
            p.phys_state.as_ref().map(|s| s.name.as_str()),
            Some("LinkUp")
        );
        assert_eq!((p.lid, p.sm_lid, p.sm_sl), (Some(0x1a), Some(1), Some(0)));
        let rate = p.rate.as_ref().expect("rate");
        assert_eq!((rate.gbps, rate.width), (400.0, 4));
        assert_eq!(rate.speed.as_deref(), Some("NDR"));
        assert_eq!(p.default_pkey, Some(DEFAULT_PKEY_FULL));
    }

    #[test]
    fn missing_files_are_none_and_ports_sort_by_number() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        ndr_port(&root, "mlx5_0", 10);
        // A RoCE port without a P_Key table, rate or SM attributes.
        let dir = root.sys("class/infiniband/mlx5_0/ports/2");
        write(&dir, "link_layer", "Ethernet\n");
        write(&dir, "state", "4: ACTIVE\n");
        let ports = list_ib_port_attributes(&root).expect("list");
        let numbers: Vec<u32> = ports.iter().map(|p| p.port).collect();
        assert_eq!(numbers, [2, 10]);
        let roce = &ports[0];
        assert!(!roce.is_infiniband());
        assert_eq!(
            (roce.lid, roce.sm_lid, roce.sm_sl, roce.default_pkey),
            (None, None, None, None)
        );
        assert!(roce.rate.is_none() && roce.phys_state.is_none());
    }

    #[test]
    fn a_malformed_attribute_names_its_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(tmp.path());
        let dir = ndr_port(&root, "mlx5_0", 1);
        write(&dir, "lid", "26\n");
        let err = read_ib_port_attributes(&root, "mlx5_0", 1).expect_err("decimal LID");
        let text = err.to_string();
        assert!(
            text.contains("ports/1/lid") && text.contains("\"26\""),
            "{text}"
        );
        let err = read_ib_port_attributes(&root, "mlx5_0", 7).expect_err("absent");
        assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    }

    #[test]
    fn rates_parse_every_kernel_form() {
        let sdr = parse_rate("2.5 Gb/sec (1X SDR)").expect("sdr");
        assert_eq!((sdr.gbps, sdr.width), (2.5, 1));
        let old = parse_rate("10 Gb/sec (4X)").expect("old kernel SDR");
        assert_eq!((old.gbps, old.width, old.speed), (10.0, 4, None));
        let xdr = parse_rate("1600 Gb/sec (8X XDR)").expect("xdr");
        assert_eq!((xdr.width, xdr.speed.as_deref()), (8, Some("XDR")));
        assert_eq!(parse_rate("400 Gb/sec"), None);
        assert_eq!(parse_rate("fast"), None);
    }

    #[test]
    fn the_default_partition_is_the_low_15_bits_all_ones() {
        assert_eq!(
            default_partition_membership(0xffff),
            Some(PkeyMembership::Full)
        );
        assert_eq!(
            default_partition_membership(0x7fff),
            Some(PkeyMembership::Limited)
        );
        assert_eq!(default_partition_membership(0x8001), None);
        assert_eq!(default_partition_membership(0x0000), None);
        assert_eq!(parse_hex("0x0"), Some(0));
        assert_eq!(parse_hex("1a"), None);
    }
}
