//! The netlink part of a bundle: each reading's exchanges redacted and written beside its
//! tree as `ROOT.netlink` (where [`dpu_probe::netlink::recording_path`] looks for it,
//! so the reading replays its netlink answers), in the format of
//! [`dpu_probe::capture::write_netlink_file`].
//!
//! Redaction of the answers: the link-layer addresses of `RTM_NEWLINK` (`IFLA_ADDRESS`,
//! `IFLA_BROADCAST`, `IFLA_PERM_ADDRESS`) and the GUIDs of RDMA nldev answers
//! (`RDMA_NLDEV_ATTR_NODE_GUID`, `RDMA_NLDEV_ATTR_SYS_IMAGE_GUID`) are mapped through the
//! capture's [`Redactor`] (a MAC and its sysfs twin get the same placeholder); then every
//! answer is scanned for the bytes of any address or GUID the capture replaced anywhere,
//! which catches the ones nested deeper (a VF's MAC, a bridge id).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::error::CaptureError;
use super::manifest::NetlinkFile;
use super::redact::Redactor;
use dpu_probe::capture::{family_name, write_netlink_file, NetlinkExchange};
use dpu_probe::snapshot::Snapshot;

/// The netlink message header size.
const HEADER_LEN: usize = 16;
/// `struct ifinfomsg`, before an `RTM_NEWLINK`'s attributes.
const IFINFOMSG_LEN: usize = 16;
/// `RTM_NEWLINK`.
const RTM_NEWLINK: u16 = 16;
/// `RTM_NEWTFILTER`: a tc filter, whose flower keys and actions carry addresses
/// ([`super::tc_redact`]).
const RTM_NEWTFILTER: u16 = 44;
/// `IFLA_ADDRESS`, `IFLA_BROADCAST`, `IFLA_PERM_ADDRESS`.
const LINK_ADDRESS_ATTRS: [u16; 3] = [1, 2, 54];
/// `RDMA_NL_NLDEV`, the client of an nldev message type (`type >> 10`).
const RDMA_NL_NLDEV: u16 = 5;
/// `RDMA_NLDEV_ATTR_NODE_GUID`, `RDMA_NLDEV_ATTR_SYS_IMAGE_GUID` (u64, host order).
const GUID_ATTRS: [u16; 2] = [6, 7];
/// `NETLINK_ROUTE`, `NETLINK_RDMA`.
const NETLINK_ROUTE: i32 = 0;
const NETLINK_RDMA: i32 = 20;

/// The second reading's exchanges over the first's: what the second reading asked, then
/// every request of the first it did not ask again (its sampler kept the answer, such as
/// the ifindex → name map), as the second tree is the first with the second's files over
/// it.
pub(super) fn overlay(
    first: &[NetlinkExchange],
    second: &[NetlinkExchange],
) -> Vec<NetlinkExchange> {
    let asked: HashSet<(i32, &[u8])> = second
        .iter()
        .map(|e| (e.protocol, e.request.as_slice()))
        .collect();
    let mut out = second.to_vec();
    out.extend(
        first
            .iter()
            .filter(|e| !asked.contains(&(e.protocol, e.request.as_slice())))
            .cloned(),
    );
    out
}

/// Writes what the root's own sampler answered live at this reading as
/// `bundle/ROOT.live-samples` ([`write_samples_file`]): the answers a
/// replay of the reading must give (the round trip and the fixtures runner compare).
pub(super) fn write_live_samples(
    bundle: &Path,
    root: &str,
    snapshot: &Snapshot,
) -> Result<(), CaptureError> {
    let path = bundle.join(format!("{root}.live-samples"));
    fs::write(&path, write_samples_file(snapshot))
        .map_err(|source| CaptureError::Write { path, source })
}

/// The first line of a samples file.
pub(super) const SAMPLES_FORMAT: &str = "dpu-samples/1";

/// A snapshot's samples as text, one `KEY<TAB>VALUE` line each, sorted (the order a
/// sampler collects in is not part of the answer), after a [`SAMPLES_FORMAT`] line: what
/// a capture keeps of the live answers, and what a replay's answers are compared to.
pub(super) fn write_samples_file(snapshot: &Snapshot) -> String {
    let mut lines: Vec<String> = snapshot
        .samples
        .iter()
        .map(|s| format!("{}\t{}", s.key, s.value))
        .collect();
    lines.sort();
    let mut text = format!("{SAMPLES_FORMAT}\n");
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Redacts `exchanges` (when a redactor is given) and writes them as the recording of
/// the reading whose tree is `bundle/root` (`root` relative to the bundle).
pub(super) fn write_reading(
    bundle: &Path,
    root: &str,
    mut exchanges: Vec<NetlinkExchange>,
    redactor: Option<&mut Redactor>,
) -> Result<NetlinkFile, CaptureError> {
    let relative = format!("{root}.netlink");
    if let Some(redactor) = redactor {
        redact(&mut exchanges, redactor, &relative);
    }
    let path: PathBuf = bundle.join(&relative);
    fs::write(&path, write_netlink_file(&exchanges))
        .map_err(|source| CaptureError::Write { path, source })?;
    Ok(NetlinkFile {
        path: relative,
        exchanges: exchanges
            .iter()
            .map(|e| format!("{}: {}", family_name(e.protocol), e.name))
            .collect(),
    })
}

/// Replaces the identifiers in every answer (see the module documentation).
pub(super) fn redact(exchanges: &mut [NetlinkExchange], redactor: &mut Redactor, file: &str) {
    for exchange in exchanges.iter_mut() {
        for answer in &mut exchange.answers {
            redact_attributes(exchange.protocol, answer, redactor, file);
        }
    }
    let pairs = redactor.binary_pairs();
    for exchange in exchanges.iter_mut() {
        for answer in &mut exchange.answers {
            for (from, to) in &pairs {
                replace_all(answer, from, to);
            }
        }
    }
}

/// The known attributes of one answer message, mapped in place.
fn redact_attributes(protocol: i32, message: &mut [u8], redactor: &mut Redactor, file: &str) {
    if message.len() < HEADER_LEN {
        return;
    }
    let kind = u16::from_ne_bytes([message[4], message[5]]);
    if protocol == NETLINK_ROUTE && kind == RTM_NEWTFILTER {
        super::tc_redact::redact_filter(message, redactor, file);
        return;
    }
    let start = match (protocol, kind) {
        (NETLINK_ROUTE, RTM_NEWLINK) => HEADER_LEN + IFINFOMSG_LEN,
        (NETLINK_RDMA, k) if k >> 10 == RDMA_NL_NLDEV => HEADER_LEN,
        _ => return,
    };
    let end = message.len();
    let mut at = start;
    while at + 4 <= end {
        let len = u16::from_ne_bytes([message[at], message[at + 1]]) as usize;
        let attr = u16::from_ne_bytes([message[at + 2], message[at + 3]]) & 0x3fff;
        if len < 4 || at + len > end {
            return;
        }
        let value = &mut message[at + 4..at + len];
        if protocol == NETLINK_ROUTE && LINK_ADDRESS_ATTRS.contains(&attr) {
            if let Some(placeholder) = redactor.link_address_bytes(value, file) {
                if placeholder.len() == value.len() {
                    value.copy_from_slice(&placeholder);
                }
            }
        } else if protocol == NETLINK_RDMA && GUID_ATTRS.contains(&attr) && value.len() == 8 {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(value);
            if let Some(placeholder) = redactor.guid_value(u64::from_ne_bytes(raw), file) {
                value.copy_from_slice(&placeholder.to_ne_bytes());
            }
        }
        at += (len + 3) & !3;
    }
}

/// Replaces every occurrence of `from` in `bytes` by `to` (of the same length).
fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    if from.is_empty() || from.len() != to.len() || bytes.len() < from.len() {
        return;
    }
    let mut at = 0;
    while at + from.len() <= bytes.len() {
        if &bytes[at..at + from.len()] == from {
            bytes[at..at + from.len()].copy_from_slice(to);
            at += from.len();
        } else {
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut a = ((4 + value.len()) as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(value);
        while !a.len().is_multiple_of(4) {
            a.push(0);
        }
        a
    }

    fn message(kind: u16, family_header: usize, attrs: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = attrs.concat();
        let len = HEADER_LEN + family_header + body.len();
        let mut m = (len as u32).to_ne_bytes().to_vec();
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&vec![0; family_header]);
        m.extend_from_slice(&body);
        m
    }

    const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0xab, 0xcd, 0xef];
    const VF_MAC: [u8; 6] = [0xb8, 0x3f, 0xd2, 0x01, 0x02, 0x03];

    #[test]
    fn link_addresses_map_like_sysfs_and_nested_copies_are_found() {
        let mut redactor = Redactor::default();
        // The sysfs twin first: the netlink copy must get its placeholder.
        redactor.file(
            Path::new("sys/class/net/eth0/address"),
            format!("{}\n", MAC.map(|b| format!("{b:02x}")).join(":")).as_bytes(),
        );
        let link = message(
            RTM_NEWLINK,
            IFINFOMSG_LEN,
            &[
                attr(3, b"eth0\0"),
                attr(1, &MAC),
                attr(2, &[0xff; 6]),
                attr(54, &VF_MAC),
                // A nested copy (as in IFLA_VFINFO_LIST): found by the scan.
                attr(22, &[&[0u8; 4][..], &VF_MAC[..]].concat()),
            ],
        );
        let mut exchanges = vec![NetlinkExchange {
            protocol: NETLINK_ROUTE,
            name: "RTM_GETLINK dump".to_owned(),
            request: message(18, IFINFOMSG_LEN, &[]),
            answers: vec![link.clone()],
        }];
        redact(&mut exchanges, &mut redactor, "root.netlink");
        let out = &exchanges[0].answers[0];
        let contains = |needle: &[u8]| out.windows(needle.len()).any(|w| w == needle);
        assert!(!contains(&MAC) && !contains(&VF_MAC), "{out:02x?}");
        assert!(
            contains(&attr(1, &[2, 0, 0, 0, 0, 1])),
            "the sysfs placeholder"
        );
        assert!(contains(&attr(2, &[0xff; 6])), "broadcast kept");
        assert!(contains(&attr(54, &[2, 0, 0, 0, 0, 2])));
        assert_eq!(out.len(), link.len());
        // Control: without redaction the originals are there, so the search works.
        let plain = &link;
        assert!(plain.windows(6).any(|w| w == MAC) && plain.windows(6).any(|w| w == VF_MAC));
    }

    #[test]
    fn rdma_guids_are_mapped_in_host_order() {
        let mut redactor = Redactor::default();
        let guid = 0xb83f_d203_0012_3456u64;
        let device = message(
            (RDMA_NL_NLDEV << 10) + 1,
            0,
            &[
                attr(2, b"mlx5_0\0"),
                attr(6, &guid.to_ne_bytes()),
                attr(7, &guid.to_ne_bytes()),
            ],
        );
        let mut exchanges = vec![NetlinkExchange {
            protocol: NETLINK_RDMA,
            name: "RDMA_NLDEV_CMD_GET dump".to_owned(),
            request: message((RDMA_NL_NLDEV << 10) + 1, 0, &[]),
            answers: vec![device],
        }];
        redact(&mut exchanges, &mut redactor, "root.netlink");
        let out = &exchanges[0].answers[0];
        assert!(!out.windows(8).any(|w| w == guid.to_ne_bytes()));
        assert!(out
            .windows(8)
            .any(|w| w == 0x0200_0000_0000_0001u64.to_ne_bytes()));
    }

    #[test]
    fn the_second_reading_keeps_the_first_answers_it_did_not_ask_again() {
        let exchange = |request: u8, answer: u8| NetlinkExchange {
            protocol: 0,
            name: String::new(),
            request: vec![request; 16],
            answers: vec![vec![answer; 16]],
        };
        let merged = overlay(&[exchange(1, 1), exchange(2, 2)], &[exchange(2, 9)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].answers[0][0], 9, "the second reading's own first");
        assert_eq!(
            merged[1].request[0], 1,
            "the first's request not asked again"
        );
    }
}
