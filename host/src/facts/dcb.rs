//! What the host knows about each rail's DCB: its `RTM_GETDCB` configuration and its
//! RoCE default ToS, each read once with its own error. Gathered with the host's other
//! facts (or turned back from the agent's answer for the DPU's uplinks), and read by the
//! `dcb.*` checks and by `dpuctl roce dcb` alike: a foundation, so neither product
//! imports the other for it.

use std::collections::BTreeMap;

use dpu_probe::dcb::{read_dcb_config, read_roce_tos, DcbConfig, RoceTos};
use dpu_probe::{error_chain, SysRoot};

/// What the `dcb.*` checks read, per rail (data interface), gathered with the host's
/// other facts. Empty on a hand-built host: every check then skips saying so.
#[derive(Debug, Default)]
pub struct DcbFacts {
    /// By interface name.
    pub rails: BTreeMap<String, DcbRail>,
}

/// One rail's DCB configuration and its RoCE default ToS, each with its own error.
#[derive(Debug)]
pub struct DcbRail {
    /// `DCB_CMD_IEEE_GET` of the interface; the error says why not (not the live
    /// system, no DCB support, a netlink failure).
    pub config: Result<DcbConfig, String>,
    /// The rdma_cm default ToS of the rail's RDMA port; an error when the rail has no
    /// RDMA port or the configfs file is unreadable.
    pub tos: Result<RoceTos, String>,
}

impl DcbFacts {
    /// Reads the DCB configuration of `ifname` and the default ToS of its RDMA port
    /// (`rdma`: device and port, when it has one), unless already read.
    pub fn read_rail(&mut self, root: &SysRoot, ifname: &str, rdma: Option<(&str, u32)>) {
        if self.rails.contains_key(ifname) {
            return;
        }
        let config = read_dcb_config(root, ifname).map_err(|e| error_chain(&e));
        let tos = match rdma {
            Some((ibdev, port)) => read_roce_tos(root, ibdev, port).map_err(|e| error_chain(&e)),
            None => Err(format!("no RDMA port bound to {ifname}")),
        };
        self.rails
            .insert(ifname.to_owned(), DcbRail { config, tos });
    }
}
