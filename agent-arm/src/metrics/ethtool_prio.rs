//! Per-priority counters of the uplinks: PFC pause frames, traffic and drops per 802.1p
//! priority, the evidence that lossless RoCE works (`dpuctl roce dcb` judges the same
//! names). mlx5 keeps them only as driver statistics (`ethtool -S`: `rx_prio3_pause`),
//! which no sysfs file or netlink message carries, so they are read through the
//! `SIOCETHTOOL` ioctl, on a live system only (a fixture root has no netdevs to ask).

use dpu_probe::ethtool_stats::EthtoolStat;

/// The per-priority statistics exported, and whether each counts bytes.
const SUFFIXES: [(&str, bool); 6] = [
    ("pause", false),
    ("packets", false),
    ("bytes", true),
    ("discards", false),
    ("buf_discard", false),
    ("cong_discard", false),
];

/// One per-priority counter of a netdev.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrioCounter {
    /// `pause`, `packets`, ...
    pub(crate) what: &'static str,
    /// Whether it counts bytes.
    pub(crate) bytes: bool,
    /// `rx` or `tx`.
    pub(crate) direction: &'static str,
    /// 802.1p priority, 0-7.
    pub(crate) priority: u8,
    pub(crate) value: u64,
}

/// The `{rx,tx}_prio{N}_{what}` statistics among a driver's; others are ignored.
pub(crate) fn priority_counters(stats: &[EthtoolStat]) -> Vec<PrioCounter> {
    stats
        .iter()
        .filter_map(|stat| {
            let (direction, rest) = if let Some(rest) = stat.name.strip_prefix("rx_prio") {
                ("rx", rest)
            } else {
                ("tx", stat.name.strip_prefix("tx_prio")?)
            };
            let (digit, what) = rest.split_once('_')?;
            let priority: u8 = digit.parse().ok().filter(|p| *p < 8)?;
            let (what, bytes) = SUFFIXES.iter().find(|(name, _)| *name == what)?;
            Some(PrioCounter {
                what,
                bytes: *bytes,
                direction,
                priority,
                value: stat.value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(name: &str, value: u64) -> EthtoolStat {
        EthtoolStat {
            name: name.to_owned(),
            value,
        }
    }

    #[test]
    fn only_per_priority_statistics_are_taken() {
        let stats = [
            stat("rx_prio3_pause", 12),
            stat("tx_prio3_bytes", 4096),
            stat("rx_prio3_pause_duration", 99),
            stat("rx_prio9_pause", 1),
            stat("rx_pause_ctrl_phy", 5),
            stat("rx_prio0_discards", 2),
        ];
        let got = priority_counters(&stats);
        assert_eq!(
            got,
            vec![
                PrioCounter {
                    what: "pause",
                    bytes: false,
                    direction: "rx",
                    priority: 3,
                    value: 12
                },
                PrioCounter {
                    what: "bytes",
                    bytes: true,
                    direction: "tx",
                    priority: 3,
                    value: 4096
                },
                PrioCounter {
                    what: "discards",
                    bytes: false,
                    direction: "rx",
                    priority: 0,
                    value: 2
                },
            ]
        );
    }
}
