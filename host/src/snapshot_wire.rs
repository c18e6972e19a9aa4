//! `dpu.v1` counter messages to and from the probe's snapshot model, so snapshots taken by
//! the agent and by `dpuctl` itself are diffed by the same code. The mapping itself is the
//! one the agent encodes with (`dpu_probe::snapshot_wire`); this module adds what only
//! the host needs: the `volume[:ID]` selector and unit names for tables.

use dpu_probe::counters::CounterSelector;
use dpu_probe::snapshot::{SourceErrorKind, Unit};
use dpu_probe::snapshot_wire::error_kind_from_wire;
use dpu_proto::v1::{self, counter_selector::Selector};

pub use dpu_probe::snapshot_wire::{selector_to_wire, snapshot_from_wire};

/// What `dpuctl dpu counters -s` accepts: the probe's selectors, which the agent reads
/// from sysfs and netlink, plus `volume[:ID]`, which its storage backend answers, and
/// `datapath[:NAME]`, which its OVS backend answers (ovs-vswitchd's `dpctl/show`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSelector {
    /// A selector the agent's probe reads.
    Probe(CounterSelector),
    /// One volume (`r0n1` or `volumes/r0n1`), or every volume the agent manages.
    Volume(Option<String>),
    /// One OVS datapath's lookups (`system@ovs-system`), or every datapath's.
    Datapath(Option<String>),
}

impl std::str::FromStr for AgentSelector {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            None if text == "volume" => Ok(Self::Volume(None)),
            Some(("volume", id)) if !id.is_empty() => Ok(Self::Volume(Some(
                id.strip_prefix("volumes/").unwrap_or(id).to_owned(),
            ))),
            Some(("volume", _)) => Err(format!("{text:?}: volume: needs an id, e.g. volume:r0n1")),
            None if text == "datapath" => Ok(Self::Datapath(None)),
            Some(("datapath", name)) if !name.is_empty() => Ok(Self::Datapath(Some(
                name.strip_prefix("datapaths/").unwrap_or(name).to_owned(),
            ))),
            Some(("datapath", _)) => Err(format!(
                "{text:?}: datapath: needs a name, e.g. datapath:system@ovs-system"
            )),
            _ => text
                .parse::<CounterSelector>()
                .map(Self::Probe)
                .map_err(|e| e.to_string()),
        }
    }
}

impl AgentSelector {
    /// The selector as the agent's API takes it.
    pub fn to_wire(&self) -> v1::CounterSelector {
        match self {
            Self::Probe(selector) => selector_to_wire(selector),
            Self::Volume(id) => v1::CounterSelector {
                selector: Some(Selector::Volumes(v1::VolumeSelector {
                    volume: id
                        .as_ref()
                        .map(|id| format!("volumes/{id}"))
                        .unwrap_or_default(),
                })),
            },
            Self::Datapath(name) => v1::CounterSelector {
                selector: Some(Selector::OvsDatapaths(v1::OvsDatapathSelector {
                    datapath: name.clone().unwrap_or_default(),
                })),
            },
        }
    }
}

impl std::fmt::Display for AgentSelector {
    /// The command-line form, as `-s` takes it: `netdev:pf0hpf`, `volume:r0n1`,
    /// `datapath:system@ovs-system`, so an error can quote the selector the user wrote.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Probe(selector) => std::fmt::Display::fmt(selector, f),
            Self::Volume(None) => f.write_str("volume"),
            Self::Volume(Some(id)) => write!(f, "volume:{id}"),
            Self::Datapath(None) => f.write_str("datapath"),
            Self::Datapath(Some(name)) => write!(f, "datapath:{name}"),
        }
    }
}

impl AgentSelector {
    /// Whether the selector names one object (`netdev:p0`, `rdma:mlx5_0/1`, `tc:pf0hpf`)
    /// rather than every object of a source: only such a selector can name nothing.
    pub fn names_object(&self) -> bool {
        match self {
            Self::Probe(CounterSelector::Rdma { device, .. }) => device.is_some(),
            Self::Probe(CounterSelector::Netdev { ifname }) => ifname.is_some(),
            Self::Probe(CounterSelector::Tc { .. }) => true,
            Self::Probe(CounterSelector::Block { device }) => device.is_some(),
            Self::Volume(id) => id.is_some(),
            Self::Datapath(name) => name.is_some(),
        }
    }

    /// The wire sources (`CounterSample.source`) this selector's samples carry.
    pub fn sources(&self) -> &'static [&'static str] {
        match self {
            Self::Probe(CounterSelector::Rdma { .. }) => &["rdma", "rdma_hw"],
            Self::Probe(CounterSelector::Netdev { .. }) => &["netdev", "netdev_offload"],
            Self::Probe(CounterSelector::Tc { .. }) => &["tc"],
            Self::Probe(CounterSelector::Block { .. }) => &["block"],
            Self::Volume(_) => &["volume"],
            Self::Datapath(_) => &["ovs_datapath"],
        }
    }

    /// The selector for every object of the same kind, whose answer says what exists when
    /// this one names nothing: `netdev` for `netdev:X` and for `tc:X` (tc needs a
    /// netdev), `rdma` for `rdma:D[/P]`, `block`, `volume`, `datapath`.
    pub fn catch_all(&self) -> Self {
        match self {
            Self::Probe(CounterSelector::Rdma { .. }) => Self::Probe(CounterSelector::Rdma {
                device: None,
                port: None,
            }),
            Self::Probe(CounterSelector::Netdev { .. } | CounterSelector::Tc { .. }) => {
                Self::Probe(CounterSelector::Netdev { ifname: None })
            }
            Self::Probe(CounterSelector::Block { .. }) => {
                Self::Probe(CounterSelector::Block { device: None })
            }
            Self::Volume(_) => Self::Volume(None),
            Self::Datapath(_) => Self::Datapath(None),
        }
    }
}

/// The selectors among `asked` that name nothing: the agent answered each with a
/// `SOURCE_ERROR_KIND_NOT_FOUND` error under that very selector. A catch-all never names
/// nothing (an empty source is an answer), and an error of any other kind is a read that
/// failed, not a typo: in particular an agent that predates the kind sends UNSPECIFIED,
/// which never counts, so dpuctl treats its answers as it always did.
pub fn names_nothing<'a>(
    asked: &'a [AgentSelector],
    errors: &[v1::SourceError],
) -> Vec<&'a AgentSelector> {
    let mut out: Vec<&AgentSelector> = Vec::new();
    for selector in asked.iter().filter(|s| s.names_object()) {
        let wire = selector.to_wire();
        let missing = errors.iter().any(|e| {
            error_kind_from_wire(e.kind) == SourceErrorKind::NotFound
                && e.selector.as_ref() == Some(&wire)
        });
        if missing && !out.contains(&selector) {
            out.push(selector);
        }
    }
    out
}

/// The objects a snapshot's samples cover, by the short names `-s` takes after the
/// colon (`pf0hpf`, `mlx5_0`, `mlx5_0/1`, `nvme0n1`, `r0n1`, `system@ovs-system`),
/// sorted and each once: what a selector that named nothing could have named.
/// Only samples of `of`'s own sources count: an answer may carry other sources too (an
/// agent adds its default sources beside a datapath selector).
pub fn object_names(samples: &[v1::CounterSample], of: &AgentSelector) -> Vec<String> {
    let sources = of.sources();
    let mut names: Vec<String> = samples
        .iter()
        .filter(|s| sources.contains(&s.source.as_str()))
        .map(|s| {
            let rest = s
                .object
                .split_once('/')
                .map_or(s.object.as_str(), |(_, r)| r);
            rest.replacen("/ports/", "/", 1)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Unit names for tables.
pub fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "bytes",
        Unit::Packets => "packets",
        Unit::Operations => "ops",
        Unit::Events => "events",
        Unit::Milliseconds => "ms",
        Unit::Ticks => "ticks",
        _ => "-",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(text: &str) -> AgentSelector {
        text.parse().expect(text)
    }

    fn error(selector: &AgentSelector, kind: v1::SourceErrorKind) -> v1::SourceError {
        v1::SourceError {
            selector: Some(selector.to_wire()),
            message: format!("{selector}: something"),
            kind: kind as i32,
        }
    }

    #[test]
    fn only_a_named_object_the_agent_says_is_not_found_names_nothing() {
        let asked = [
            sel("netdev:p0"),
            sel("netdev:nosuch"),
            sel("rdma:mlx5_0/9"),
            sel("netdev:pf0vf0"),
            sel("netdev"),
            sel("volume:r9n1"),
        ];
        let errors = [
            error(&asked[1], v1::SourceErrorKind::NotFound),
            error(&asked[2], v1::SourceErrorKind::NotFound),
            // Exists, but a counter could not be read: not a typo.
            error(&asked[3], v1::SourceErrorKind::Unreadable),
            // A catch-all is never "nothing", whatever the agent says.
            error(&asked[4], v1::SourceErrorKind::NotFound),
            // An agent that predates the kind: as before, printed, never a usage error.
            error(&asked[5], v1::SourceErrorKind::Unspecified),
        ];
        let missing: Vec<String> = names_nothing(&asked, &errors)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(missing, ["netdev:nosuch", "rdma:mlx5_0/9"]);
        // A NOT_FOUND under another selector (the device of a port asked for) is not this
        // selector's.
        let other = [error(&sel("rdma:mlx5_0"), v1::SourceErrorKind::NotFound)];
        assert!(names_nothing(&[sel("rdma:mlx5_0/1")], &other).is_empty());
        // An unknown kind from a newer agent is not "not found" either.
        let mut newer = error(&asked[1], v1::SourceErrorKind::NotFound);
        newer.kind = 99;
        assert!(names_nothing(&asked, &[newer]).is_empty());
    }

    #[test]
    fn every_selector_has_a_catch_all_and_prints_as_typed() {
        for (text, all) in [
            ("netdev:pf0hpf", "netdev"),
            ("tc:pf0hpf", "netdev"),
            ("rdma:mlx5_0/1", "rdma"),
            ("rdma:mlx5_0", "rdma"),
            ("block:nvme9n1", "block"),
            ("volume:r0n1", "volume"),
            ("datapath:system@ovs-system", "datapath"),
        ] {
            let s = sel(text);
            assert_eq!(s.to_string(), text);
            assert!(s.names_object(), "{text}");
            assert_eq!(s.catch_all().to_string(), all, "{text}");
            assert!(!s.catch_all().names_object(), "{all}");
        }
        assert_eq!(sel("volume:volumes/r0n1").to_string(), "volume:r0n1");
    }

    #[test]
    fn objects_are_listed_by_the_names_a_selector_takes() {
        let sample = |source: &str, object: &str| v1::CounterSample {
            source: source.to_owned(),
            object: object.to_owned(),
            ..Default::default()
        };
        let samples = [
            sample("netdev", "netdevs/pf0hpf"),
            sample("netdev", "netdevs/p0"),
            sample("netdev_offload", "netdevs/p0"),
            sample("rdma", "rdmaDevices/mlx5_0/ports/1"),
            sample("rdma_hw", "rdmaDevices/mlx5_0"),
            sample("ovs_datapath", "datapaths/system@ovs-system"),
        ];
        assert_eq!(object_names(&samples, &sel("netdev")), ["p0", "pf0hpf"]);
        assert_eq!(object_names(&samples, &sel("rdma")), ["mlx5_0", "mlx5_0/1"]);
        // An answer that carries other sources beside the datapaths lists only those.
        assert_eq!(
            object_names(&samples, &sel("datapath")),
            ["system@ovs-system"]
        );
    }
}
