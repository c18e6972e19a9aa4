//! OVS datapath flows summed by forwarding level and in_port: how much of what a
//! representor sends the eSwitch switches itself, how much tc does in software, and how
//! much reaches the OVS datapath on the Arm cores. Levels are the ones `dpuctl prove
//! switch` judges by (`host/src/prove/switch.rs`), named the same.

use std::collections::BTreeMap;

use dpu_ovs::flow::{parse_dump, DatapathFlow, DpLayer, Offloaded};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// The forwarding level of one flow.
fn level_of(flow: &DatapathFlow<'_>) -> &'static str {
    let offloaded = flow.offloaded == Offloaded::Yes;
    match flow.dp {
        Some(DpLayer::Tc) if offloaded => "hardware",
        Some(DpLayer::Tc) => "tc-software",
        // OVS-DOCA / DPDK full offload reports offloaded:yes on its own layer.
        Some(DpLayer::Doca | DpLayer::Dpdk) if offloaded => "hardware",
        _ => "datapath",
    }
}

/// The sums of one dump. Gauges, not counters: a flow that expires takes its packets
/// with it, so the sums go down without any reset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FlowLevels {
    flows: BTreeMap<&'static str, u64>,
    /// (level, in_port) → (packets, bytes).
    traffic: BTreeMap<(&'static str, String), (u64, u64)>,
}

impl FlowLevels {
    /// Sums a `dpctl/dump-flows -m` text; a line that does not parse fails the whole
    /// dump (a partial sum would read as less traffic than there was).
    pub(crate) fn from_dump(text: &str) -> Result<Self, String> {
        let mut levels = Self::default();
        for level in ["hardware", "tc-software", "datapath"] {
            levels.flows.insert(level, 0);
        }
        for parsed in parse_dump(text) {
            let flow = parsed.map_err(|e| format!("cannot parse dpctl/dump-flows output: {e}"))?;
            let level = level_of(&flow);
            *levels.flows.entry(level).or_default() += 1;
            let in_port = flow.in_port().map(|p| p.to_string()).unwrap_or_default();
            let entry = levels.traffic.entry((level, in_port)).or_default();
            entry.0 = entry.0.saturating_add(flow.packets);
            entry.1 = entry.1.saturating_add(flow.bytes);
        }
        Ok(levels)
    }

    /// `dpu_ovs_flows`, `dpu_ovs_flow_packets` and `dpu_ovs_flow_bytes`.
    pub(crate) fn encode(
        &self,
        encoder: &mut DescriptorEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "dpu_ovs_flows",
            "OVS datapath flows installed now, by forwarding level",
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

    #[test]
    fn flows_are_summed_per_level_and_in_port() {
        let dump = "\
ufid:11111111-2222-3333-4444-555555555555, recirc_id(0),in_port(pf0hpf),eth_type(0x0800), packets:10, bytes:1000, used:0.5s, offloaded:yes, dp:tc, actions:p0
ufid:11111111-2222-3333-4444-555555555556, recirc_id(0),in_port(pf0hpf),eth_type(0x0806), packets:2, bytes:84, used:0.5s, dp:tc, actions:p0
ufid:11111111-2222-3333-4444-555555555557, recirc_id(0),in_port(p0),eth_type(0x0800), packets:5, bytes:500, used:0.5s, dp:ovs, actions:pf0hpf
ufid:11111111-2222-3333-4444-555555555558, recirc_id(0),in_port(pf0hpf),eth_type(0x86dd), packets:1, bytes:100, used:0.5s, offloaded:yes, dp:tc, actions:p0
";
        let levels = FlowLevels::from_dump(dump).expect("parses");
        assert_eq!(levels.flows["hardware"], 2);
        assert_eq!(levels.flows["tc-software"], 1);
        assert_eq!(levels.flows["datapath"], 1);
        assert_eq!(
            levels.traffic[&("hardware", "pf0hpf".to_owned())],
            (11, 1100)
        );
        assert_eq!(levels.traffic[&("datapath", "p0".to_owned())], (5, 500));
        assert!(FlowLevels::from_dump("in_port(, garbage").is_err());
    }
}
