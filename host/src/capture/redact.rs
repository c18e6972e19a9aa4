//! Redaction of a capture: identifiers of the machine replaced by placeholders, the same
//! input always by the same placeholder within one capture, each in the format of what it
//! replaces (a MAC stays a MAC, a GID a GID) so the probe still parses the replay.
//!
//! What is found: link-layer addresses (MACs and the 20-byte IPoIB ones), InfiniBand GUIDs
//! (`xxxx:xxxx:xxxx:xxxx`), GIDs (8 groups of 4 hex digits; a link-local GID keeps its
//! `fe80::` prefix and has its interface ID mapped like a GUID, an IPv4-mapped one has
//! its address mapped like an IPv4 address), IPv4 dotted quads and IPv6 addresses in any
//! file, and by file name: hostnames, DMI serials and UUIDs, PCI VPD. All-zero and
//! broadcast values, loopback and unspecified addresses are not identifiers and stay.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use serde::Serialize;

mod binary;

/// One kind of identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedactedKind {
    /// A MAC or other link-layer address.
    LinkAddress,
    /// An InfiniBand node, system image or port GUID.
    Guid,
    /// A GID that is neither link-local nor IPv4-mapped.
    Gid,
    /// An IPv4 address.
    Ipv4,
    /// An IPv6 address.
    Ipv6,
    /// The host name.
    Hostname,
    /// A serial number or UUID (DMI).
    Serial,
    /// PCI Vital Product Data (holds the board serial): zeroed.
    Vpd,
}

/// What the manifest says of one redacted value: never the value itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    /// What it was.
    pub kind: RedactedKind,
    /// What it became.
    pub placeholder: String,
    /// The files (root-relative) it was replaced in.
    pub files: Vec<String>,
}

/// The mapping of one capture.
#[derive(Debug, Default)]
pub struct Redactor {
    /// (kind, original lowercased) -> index into `redactions`.
    seen: BTreeMap<(RedactedKind, String), usize>,
    redactions: Vec<Redaction>,
    counts: BTreeMap<RedactedKind, u32>,
}

impl Redactor {
    /// The redactions made so far, in the order first met.
    pub fn redactions(&self) -> &[Redaction] {
        &self.redactions
    }

    /// Redacts the content of the root-relative file `path`.
    pub fn file(&mut self, path: &Path, bytes: &[u8]) -> Vec<u8> {
        let shown = path.display().to_string();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "vpd" {
            if bytes.is_empty() {
                return Vec::new();
            }
            self.placeholder(RedactedKind::Vpd, &shown, &shown);
            return vec![0; bytes.len()];
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            // Binary (PCI config space): no text identifiers in it.
            return bytes.to_vec();
        };
        let whole = match shown.as_str() {
            "proc/sys/kernel/hostname" | "etc/hostname" => Some(RedactedKind::Hostname),
            _ if matches!(
                name,
                "product_serial" | "board_serial" | "chassis_serial" | "serial" | "product_uuid"
            ) =>
            {
                Some(RedactedKind::Serial)
            }
            _ => None,
        };
        match whole {
            Some(kind) => {
                let value = text.trim_end();
                if value.is_empty() {
                    return bytes.to_vec();
                }
                let placeholder = if name == "product_uuid" {
                    self.uuid(value, &shown)
                } else {
                    self.placeholder(kind, value, &shown)
                };
                format!("{placeholder}{}", &text[value.len()..]).into_bytes()
            }
            None => self.text(text, &shown).into_bytes(),
        }
    }

    /// `text` with every identifier in it replaced.
    fn text(&mut self, text: &str, file: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find(is_token_char) {
            out.push_str(&rest[..start]);
            let after = &rest[start..];
            let end = after.find(|c| !is_token_char(c)).unwrap_or(after.len());
            out.push_str(&self.token(&after[..end], file));
            rest = &after[end..];
        }
        out.push_str(rest);
        out
    }

    /// One run of letters, digits, ':' and '.', replaced when it is an identifier.
    fn token(&mut self, token: &str, file: &str) -> String {
        let core = token.trim_end_matches(['.', ':']);
        let tail = &token[core.len()..];
        match self.identifier(core, file) {
            Some(replaced) => format!("{replaced}{tail}"),
            None => token.to_owned(),
        }
    }

    fn identifier(&mut self, core: &str, file: &str) -> Option<String> {
        let groups: Vec<&str> = core.split(':').collect();
        let hex = |g: &&str, n: usize| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit());
        if groups.len() >= 6 && groups.iter().all(|g| hex(g, 2)) {
            return self.link_address(core, groups.len(), file);
        }
        if groups.len() == 4 && groups.iter().all(|g| hex(g, 4)) {
            return self.guid(core, file);
        }
        if groups.len() == 8 && groups.iter().all(|g| hex(g, 4)) {
            return self.gid(&groups, file);
        }
        if let Ok(v4) = core.parse::<Ipv4Addr>() {
            return self.ipv4(v4, file).map(|a| a.to_string());
        }
        if core.contains("::") {
            if let Ok(v6) = core.parse::<Ipv6Addr>() {
                if v6.is_unspecified() || v6.is_loopback() {
                    return None;
                }
                return Some(self.placeholder(RedactedKind::Ipv6, &v6.to_string(), file));
            }
        }
        None
    }

    fn link_address(&mut self, core: &str, octets: usize, file: &str) -> Option<String> {
        let lower = core.to_ascii_lowercase();
        if lower.split(':').all(|g| g == "00") || lower.split(':').all(|g| g == "ff") {
            return None;
        }
        let key = (RedactedKind::LinkAddress, lower);
        if let Some(&i) = self.seen.get(&key) {
            return Some(self.note(i, file));
        }
        let n = self.next(RedactedKind::LinkAddress);
        let mut bytes = vec![0u8; octets];
        bytes[0] = 0x02; // locally administered, unicast
        bytes[octets - 2] = (n >> 8) as u8;
        bytes[octets - 1] = n as u8;
        let placeholder = bytes
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":");
        Some(self.insert(key, placeholder, file))
    }

    fn guid(&mut self, core: &str, file: &str) -> Option<String> {
        let lower = core.to_ascii_lowercase();
        if lower.split(':').all(|g| g == "0000") {
            return None;
        }
        let key = (RedactedKind::Guid, lower);
        if let Some(&i) = self.seen.get(&key) {
            return Some(self.note(i, file));
        }
        let n = self.next(RedactedKind::Guid);
        Some(self.insert(key, format!("0200:0000:0000:{n:04x}"), file))
    }

    fn gid(&mut self, groups: &[&str], file: &str) -> Option<String> {
        let lower: Vec<String> = groups.iter().map(|g| g.to_ascii_lowercase()).collect();
        if lower.iter().all(|g| g == "0000") {
            return None;
        }
        if lower[..4] == ["fe80", "0000", "0000", "0000"] {
            let iid = self.guid(&lower[4..].join(":"), file)?;
            return Some(format!("fe80:0000:0000:0000:{iid}"));
        }
        if lower[..6] == ["0000", "0000", "0000", "0000", "0000", "ffff"] {
            let hi = u16::from_str_radix(&lower[6], 16).ok()?;
            let lo = u16::from_str_radix(&lower[7], 16).ok()?;
            let v4 = Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
            let mapped = u32::from(self.ipv4(v4, file)?);
            return Some(format!(
                "0000:0000:0000:0000:0000:ffff:{:04x}:{:04x}",
                mapped >> 16,
                mapped & 0xffff
            ));
        }
        let key = (RedactedKind::Gid, lower.join(":"));
        if let Some(&i) = self.seen.get(&key) {
            return Some(self.note(i, file));
        }
        let n = self.next(RedactedKind::Gid);
        Some(self.insert(
            key,
            format!("fd00:0000:0000:0000:0000:0000:0000:{n:04x}"),
            file,
        ))
    }

    fn ipv4(&mut self, v4: Ipv4Addr, file: &str) -> Option<Ipv4Addr> {
        if v4.is_unspecified() || v4.is_loopback() || v4.is_broadcast() {
            return None;
        }
        let key = (RedactedKind::Ipv4, v4.to_string());
        let placeholder = match self.seen.get(&key) {
            Some(&i) => self.note(i, file),
            None => {
                let n = self.next(RedactedKind::Ipv4);
                let [_, _, hi, lo] = n.to_be_bytes();
                self.insert(key, Ipv4Addr::new(198, 18, hi, lo).to_string(), file)
            }
        };
        placeholder.parse().ok()
    }

    fn uuid(&mut self, value: &str, file: &str) -> String {
        let key = (RedactedKind::Serial, value.to_ascii_lowercase());
        if let Some(&i) = self.seen.get(&key) {
            return self.note(i, file);
        }
        let n = self.next(RedactedKind::Serial);
        self.insert(key, format!("00000000-0000-0000-0000-{n:012x}"), file)
    }

    /// The placeholder of a value of `kind` kept whole (`KIND-N`).
    fn placeholder(&mut self, kind: RedactedKind, value: &str, file: &str) -> String {
        let key = (kind, value.to_ascii_lowercase());
        if let Some(&i) = self.seen.get(&key) {
            return self.note(i, file);
        }
        let n = self.next(kind);
        let prefix = match kind {
            RedactedKind::Hostname => "redacted-host",
            RedactedKind::Vpd => "vpd",
            RedactedKind::Ipv6 => return self.insert(key, format!("fd00::{n:x}"), file),
            _ => "REDACTED-SERIAL",
        };
        self.insert(key, format!("{prefix}-{n}"), file)
    }

    fn next(&mut self, kind: RedactedKind) -> u32 {
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        *count
    }

    fn insert(&mut self, key: (RedactedKind, String), placeholder: String, file: &str) -> String {
        self.redactions.push(Redaction {
            kind: key.0,
            placeholder: placeholder.clone(),
            files: vec![file.to_owned()],
        });
        self.seen.insert(key, self.redactions.len() - 1);
        placeholder
    }

    fn note(&mut self, index: usize, file: &str) -> String {
        let redaction = &mut self.redactions[index];
        if !redaction.files.iter().any(|f| f == file) {
            redaction.files.push(file.to_owned());
        }
        redaction.placeholder.clone()
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == ':' || c == '.'
}

mod json;

#[cfg(test)]
mod tests;
