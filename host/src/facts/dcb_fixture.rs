//! Canned `RTM_GETDCB` answers laid out byte by byte as the kernel's `dcbnl_ieee_fill`
//! writes them, decoded by the probe's own decoder into [`DcbFacts`]: the DCB setups the
//! checks' and the RoCE view's tests are written against.

use std::path::PathBuf;

use dpu_probe::dcb::{decode_ieee_answer, DcbConfig, RoceTos};

use super::dcb::{DcbFacts, DcbRail};

pub(crate) const IF: &str = "ens1f0np0";
const NLA_F_NESTED: u16 = 0x8000;

fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut out = Vec::new();
    out.extend((len as u16).to_ne_bytes());
    out.extend(kind.to_ne_bytes());
    out.extend(value);
    out.resize((len + 3) & !3, 0);
    out
}

/// What one canned answer says.
pub(crate) struct Setup {
    pub(crate) pfc_en: u8,
    /// DSCP → priority APP entries.
    pub(crate) dscp_prio: Vec<(u16, u8)>,
    pub(crate) tc_tx_bw: [u8; 8],
    pub(crate) tc_tsa: [u8; 8],
    pub(crate) prio_tc: [u8; 8],
}

/// The correct lossless setup: trust DSCP (DSCP 26 → priority 3, 48 → 6), PFC on 3, ETS
/// with TC0 and the RoCE TC3 at 50 % each.
pub(crate) fn lossless() -> Setup {
    Setup {
        pfc_en: 1 << 3,
        dscp_prio: vec![(26, 3), (48, 6)],
        tc_tx_bw: [50, 0, 0, 50, 0, 0, 0, 0],
        tc_tsa: [2, 0, 0, 2, 0, 0, 0, 0],
        prio_tc: [0, 0, 0, 3, 0, 0, 0, 0],
    }
}

/// The `RTM_GETDCB` answer bytes for `setup` (nlmsghdr, dcbmsg, IFNAME, IEEE nest, DCBX).
fn answer(setup: &Setup) -> Vec<u8> {
    let mut ets = vec![0u8, 8, 0];
    ets.extend(setup.tc_tx_bw);
    ets.extend([0; 8]);
    ets.extend(setup.tc_tsa);
    ets.extend(setup.prio_tc);
    ets.extend([0; 24]);
    let mut pfc = vec![8u8, setup.pfc_en, 0, 0, 0, 0, 0, 0];
    pfc.extend([0; 128]);
    let apps: Vec<u8> = setup
        .dscp_prio
        .iter()
        .flat_map(|(dscp, prio)| {
            let mut app = vec![5, *prio];
            app.extend(dscp.to_ne_bytes());
            nla(1, &app)
        })
        .collect();
    let ieee = [nla(1, &ets), nla(2, &pfc), nla(3 | NLA_F_NESTED, &apps)].concat();
    let body = [
        nla(1, b"ens1f0np0\0"),
        nla(13 | NLA_F_NESTED, &ieee),
        nla(14, &[8]),
    ]
    .concat();
    let mut out = Vec::new();
    out.extend(((16 + 4 + body.len()) as u32).to_ne_bytes());
    out.extend(78u16.to_ne_bytes());
    out.extend([0; 10]);
    out.extend([0, 21, 0, 0]);
    out.extend(body);
    out
}

pub(crate) fn decoded(setup: &Setup) -> DcbConfig {
    decode_ieee_answer(&answer(setup))
        .expect("decodes")
        .expect("an RTM_GETDCB answer")
}

pub(crate) fn facts_with(setup: &Setup, tos: u8) -> DcbFacts {
    let mut facts = DcbFacts::default();
    facts.rails.insert(
        IF.to_owned(),
        DcbRail {
            config: Ok(decoded(setup)),
            tos: Ok(RoceTos {
                tos,
                file: Some(PathBuf::from(
                    "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
                )),
            }),
        },
    );
    facts
}
