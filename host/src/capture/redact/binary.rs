//! The [`Redactor`]'s mapping applied to binary values (netlink attributes): a MAC or
//! GUID met as bytes gets the placeholder its text got (or will get) in sysfs, so a
//! sysfs file and its netlink twin show the same placeholder.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::{RedactedKind, Redactor};

impl Redactor {
    /// The placeholder of the link-layer address `bytes` (6 or 20 bytes), as bytes;
    /// `None` when it is kept (all-zero, broadcast) or is not an address.
    pub(in crate::capture) fn link_address_bytes(
        &mut self,
        bytes: &[u8],
        file: &str,
    ) -> Option<Vec<u8>> {
        if bytes.is_empty() {
            return None;
        }
        let text = colon_hex(bytes, 1);
        let placeholder = self.link_address(&text, bytes.len(), file)?;
        parse_colon_hex(&placeholder)
    }

    /// The placeholder of the GUID `value` (the number `node_guid` shows in sysfs), as
    /// a number; `None` when it is kept (zero).
    pub(in crate::capture) fn guid_value(&mut self, value: u64, file: &str) -> Option<u64> {
        let text = colon_hex(&value.to_be_bytes(), 2);
        let placeholder = self.guid(&text, file)?;
        let bytes = parse_colon_hex(&placeholder)?;
        Some(u64::from_be_bytes(bytes.try_into().ok()?))
    }

    /// The placeholder of the IPv4 address `octets` (network order), as octets: the
    /// address its text gets elsewhere in the capture; `None` when it is kept
    /// (unspecified, loopback, broadcast).
    pub(in crate::capture) fn ipv4_bytes(
        &mut self,
        octets: [u8; 4],
        file: &str,
    ) -> Option<[u8; 4]> {
        self.ipv4(Ipv4Addr::from(octets), file).map(|a| a.octets())
    }

    /// The placeholder of the IPv6 address `octets`, as octets; `None` when it is kept
    /// (unspecified, loopback).
    pub(in crate::capture) fn ipv6_bytes(
        &mut self,
        octets: [u8; 16],
        file: &str,
    ) -> Option<[u8; 16]> {
        let v6 = Ipv6Addr::from(octets);
        if v6.is_unspecified() || v6.is_loopback() {
            return None;
        }
        let placeholder = self.placeholder(RedactedKind::Ipv6, &v6.to_string(), file);
        placeholder.parse::<Ipv6Addr>().ok().map(|a| a.octets())
    }

    /// Every link-layer address and GUID replaced so far, as (original, placeholder)
    /// byte strings of equal length: what a scan of binary answers looks for. A GUID
    /// comes in both byte orders (RDMA netlink carries it in host order).
    pub(in crate::capture) fn binary_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pairs = Vec::new();
        for ((kind, original), &index) in &self.seen {
            let placeholder = &self.redactions[index].placeholder;
            let (Some(from), Some(to)) = (parse_colon_hex(original), parse_colon_hex(placeholder))
            else {
                continue;
            };
            match kind {
                RedactedKind::LinkAddress if from.len() == to.len() => pairs.push((from, to)),
                RedactedKind::Guid if from.len() == 8 && to.len() == 8 => {
                    let reversed = |v: &[u8]| v.iter().rev().copied().collect::<Vec<u8>>();
                    pairs.push((reversed(&from), reversed(&to)));
                    pairs.push((from, to));
                }
                _ => {}
            }
        }
        pairs
    }
}

/// `bytes` as lowercase hex, `group` bytes per colon-separated group.
fn colon_hex(bytes: &[u8], group: usize) -> String {
    bytes
        .chunks(group)
        .map(|chunk| chunk.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join(":")
}

/// The bytes of colon-separated hex groups of even length (`aa:bb`, `0200:0000`).
fn parse_colon_hex(text: &str) -> Option<Vec<u8>> {
    let digits: String = text.split(':').collect();
    if digits.is_empty()
        || !digits.len().is_multiple_of(2)
        || text.split(':').any(|g| !g.len().is_multiple_of(2))
    {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_binary_mac_gets_the_placeholder_of_its_sysfs_text() {
        let mut r = Redactor::default();
        let text = r.file(
            Path::new("sys/class/net/eth0/address"),
            b"52:54:00:12:34:56\n",
        );
        assert_eq!(text, b"02:00:00:00:00:01\n");
        let bytes = r
            .link_address_bytes(&[0x52, 0x54, 0x00, 0x12, 0x34, 0x56], "root.netlink")
            .expect("redacted");
        assert_eq!(bytes, [2, 0, 0, 0, 0, 1]);
        // Kept: broadcast.
        assert_eq!(r.link_address_bytes(&[0xff; 6], "root.netlink"), None);
        // A new one gets the next placeholder.
        assert_eq!(
            r.link_address_bytes(&[0x52, 0x54, 0, 0, 0, 9], "root.netlink"),
            Some(vec![2, 0, 0, 0, 0, 2])
        );
        let pairs = r.binary_pairs();
        assert!(pairs.contains(&(
            vec![0x52, 0x54, 0x00, 0x12, 0x34, 0x56],
            vec![2, 0, 0, 0, 0, 1]
        )));
    }

    #[test]
    fn a_guid_number_maps_like_its_sysfs_text_in_both_orders() {
        let mut r = Redactor::default();
        let text = r.file(
            Path::new("sys/class/infiniband/mlx5_0/node_guid"),
            b"b83f:d203:0012:3456\n",
        );
        assert_eq!(text, b"0200:0000:0000:0001\n");
        assert_eq!(
            r.guid_value(0xb83f_d203_0012_3456, "root.netlink"),
            Some(0x0200_0000_0000_0001)
        );
        assert_eq!(r.guid_value(0, "root.netlink"), None);
        let pairs = r.binary_pairs();
        let ne = (
            0xb83f_d203_0012_3456u64.to_le_bytes().to_vec(),
            0x0200_0000_0000_0001u64.to_le_bytes().to_vec(),
        );
        assert!(pairs.contains(&ne), "{pairs:?}");
    }
}
