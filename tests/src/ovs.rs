//! Real Open vSwitch daemons for the OVS tier: private daemons per test from the shipped
//! `dpu-sim` crate (which runs the same daemons for each simulated node), in a temp
//! directory with ovs-vswitchd in a network namespace of its own. The tier also pings
//! between namespaces, so its prerequisites are the daemons' and `ping`.

pub use dpu_sim::netns::Netns;
pub use dpu_sim::ovs_daemons::{OvsDaemons, OvsError, SCHEMA};

use crate::command::program_path;
pub use crate::command::run;

/// Why this machine cannot run the OVS tier, if it cannot: the daemons' prerequisites
/// (root, `openvswitch-switch`, `iproute2`), then `ping`, which the tier's traffic tests
/// run between namespaces.
pub fn missing_prerequisite() -> Option<String> {
    if let Some(reason) = dpu_sim::ovs_daemons::missing_prerequisite() {
        return Some(reason);
    }
    if program_path("ping").is_none() {
        return Some("`ping` is not installed (apt: iputils-ping)".to_owned());
    }
    None
}
