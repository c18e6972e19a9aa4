//! The one rule for where a datapath flow's traffic was forwarded: by the eSwitch
//! (hardware), by tc in the Arm kernel's software, or by the OVS datapath on the Arm cores.
//! The agent places every flow's packets and bytes by it, for `Switch.ListFlows` (which
//! `dpuctl prove switch` judges) and for `/metrics` alike, so the two never disagree.
//!
//! Traffic is placed by what counted it, never by a flag: OVS prints `offloaded:yes` for a
//! `dp:tc` flow whenever tc's state is not "in software only", including when it is
//! undefined (`lib/netdev-offload-tc.c`, `parse_tc_flower_to_attrs()`), and a tc filter can be
//! `in_hw` while its packets go through software (a filter without `skip_sw`, mlx5's
//! slow-path encap rules). For a `dp:tc` flow the hardware share is tc's own hardware
//! statistics (`TCA_STATS_BASIC_HW`, per action); without them the traffic is
//! [`ByLevel::unattributed`]: tc forwarded it, in the NIC or not, nobody can say.

use super::stats::{DpLayer, Offloaded};

/// Where traffic was forwarded, slowest first (so `>=` means "as good or better").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ForwardingLevel {
    /// The OVS kernel (or userspace) datapath: the Arm CPU switched it.
    Datapath,
    /// tc flower rules run in software: still the CPU, through tc.
    TcSoftware,
    /// The NIC's eSwitch, as its own counters say.
    Hardware,
}

impl ForwardingLevel {
    /// Every level, best first.
    pub const ALL: [Self; 3] = [Self::Hardware, Self::TcSoftware, Self::Datapath];

    /// The name reports and metric labels use.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Hardware => "hardware",
            Self::TcSoftware => "tc-software",
            Self::Datapath => "datapath",
        }
    }
}

/// tc's split of one quantity (packets or bytes) of the filters that hold one flow: for
/// each filter, its first action's counts (every packet the filter matched reaches it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcShares {
    /// What the NIC counted (`TCA_STATS_BASIC_HW`).
    pub hardware: u64,
    /// What tc counted in software (total minus hardware).
    pub software: u64,
}

impl TcShares {
    /// The shares of a flow's filters, each given as its first action's `(hardware,
    /// software)`, or `None` where the kernel gave no hardware share. `None` when the flow
    /// has no filter, or when any filter's hardware share is unknown: a partial split would
    /// read the unknown part as software or hardware.
    pub fn of_filters(filters: impl IntoIterator<Item = Option<(u64, u64)>>) -> Option<Self> {
        let mut shares = Self::default();
        let mut any = false;
        for filter in filters {
            let (hardware, software) = filter?;
            shares.hardware = shares.hardware.saturating_add(hardware);
            shares.software = shares.software.saturating_add(software);
            any = true;
        }
        any.then_some(shares)
    }
}

/// One quantity of a flow (or a sum of flows) by the level that forwarded it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByLevel {
    /// Counted by the NIC.
    pub hardware: u64,
    /// Counted by tc in software.
    pub tc_software: u64,
    /// Forwarded by the OVS datapath.
    pub datapath: u64,
    /// Forwarded by tc, with no hardware statistics to say whether in the NIC or in
    /// software. Never hardware: a proof that needs hardware cannot count it.
    pub unattributed: u64,
}

/// What the rule needs of one flow: its layer (`dp:`) and its `offloaded:` state.
#[derive(Debug, Clone)]
pub struct FlowForwarding<'a> {
    /// `dp:`; `None` when the line did not say.
    pub layer: Option<DpLayer<'a>>,
    /// `offloaded:`.
    pub offloaded: Offloaded,
}

impl FlowForwarding<'_> {
    /// Where the flow's `total` (its `packets:` or `bytes:`) was forwarded, given tc's
    /// split of the same quantity ([`TcShares::of_filters`]) for a `dp:tc` flow.
    ///
    /// - `dp:tc` with tc's hardware statistics: the NIC's count is hardware, the rest is
    ///   tc in software. Without them: a flow OVS says is not offloaded is tc in software
    ///   (certain: not in the NIC); any other is unattributed.
    /// - `dp:doca` / `dp:dpdk` with `offloaded:yes`: hardware. OVS-DOCA and rte_flow count
    ///   these flows in the NIC (UNVERIFIED on a BlueField: `ovs-appctl dpctl/dump-flows -m`
    ///   against `ethtool -S p0` during traffic settles it). `offloaded:partial` (matching in
    ///   hardware, actions in software) is the datapath.
    /// - anything else: the datapath.
    pub fn place(&self, total: u64, tc: Option<TcShares>) -> ByLevel {
        let mut out = ByLevel::default();
        match self.layer {
            Some(DpLayer::Tc) => match (tc, self.offloaded) {
                (Some(shares), _) => {
                    out.hardware = shares.hardware;
                    out.tc_software = shares.software;
                }
                (None, Offloaded::No) => out.tc_software = total,
                (None, _) => out.unattributed = total,
            },
            Some(DpLayer::Doca | DpLayer::Dpdk) if self.offloaded == Offloaded::Yes => {
                out.hardware = total;
            }
            _ => out.datapath = total,
        }
        out
    }

    /// Where the flow is installed, for counting flows (not traffic): `offloaded:yes` or an
    /// `in_hw` filter places a `dp:tc` flow in hardware. A flag is all a flow with no
    /// packets has; traffic is never placed from here.
    pub fn installed_at(&self, any_filter_in_hw: bool) -> ForwardingLevel {
        let offloaded = self.offloaded == Offloaded::Yes;
        match self.layer {
            Some(DpLayer::Tc) if offloaded || any_filter_in_hw => ForwardingLevel::Hardware,
            Some(DpLayer::Tc) => ForwardingLevel::TcSoftware,
            Some(DpLayer::Doca | DpLayer::Dpdk) if offloaded => ForwardingLevel::Hardware,
            _ => ForwardingLevel::Datapath,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(offloaded: Offloaded, total: u64, shares: Option<(u64, u64)>) -> ByLevel {
        FlowForwarding {
            layer: Some(DpLayer::Tc),
            offloaded,
        }
        .place(
            total,
            shares.map(|(hardware, software)| TcShares { hardware, software }),
        )
    }

    #[test]
    fn tc_traffic_is_placed_by_the_nics_own_count_not_the_flag() {
        // offloaded:yes and in_hw, yet every packet went through software (no skip_sw).
        let placed = tc(Offloaded::Yes, 500, Some((0, 500)));
        assert_eq!((placed.hardware, placed.tc_software), (0, 500));
        let placed = tc(Offloaded::Yes, 500, Some((480, 20)));
        assert_eq!((placed.hardware, placed.tc_software), (480, 20));
    }

    #[test]
    fn without_hardware_statistics_an_offloaded_flag_proves_nothing() {
        let placed = tc(Offloaded::Yes, 500, None);
        assert_eq!(placed.hardware, 0);
        assert_eq!(placed.unattributed, 500);
        // Not offloaded is certain: tc in software.
        assert_eq!(tc(Offloaded::No, 500, None).tc_software, 500);
        // OVS's own "undefined" state prints as neither: unattributed too.
        assert_eq!(tc(Offloaded::Unknown, 7, None).unattributed, 7);
    }

    #[test]
    fn shares_need_every_filters_hardware_share() {
        assert_eq!(
            TcShares::of_filters([Some((10, 2)), Some((5, 0))]),
            Some(TcShares {
                hardware: 15,
                software: 2
            })
        );
        assert_eq!(TcShares::of_filters([Some((10, 2)), None]), None);
        assert_eq!(TcShares::of_filters([]), None);
    }

    #[test]
    fn other_layers() {
        let place = |layer: DpLayer<'static>, offloaded| {
            FlowForwarding {
                layer: Some(layer),
                offloaded,
            }
            .place(9, None)
        };
        assert_eq!(place(DpLayer::Doca, Offloaded::Yes).hardware, 9);
        assert_eq!(place(DpLayer::Dpdk, Offloaded::Partial).datapath, 9);
        assert_eq!(place(DpLayer::Ovs, Offloaded::No).datapath, 9);
        let unknown = FlowForwarding {
            layer: None,
            offloaded: Offloaded::Yes,
        };
        assert_eq!(unknown.place(9, None).datapath, 9);
        assert_eq!(unknown.installed_at(false), ForwardingLevel::Datapath);
    }

    #[test]
    fn installed_level_counts_flows_by_their_flags() {
        let flow = FlowForwarding {
            layer: Some(DpLayer::Tc),
            offloaded: Offloaded::No,
        };
        assert_eq!(flow.installed_at(true), ForwardingLevel::Hardware);
        assert_eq!(flow.installed_at(false), ForwardingLevel::TcSoftware);
        assert!(ForwardingLevel::Hardware > ForwardingLevel::TcSoftware);
    }
}
