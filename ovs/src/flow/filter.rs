//! The `type=` filter of `ovs-appctl dpctl/dump-flows`, with OVS's exact semantics, so the
//! agent can either pass `type=` through to OVS or apply it to a dump it already has.

use std::fmt;
use std::str::FromStr;

use super::error::DumpTypeError;
use super::line::DatapathFlow;
use super::stats::{DpLayer, Offloaded};

/// One element of a `type=` list (OVS `lib/dpctl.c` `populate_dump_types()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DumpType {
    /// `ovs`: flows on the `ovs` layer (kernel or userspace software datapath).
    Ovs,
    /// `tc`: flows on the `tc` layer, in hardware or not.
    Tc,
    /// `dpdk`: flows on the `dpdk` layer.
    Dpdk,
    /// `offloaded`: offloaded and not on the `ovs` layer (`offloaded:yes`).
    Offloaded,
    /// `non-offloaded`: not offloaded at all (no `offloaded:` on a verbose line).
    NonOffloaded,
    /// `partially-offloaded`: offloaded on the `ovs` layer (`offloaded:partial`).
    PartiallyOffloaded,
    /// `all`: every flow (also the default when no `type=` is given).
    All,
}

impl DumpType {
    /// Every type, in the order OVS documents them.
    pub const ALL: [Self; 7] = [
        Self::Ovs,
        Self::Tc,
        Self::Dpdk,
        Self::Offloaded,
        Self::NonOffloaded,
        Self::PartiallyOffloaded,
        Self::All,
    ];

    /// The name `type=` takes.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ovs => "ovs",
            Self::Tc => "tc",
            Self::Dpdk => "dpdk",
            Self::Offloaded => "offloaded",
            Self::NonOffloaded => "non-offloaded",
            Self::PartiallyOffloaded => "partially-offloaded",
            Self::All => "all",
        }
    }

    /// Whether `flow` passes this one type, `None` when the line lacks what it takes to
    /// tell (a terse dump, without `-m`, prints neither `dp:` nor `offloaded:`).
    ///
    /// Mirrors `flow_passes_type_filter()`: layer types compare `dp:`; `offloaded` needs an
    /// offload on a layer other than `ovs`; `partially-offloaded` an offload on `ovs`.
    pub fn matches(self, flow: &DatapathFlow<'_>) -> Option<bool> {
        let layer_is = |want: &DpLayer<'_>| flow.dp.as_ref().map(|dp| dp == want);
        let offloaded = match flow.offloaded {
            Offloaded::Yes | Offloaded::Partial => Some(true),
            Offloaded::No => Some(false),
            Offloaded::Unknown => None,
        };
        match self {
            Self::All => Some(true),
            Self::Ovs => layer_is(&DpLayer::Ovs),
            Self::Tc => layer_is(&DpLayer::Tc),
            Self::Dpdk => layer_is(&DpLayer::Dpdk),
            Self::NonOffloaded => offloaded.map(|o| !o),
            Self::Offloaded => and(offloaded, layer_is(&DpLayer::Ovs).map(|ovs| !ovs)),
            Self::PartiallyOffloaded => and(offloaded, layer_is(&DpLayer::Ovs)),
        }
    }
}

/// Three-valued AND: false wins over unknown.
fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

impl FromStr for DumpType {
    type Err = DumpTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| DumpTypeError {
                value: s.to_owned(),
            })
    }
}

impl fmt::Display for DumpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `type=` list: a flow passes when it passes any listed type (OVS ORs them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeFilter {
    types: Vec<DumpType>,
}

impl TypeFilter {
    /// A filter of these types. An empty list passes nothing, exactly like OVS given an
    /// empty `type=`; no filter at all is [`TypeFilter::default`] (`all`).
    pub fn new(types: impl IntoIterator<Item = DumpType>) -> Self {
        Self {
            types: types.into_iter().collect(),
        }
    }

    /// The listed types.
    pub fn types(&self) -> &[DumpType] {
        &self.types
    }

    /// The argument to pass to `dpctl/dump-flows` (`type=offloaded,tc`); `None` when the
    /// filter contains `all`, so no argument is needed.
    pub fn to_arg(&self) -> Option<String> {
        if self.types.contains(&DumpType::All) {
            return None;
        }
        let names: Vec<_> = self.types.iter().map(|t| t.as_str()).collect();
        Some(format!("type={}", names.join(",")))
    }

    /// Whether `flow` passes: `Some(true)` if any type matches, `Some(false)` if every type
    /// rejects it, `None` if the line lacks `dp:`/`offloaded:` to tell (re-dump with `-m`).
    pub fn matches(&self, flow: &DatapathFlow<'_>) -> Option<bool> {
        let mut unknown = false;
        for t in &self.types {
            match t.matches(flow) {
                Some(true) => return Some(true),
                Some(false) => {}
                None => unknown = true,
            }
        }
        if unknown {
            None
        } else {
            Some(false)
        }
    }
}

impl Default for TypeFilter {
    /// `all`, what `dpctl/dump-flows` does without `type=`.
    fn default() -> Self {
        Self::new([DumpType::All])
    }
}

impl FromStr for TypeFilter {
    type Err = DumpTypeError;

    /// Parses the text after `type=` (with or without the `type=`), a comma list, the way
    /// OVS does: one trailing comma is fine (`tc,`), an empty element elsewhere
    /// (`tc,,ovs`) is an error, and an empty list passes nothing.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.strip_prefix("type=").unwrap_or(s);
        if s.is_empty() {
            return Ok(Self::new([]));
        }
        let body = s.strip_suffix(',').unwrap_or(s);
        body.split(',')
            .map(DumpType::from_str)
            .collect::<Result<Vec<_>, _>>()
            .map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(line: &str) -> DatapathFlow<'_> {
        DatapathFlow::parse(line).expect("test line parses")
    }

    const TAIL: &str = "packets:1, bytes:64, used:0.100s";

    #[test]
    fn each_type_follows_ovs() {
        let hw = format!("in_port(1), {TAIL}, offloaded:yes, dp:tc, actions:2");
        let tc_sw = format!("in_port(1), {TAIL}, dp:tc, actions:2");
        let partial = format!("in_port(1), {TAIL}, offloaded:partial, dp:ovs, actions:2");
        let ovs = format!("in_port(1), {TAIL}, dp:ovs, actions:2");
        let doca = format!("in_port(1), {TAIL}, offloaded:yes, dp:doca, actions:2");
        let terse = format!("in_port(1), {TAIL}, actions:2");
        let (hw, tc_sw, partial, ovs, doca, terse) = (
            flow(&hw),
            flow(&tc_sw),
            flow(&partial),
            flow(&ovs),
            flow(&doca),
            flow(&terse),
        );
        let check = |t: DumpType, expect: [Option<bool>; 6]| {
            let got = [&hw, &tc_sw, &partial, &ovs, &doca, &terse].map(|f| t.matches(f));
            assert_eq!(got, expect, "type={t}");
        };
        let (y, n, u) = (Some(true), Some(false), None);
        check(DumpType::Offloaded, [y, n, n, n, y, u]);
        check(DumpType::NonOffloaded, [n, y, n, y, n, u]);
        check(DumpType::PartiallyOffloaded, [n, n, y, n, n, u]);
        check(DumpType::Tc, [y, y, n, n, n, u]);
        check(DumpType::Ovs, [n, n, y, y, n, u]);
        check(DumpType::Dpdk, [n, n, n, n, n, u]);
        check(DumpType::All, [y, y, y, y, y, y]);
    }

    #[test]
    fn lists_parse_print_and_or_together() {
        let f: TypeFilter = "type=partially-offloaded,tc".parse().expect("valid list");
        assert_eq!(f.types(), [DumpType::PartiallyOffloaded, DumpType::Tc]);
        assert_eq!(f.to_arg().as_deref(), Some("type=partially-offloaded,tc"));
        let tc_sw = flow("in_port(1), packets:0, bytes:0, used:never, dp:tc, actions:2");
        assert_eq!(f.matches(&tc_sw), Some(true));
        assert_eq!("all".parse::<TypeFilter>().map(|f| f.to_arg()), Ok(None));
        let none: TypeFilter = "type=".parse().expect("empty list is valid in OVS");
        assert_eq!(
            (none.to_arg().as_deref(), none.matches(&tc_sw)),
            (Some("type="), Some(false))
        );
        assert_eq!(TypeFilter::default().matches(&tc_sw), Some(true));
        for bad in ["tc,,ovs", ",", ",tc"] {
            let err = bad.parse::<TypeFilter>().expect_err("empty element");
            assert_eq!(err.value, "", "{bad}");
        }
        assert_eq!(
            "tc,".parse::<TypeFilter>().map(|f| f.to_arg()),
            Ok(Some("type=tc".into()))
        );
        let err = "offload".parse::<TypeFilter>().expect_err("unknown type");
        assert!(err.to_string().contains("(offload)"), "{err}");
    }
}
