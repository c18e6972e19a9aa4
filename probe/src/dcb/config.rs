//! What `DCB_CMD_IEEE_GET` says about one interface, decoded: the ETS, PFC and APP
//! managed objects of IEEE 802.1Qaz as plain data, so the lossless-RoCE checks judge
//! values rather than bytes (and tests build them from canned answers).

/// `IEEE_8021QAZ_TSA_STRICT`: strict priority.
pub const TSA_STRICT: u8 = 0;
/// `IEEE_8021QAZ_TSA_CB_SHAPER`: credit-based shaper.
pub const TSA_CB_SHAPER: u8 = 1;
/// `IEEE_8021QAZ_TSA_ETS`: enhanced transmission selection (a bandwidth share).
pub const TSA_ETS: u8 = 2;
/// `IEEE_8021QAZ_TSA_VENDOR`: vendor specific (mlx5's default before ETS is configured).
pub const TSA_VENDOR: u8 = 255;
/// `IEEE_8021QAZ_APP_SEL_DSCP`: an APP entry mapping a DSCP value to a priority.
pub const APP_SEL_DSCP: u8 = 5;

/// The DCB configuration of one interface (`dcb ets show`, `dcb pfc show`, `dcb app show`
/// in one answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcbConfig {
    /// `DCB_ATTR_IFNAME` of the answer: the interface it describes.
    pub ifname: String,
    /// `DCB_ATTR_IEEE_ETS`; `None` when the driver has no `ieee_getets`.
    pub ets: Option<IeeeEts>,
    /// `DCB_ATTR_IEEE_PFC`; `None` when the driver has no `ieee_getpfc`.
    pub pfc: Option<IeeePfc>,
    /// `DCB_ATTR_IEEE_APP_TABLE`: the APP entries, in kernel order (empty when none).
    pub apps: Vec<DcbApp>,
}

/// `struct ieee_ets`: bandwidth per traffic class and which class each priority uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IeeeEts {
    /// `willing`: whether the port accepts the peer's configuration (DCBX).
    pub willing: u8,
    /// `ets_cap`: how many traffic classes the port supports.
    pub ets_cap: u8,
    /// `cbs`: credit-based shaper supported.
    pub cbs: u8,
    /// `tc_tx_bw`: the transmit bandwidth share (percent) of each traffic class.
    pub tc_tx_bw: [u8; 8],
    /// `tc_rx_bw`: the receive share of each traffic class.
    pub tc_rx_bw: [u8; 8],
    /// `tc_tsa`: each class's transmission selection algorithm (`TSA_*`).
    pub tc_tsa: [u8; 8],
    /// `prio_tc`: the traffic class of each priority (index: priority 0..7).
    pub prio_tc: [u8; 8],
    /// `tc_reco_bw`: the recommended shares (ETS recommendation TLV).
    pub tc_reco_bw: [u8; 8],
    /// `tc_reco_tsa`: the recommended algorithms.
    pub tc_reco_tsa: [u8; 8],
    /// `reco_prio_tc`: the recommended priority → class map.
    pub reco_prio_tc: [u8; 8],
}

/// `struct ieee_pfc`: which priorities are lossless (pause per priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IeeePfc {
    /// `pfc_cap`: how many priorities may have PFC at once.
    pub pfc_cap: u8,
    /// `pfc_en`: bit `p` set when PFC is enabled on priority `p`.
    pub pfc_en: u8,
    /// `mbc`: MACsec bypass capability.
    pub mbc: u8,
    /// `delay`: the allowance for the link's round trip, in bits.
    pub delay: u16,
    /// `requests`: PFC frames sent, per priority.
    pub requests: [u64; 8],
    /// `indications`: PFC frames received, per priority.
    pub indications: [u64; 8],
}

/// `struct dcb_app`: one APP table entry (selector, protocol → priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcbApp {
    /// `selector`: what `protocol` is (`APP_SEL_DSCP`: a DSCP value).
    pub selector: u8,
    /// `priority`: the 802.1p priority the matching traffic gets.
    pub priority: u8,
    /// `protocol`: an EtherType, port number or DSCP value, per `selector`.
    pub protocol: u16,
}

impl IeeePfc {
    /// The priorities PFC is enabled on, ascending.
    pub fn enabled_priorities(&self) -> Vec<u8> {
        (0..8u8).filter(|p| self.pfc_en & (1 << p) != 0).collect()
    }

    /// Whether PFC is enabled on `priority` (0..7).
    pub fn is_enabled(&self, priority: u8) -> bool {
        priority < 8 && self.pfc_en & (1 << priority) != 0
    }
}

impl DcbConfig {
    /// The DSCP → priority entries of the APP table, as (DSCP, priority). mlx5 keeps one
    /// per DSCP value (64) while its trust state is DSCP, and none under PCP trust.
    pub fn dscp_entries(&self) -> Vec<(u16, u8)> {
        self.apps
            .iter()
            .filter(|a| a.selector == APP_SEL_DSCP)
            .map(|a| (a.protocol, a.priority))
            .collect()
    }

    /// Whether the port classifies by DSCP ("trust dscp"): the APP table has DSCP
    /// entries. Otherwise the port trusts the VLAN PCP.
    pub fn trusts_dscp(&self) -> bool {
        self.apps.iter().any(|a| a.selector == APP_SEL_DSCP)
    }

    /// The priority `dscp` maps to through the APP table, when it has an entry for it.
    pub fn dscp_priority(&self, dscp: u8) -> Option<u8> {
        self.apps
            .iter()
            .find(|a| a.selector == APP_SEL_DSCP && a.protocol == u16::from(dscp))
            .map(|a| a.priority)
    }
}

/// A TSA value's name as `dcb ets show` prints it (`strict`, `cbs`, `ets`, `vendor`).
pub fn tsa_name(tsa: u8) -> &'static str {
    match tsa {
        TSA_STRICT => "strict",
        TSA_CB_SHAPER => "cbs",
        TSA_ETS => "ets",
        TSA_VENDOR => "vendor",
        _ => "reserved",
    }
}
