//! `dpu.v1` counter messages to and from the probe's snapshot model, so snapshots taken by
//! the agent and by `dpuctl` itself are diffed by the same code. The mapping itself is the
//! one the agent encodes with (`dpu_probe::snapshot::wire`); this module adds what only
//! the host needs: the `volume[:ID]` selector and unit names for tables.

use dpu_probe::counters::CounterSelector;
use dpu_probe::snapshot::Unit;
use dpu_proto::v1::{self, counter_selector::Selector};

pub use dpu_probe::snapshot::wire::{selector_to_wire, snapshot_from_wire};

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
