//! OVS datapath flows summed by forwarding level and in_port: how much of what a
//! representor sends the eSwitch switches itself, how much tc does in software, and how
//! much reaches the OVS datapath on the Arm cores. The traffic is placed by the one rule
//! (`dpu_ovs::flow::FlowForwarding`), the same `Switch.ListFlows` reports and `dpuctl prove
//! switch` judges: hardware only where tc's hardware statistics say so; tc traffic without
//! them is `unattributed`.

use std::collections::BTreeMap;

use dpu_ovs::flow::ForwardingLevel;
use dpu_proto::v1;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::ovs::flow_wire::forwarding_of;

/// The label of tc traffic whose hardware share the kernel did not report.
const UNATTRIBUTED: &str = "unattributed";

/// The sums of one flow listing. Gauges, not counters: a flow that expires takes its
/// packets with it, so the sums go down without any reset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FlowLevels {
    /// Flows by the level they are installed at.
    flows: BTreeMap<&'static str, u64>,
    /// (level, in_port) → (packets, bytes).
    traffic: BTreeMap<(&'static str, String), (u64, u64)>,
}

impl FlowLevels {
    /// Sums the flows of `Switch.ListFlows` (tc filters joined, traffic placed by level).
    pub(crate) fn from_flows(flows: &[v1::Flow]) -> Self {
        let mut levels = Self::default();
        for level in ForwardingLevel::ALL {
            levels.flows.insert(level.as_str(), 0);
        }
        for flow in flows {
            let any_in_hw = flow.tc_filters.iter().any(|f| f.in_hw);
            let installed = forwarding_of(flow).installed_at(any_in_hw);
            *levels.flows.entry(installed.as_str()).or_default() += 1;
            let packets = flow.packets_by_level.unwrap_or_default();
            let bytes = flow.bytes_by_level.unwrap_or_default();
            let placed = [
                (
                    ForwardingLevel::Hardware.as_str(),
                    packets.hardware,
                    bytes.hardware,
                ),
                (
                    ForwardingLevel::TcSoftware.as_str(),
                    packets.tc_software,
                    bytes.tc_software,
                ),
                (
                    ForwardingLevel::Datapath.as_str(),
                    packets.datapath,
                    bytes.datapath,
                ),
                (UNATTRIBUTED, packets.unattributed, bytes.unattributed),
            ];
            for (level, packets, bytes) in placed {
                if packets == 0 && bytes == 0 {
                    continue;
                }
                let entry = levels
                    .traffic
                    .entry((level, flow.in_port.clone()))
                    .or_default();
                entry.0 = entry.0.saturating_add(packets);
                entry.1 = entry.1.saturating_add(bytes);
            }
        }
        levels
    }

    /// `dpu_ovs_flows`, `dpu_ovs_flow_packets` and `dpu_ovs_flow_bytes`.
    pub(crate) fn encode(
        &self,
        encoder: &mut DescriptorEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "dpu_ovs_flows",
            "OVS datapath flows installed now, by the level they are installed at (offloaded:yes or an in_hw filter: hardware)",
            None,
            MetricType::Gauge,
        )?;
        for (level, count) in &self.flows {
            ConstGauge::new(*count).encode(metric.encode_family(&[("level", *level)])?)?;
        }
        let packets: fn(&(u64, u64)) -> u64 = |t| t.0;
        let bytes: fn(&(u64, u64)) -> u64 = |t| t.1;
        for (name, what, value_of) in [
            ("dpu_ovs_flow_packets", "Packets", packets),
            ("dpu_ovs_flow_bytes", "Bytes", bytes),
        ] {
            let help = format!(
                "{what} counted by the OVS datapath flows installed now, by level and \
                 in_port (a gauge: expired flows take their counts with them)"
            );
            let mut metric = encoder.encode_descriptor(name, &help, None, MetricType::Gauge)?;
            for ((level, in_port), traffic) in &self.traffic {
                let labels = [("level", *level), ("in_port", in_port.as_str())];
                ConstGauge::new(value_of(traffic)).encode(metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ovs::flow_wire::place_by_level;

    fn flow(in_port: &str, dp: &str, offloaded: v1::OffloadStatus, packets: u64) -> v1::Flow {
        v1::Flow {
            in_port: in_port.to_owned(),
            dp_layer: dp.to_owned(),
            offloaded: offloaded as i32,
            packets,
            bytes: packets * 100,
            ..Default::default()
        }
    }

    fn with_filter(mut flow: v1::Flow, in_hw: bool, hw: Option<u64>) -> v1::Flow {
        let packets = flow.packets;
        flow.tc_filters = vec![v1::TcFilter {
            in_hw,
            actions: vec![v1::TcAction {
                order: 1,
                packets,
                bytes: packets * 100,
                hw_packets: hw.unwrap_or(0),
                hw_bytes: hw.unwrap_or(0) * 100,
                sw_packets: packets - hw.unwrap_or(0),
                sw_bytes: (packets - hw.unwrap_or(0)) * 100,
                hw_stats: hw.is_some(),
                ..Default::default()
            }],
            ..Default::default()
        }];
        flow
    }

    #[test]
    fn traffic_is_summed_per_level_and_in_port_by_the_nics_counts() {
        use v1::OffloadStatus::{NotOffloaded, Offloaded};
        let mut flows = vec![
            with_filter(flow("pf0hpf", "tc", Offloaded, 10), true, Some(10)),
            // in_hw and offloaded:yes, but tc counted every packet in software.
            with_filter(flow("pf0hpf", "tc", Offloaded, 4), true, Some(0)),
            flow("pf0hpf", "tc", NotOffloaded, 2),
            flow("p0", "ovs", NotOffloaded, 5),
            // offloaded:yes with no filter joined: a flag, so unattributed.
            flow("pf0hpf", "tc", Offloaded, 1),
        ];
        place_by_level(&mut flows);
        let levels = FlowLevels::from_flows(&flows);
        assert_eq!(levels.flows["hardware"], 3);
        assert_eq!(levels.flows["tc-software"], 1);
        assert_eq!(levels.flows["datapath"], 1);
        assert_eq!(
            levels.traffic[&("hardware", "pf0hpf".to_owned())],
            (10, 1000)
        );
        assert_eq!(
            levels.traffic[&("tc-software", "pf0hpf".to_owned())],
            (6, 600)
        );
        assert_eq!(
            levels.traffic[&("unattributed", "pf0hpf".to_owned())],
            (1, 100)
        );
        assert_eq!(levels.traffic[&("datapath", "p0".to_owned())], (5, 500));
    }
}
