//! Upcall accounting for `prove switch`: the OVS datapaths' lookup counters
//! (`dpctl/show`, read by the agent as `Counters.Snapshot` source `ovs_datapath`) around
//! each trial. A packet that misses every datapath flow goes up to ovs-vswitchd (an
//! upcall, counted as `lookups_missed`) and is forwarded by userspace on the Arm cores; an
//! upcall the queue drops is `lookups_lost`. Flows installed before a trial take its
//! packets without a miss, and tc (in software or in the NIC) takes them before the OVS
//! datapath sees them at all, so in a trial that proves the offload both stay within the
//! first packets' allowance (issue 31: "missed ≤ new flows + allowance").
//!
//! An agent that cannot read them (ovs-vswitchd out of reach, a datapath without
//! statistics, an agent older than this dpuctl) leaves the lines unformed: INCONCLUSIVE,
//! never met.

use dpu_probe::snapshot::{Sample, Snapshot, Source, SourceError};
use dpu_proto::v1;

use crate::accounting::{Expectation, Rule, Select, Side};
use crate::snapshot_wire::snapshot_from_wire;

/// The counters' names, as the agent reports them (`agent-arm/src/datapath_counters.rs`).
pub const MISSED: &str = "lookups_missed";
/// Upcalls dropped before ovs-vswitchd read them.
pub const LOST: &str = "lookups_lost";

/// The selector for every datapath's lookup counters.
pub fn selector() -> v1::CounterSelector {
    v1::CounterSelector {
        selector: Some(v1::counter_selector::Selector::OvsDatapaths(
            v1::OvsDatapathSelector::default(),
        )),
    }
}

/// The datapath samples of an agent's answer, and its datapath errors (what the agent
/// said when it could not read them).
pub fn from_wire(answer: &v1::CounterSnapshot) -> (Vec<Sample>, Vec<SourceError>) {
    let samples = snapshot_from_wire(answer)
        .samples
        .into_iter()
        .filter(|s| s.key.source == Source::OvsDatapath)
        .collect();
    let errors = answer
        .errors
        .iter()
        .filter(|e| {
            matches!(
                e.selector.as_ref().and_then(|s| s.selector.as_ref()),
                Some(v1::counter_selector::Selector::OvsDatapaths(_))
            )
        })
        .map(|e| SourceError {
            source: Source::OvsDatapath,
            object: "datapaths".to_owned(),
            message: e.message.clone(),
            kind: dpu_probe::snapshot_wire::error_kind_from_wire(e.kind),
        })
        .collect();
    (samples, errors)
}

/// The two lines of a trial of `k` packets: upcalls (`lookups_missed`) and lost upcalls
/// (`lookups_lost`) of every datapath the agent reported `before`, each at most
/// `allowance`.
pub fn lines(k: u64, allowance: u64, before: &Snapshot) -> Vec<Expectation> {
    [
        (
            MISSED,
            "the datapaths sent no packet up to ovs-vswitchd (upcalls)",
            "a packet that misses every datapath flow is an upcall: ovs-vswitchd forwards it \
             in userspace, on the Arm cores",
            "packets missed the datapath flows and were forwarded by ovs-vswitchd: the flows \
             were not installed, or were evicted during the trial (flow limit, revalidation)",
        ),
        (
            LOST,
            "no upcall was lost",
            "an upcall dropped before ovs-vswitchd read it is a packet nobody forwarded",
            "upcalls were dropped: ovs-vswitchd could not keep up with the packets that \
             missed the datapath flows",
        ),
    ]
    .into_iter()
    .map(|(counter, name, why, if_failed)| {
        let objects: Vec<String> = before
            .samples
            .iter()
            .filter(|s| s.key.source == Source::OvsDatapath && s.key.counter == counter)
            .map(|s| s.key.object.clone())
            .collect();
        let unformed = objects.is_empty().then(|| {
            let said: Vec<&str> = before
                .errors
                .iter()
                .filter(|e| e.source == Source::OvsDatapath)
                .map(|e| e.message.as_str())
                .collect();
            if said.is_empty() {
                "the agent reports no datapath lookup counters (an agent older than this \
                 dpuctl, or no datapath)"
                    .to_owned()
            } else {
                format!(
                    "the agent cannot read the datapaths' lookups: {}",
                    said.join("; ")
                )
            }
        });
        Expectation {
            name: name.to_owned(),
            select: Select {
                side: Side::Dpu,
                source: Source::OvsDatapath,
                objects,
                counter: counter.to_owned(),
            },
            rule: Rule::AtMost(allowance),
            why: why.to_owned(),
            if_failed: if_failed.to_owned(),
            traffic: k,
            waiver: None,
            unformed,
        }
    })
    .collect()
}
