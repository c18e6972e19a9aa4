//! The statistic and attribute fields of a flow line (`ufid:`, `used:`, `offloaded:`, `dp:`)
//! as typed values, each with OVS's exact meaning.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// A datapath flow's unique id (`ufid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`).
///
/// OVS stores the 16 ufid bytes as the TC action cookie of an offloaded flow, so the ufid
/// is what joins a `dpctl/dump-flows` line to its `tc filter` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
// Big-endian bytes rather than a `u128`: they order the same, and keep a flow 8-byte
// aligned, which makes every `DatapathFlow` 16 bytes smaller.
pub struct Ufid([u8; 16]);

/// The value of each ASCII hex digit, [`NOT_HEX`] (all bits a digit never has) for every
/// other byte.
static HEX: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};
const NOT_HEX: u8 = 0xff;

impl Ufid {
    /// The 128-bit value, first printed hex digit most significant.
    pub const fn as_u128(self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    /// The four 32-bit words OVS prints with `UUID_FMT` (`parts[0..4]` of `ovs_u128`).
    ///
    /// OVS keeps them in host byte order, so the TC cookie bytes read on the same machine
    /// are these words in native endianness (little-endian on x86-64 and arm64).
    pub const fn words(self) -> [u32; 4] {
        let v = self.as_u128();
        [
            (v >> 96) as u32,
            (v >> 64) as u32,
            (v >> 32) as u32,
            v as u32,
        ]
    }

    /// Parses the 36-character text after `ufid:`; `None` unless it is exactly
    /// 8-4-4-4-12 hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        let b: &[u8; 36] = text.as_bytes().try_into().ok()?;
        if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
            return None;
        }
        // Fixed-length groups, so every loop unrolls; a bad digit is caught once at the end.
        let mut bad = 0;
        let mut hex = |digits: &[u8]| {
            digits.iter().fold(0u64, |acc, &c| {
                let d = HEX[usize::from(c)];
                bad |= d;
                (acc << 4) | u64::from(d & 0xf)
            })
        };
        let hi = (hex(&b[..8]) << 32) | (hex(&b[9..13]) << 16) | hex(&b[14..18]);
        let lo = (hex(&b[19..23]) << 48) | hex(&b[24..]);
        if bad & !0xf != 0 {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&hi.to_be_bytes());
        bytes[8..].copy_from_slice(&lo.to_be_bytes());
        Some(Self(bytes))
    }
}

impl fmt::Display for Ufid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.words();
        write!(
            f,
            "{a:08x}-{:04x}-{:04x}-{:04x}-{:04x}{d:08x}",
            b >> 16,
            b & 0xffff,
            c >> 16,
            c & 0xffff
        )
    }
}

/// When the flow last matched a packet (`used:`).
///
/// OVS prints `never`, or `(now - last_used) / 1000.0` with three decimals. The value is a
/// difference of two clocks, so it can be negative when the datapath reports a last-use
/// time slightly in the future (tc `lastuse` rounding); it is kept as printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Used {
    /// `used:never`: the flow has not matched a packet since it was installed.
    Never,
    /// `used:<seconds>s`, as milliseconds (may be negative, see the type's doc).
    Millis(i64),
}

impl Used {
    /// Parses the text after `used:` (`never`, `0.520s`, `-0.001s`, `12s`).
    pub fn parse(text: &str) -> Option<Self> {
        if text == "never" {
            return Some(Self::Never);
        }
        let num = text.strip_suffix('s')?;
        let (neg, num) = match num.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, num),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if int.is_empty() || !int.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        if (num.contains('.') && frac.is_empty()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut millis: i64 = int.parse::<i64>().ok()?.checked_mul(1000)?;
        let mut scale = 100;
        for c in frac.bytes().take(3) {
            millis = millis.checked_add(i64::from(c - b'0') * scale)?;
            scale /= 10;
        }
        Some(Self::Millis(if neg { -millis } else { millis }))
    }

    /// How long ago the flow was used; `None` for `never` and for negative values.
    pub fn ago(self) -> Option<Duration> {
        match self {
            Self::Never => None,
            Self::Millis(ms) => u64::try_from(ms).ok().map(Duration::from_millis),
        }
    }
}

impl fmt::Display for Used {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Never => f.write_str("never"),
            Self::Millis(ms) => {
                let sign = if ms < 0 { "-" } else { "" };
                let abs = ms.unsigned_abs();
                write!(f, "{sign}{}.{:03}s", abs / 1000, abs % 1000)
            }
        }
    }
}

/// Whether the flow is in hardware (`offloaded:`), with OVS's exact semantics.
///
/// OVS prints `offloaded:yes` when the provider says offloaded and the layer is not `ovs`,
/// `offloaded:partial` when offloaded on the `ovs` layer (userspace MARK+RSS), and nothing
/// otherwise: never `offloaded:no`. The field (like `dp:` and `ufid:`) is printed only with
/// `-m`, so an absent field means "not offloaded" only on a verbose line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Offloaded {
    /// `offloaded:yes`: the flow is in hardware (tc `in_hw`, or a DPDK/DOCA full offload).
    Yes,
    /// `offloaded:partial`: classification offloaded, actions run in software (`dp:ovs`).
    Partial,
    /// No `offloaded:` on a verbose line (one with `dp:` or `ufid:`): not offloaded. For
    /// `dp:tc` this means the flower rule is in tc software only (`not_in_hw`).
    No,
    /// No `offloaded:` on a terse line (dumped without `-m`), or a value OVS never prints
    /// (kept in the flow's `extra` list): the offload state cannot be told.
    Unknown,
}

/// The datapath layer that holds the flow (`dp:`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DpLayer<'a> {
    /// `dp:ovs`: the kernel module or the userspace (netdev) software datapath.
    Ovs,
    /// `dp:tc`: a TC flower rule (in hardware when `offloaded:yes`).
    Tc,
    /// `dp:dpdk`: a DPDK rte_flow offload of the userspace datapath.
    Dpdk,
    /// `dp:doca`: NVIDIA OVS-DOCA's hardware steering.
    Doca,
    /// Any other layer name, kept as printed (`dummy` in OVS's tests).
    Other(Cow<'a, str>),
}

impl<'a> DpLayer<'a> {
    /// Maps the text after `dp:` to a layer.
    pub fn parse(text: &'a str) -> Self {
        match text {
            "ovs" => Self::Ovs,
            "tc" => Self::Tc,
            "dpdk" => Self::Dpdk,
            "doca" => Self::Doca,
            other => Self::Other(Cow::Borrowed(other)),
        }
    }

    /// The layer name as OVS prints it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Ovs => "ovs",
            Self::Tc => "tc",
            Self::Dpdk => "dpdk",
            Self::Doca => "doca",
            Self::Other(s) => s,
        }
    }

    /// The same layer, owning its text.
    pub fn into_owned(self) -> DpLayer<'static> {
        match self {
            Self::Ovs => DpLayer::Ovs,
            Self::Tc => DpLayer::Tc,
            Self::Dpdk => DpLayer::Dpdk,
            Self::Doca => DpLayer::Doca,
            Self::Other(s) => DpLayer::Other(Cow::Owned(s.into_owned())),
        }
    }
}

impl fmt::Display for DpLayer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which userspace-datapath thread a flow was dumped from, from the header lines
/// `flow-dump from the main thread:` and `flow-dump from pmd on cpu core: N`.
///
/// The same megaflow can exist once per PMD thread, each with its own counters, so the
/// thread is part of a flow's identity in a userspace (OVS-DOCA, DPDK) dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowThread {
    /// `flow-dump from the main thread:` (non-PMD threads).
    Main,
    /// `flow-dump from pmd on cpu core: N`.
    Pmd(u32),
}

/// A `name:value` field that this parser does not model, kept so nothing OVS (or a vendor
/// fork) prints is silently lost.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExtraField<'a> {
    /// The field name before `:`.
    pub name: Cow<'a, str>,
    /// The text after `:` up to the next top-level `, `.
    pub value: Cow<'a, str>,
}

impl ExtraField<'_> {
    /// The same field, owning its text.
    pub fn into_owned(self) -> ExtraField<'static> {
        ExtraField {
            name: Cow::Owned(self.name.into_owned()),
            value: Cow::Owned(self.value.into_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ufid_round_trips_and_splits_into_words() {
        let text = "25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11";
        let u = Ufid::parse(text).expect("valid ufid");
        assert_eq!(u.to_string(), text);
        assert_eq!(u.words(), [0x25030bd6, 0x7e334ba5, 0x9c1baa4b, 0x6f0d2a11]);
        assert_eq!(Ufid::parse("25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a1"), None);
        assert_eq!(Ufid::parse("25030bd6x7e33-4ba5-9c1b-aa4b6f0d2a11"), None);
        assert_eq!(Ufid::parse("g5030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11"), None);
    }

    #[test]
    fn used_parses_ovs_formats() {
        assert_eq!(Used::parse("never"), Some(Used::Never));
        assert_eq!(Used::parse("0.520s"), Some(Used::Millis(520)));
        assert_eq!(Used::parse("12.345s"), Some(Used::Millis(12_345)));
        assert_eq!(Used::parse("7s"), Some(Used::Millis(7_000)));
        assert_eq!(Used::parse("-0.001s"), Some(Used::Millis(-1)));
        assert_eq!(Used::parse("1.5s"), Some(Used::Millis(1_500)));
        for bad in [
            "",
            "s",
            "0.s",
            ".5s",
            "1.2",
            "abc",
            "--1s",
            "1e3s",
            "99999999999999999999s",
        ] {
            assert_eq!(Used::parse(bad), None, "{bad}");
        }
        assert_eq!(Used::Millis(-1).to_string(), "-0.001s");
        assert_eq!(Used::Millis(520).to_string(), "0.520s");
        assert_eq!(Used::Millis(520).ago(), Some(Duration::from_millis(520)));
        assert_eq!(Used::Millis(-1).ago(), None);
    }

    #[test]
    fn dp_layers_map_known_names_and_keep_others() {
        assert_eq!(DpLayer::parse("doca"), DpLayer::Doca);
        assert_eq!(DpLayer::parse("dummy").as_str(), "dummy");
        assert_eq!(
            DpLayer::parse("dummy").into_owned(),
            DpLayer::Other("dummy".into())
        );
    }
}
