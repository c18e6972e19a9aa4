//! Whether a simulated node's switch is real Open vSwitch, and why not when it is not.
//!
//! A node's agent serves its Switch service against private OVS daemons
//! ([`crate::ovs_daemons`]) where the machine can run them; where it cannot (not root,
//! OVS not installed), or where they would cost more than the user likely wants, the
//! node's agent runs with `[ovs] enabled = false` and its Switch service is DISABLED, and
//! `dpu-sim up` says why once. The cost: each node's daemons are two more processes
//! (about 30 MB resident together: ovs-vswitchd 20 MB, ovsdb-server 10 MB; and a tap
//! device per bridge and internal port), so a simulation of more than
//! [`OVS_AUTO_MAX_NODES`] nodes (fleet automation, which rarely touches the switch) starts
//! them only when asked ([`OvsChoice::Always`], `--ovs`).

use std::fmt;

use crate::ovs_daemons;

/// The most nodes that get OVS daemons without being asked ([`OvsChoice::Auto`]).
pub const OVS_AUTO_MAX_NODES: usize = 8;

/// Which nodes get private OVS daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OvsChoice {
    /// Every node where the machine can run the daemons and the simulation has at most
    /// [`OVS_AUTO_MAX_NODES`] nodes; otherwise none, with the reason.
    #[default]
    Auto,
    /// Every node, whatever the count; starting fails when the machine cannot run them
    /// (`dpu-sim up --ovs`).
    Always,
    /// No node (`dpu-sim up --no-ovs`).
    Never,
}

/// Why no node of a simulation has OVS (its Switch service is DISABLED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchOff {
    /// The user asked for none.
    Asked,
    /// More nodes than get OVS without being asked.
    TooManyNodes {
        /// The simulation's node count.
        count: usize,
    },
    /// The machine cannot run the daemons; the reason names what is missing.
    Unavailable(String),
}

impl fmt::Display for SwitchOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Asked => f.write_str("--no-ovs"),
            Self::TooManyNodes { count } => write!(
                f,
                "{count} nodes: OVS daemons start per node for at most \
                 {OVS_AUTO_MAX_NODES} unless --ovs asks for them"
            ),
            Self::Unavailable(reason) => f.write_str(reason),
        }
    }
}

/// Whether a simulation of `count` nodes gets OVS under `choice`: `None` when it does,
/// else why not. [`OvsChoice::Always`] on a machine that cannot run the daemons gives
/// [`SwitchOff::Unavailable`]; the caller refuses to start then.
pub(crate) fn decide(choice: OvsChoice, count: usize) -> Option<SwitchOff> {
    decide_with(choice, count, ovs_daemons::missing_prerequisite)
}

fn decide_with(
    choice: OvsChoice,
    count: usize,
    missing: impl FnOnce() -> Option<String>,
) -> Option<SwitchOff> {
    match choice {
        OvsChoice::Never => Some(SwitchOff::Asked),
        OvsChoice::Auto if count > OVS_AUTO_MAX_NODES => Some(SwitchOff::TooManyNodes { count }),
        OvsChoice::Auto | OvsChoice::Always => missing().map(SwitchOff::Unavailable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn can() -> Option<String> {
        None
    }

    fn cannot() -> Option<String> {
        Some("the OVS daemons need root".to_owned())
    }

    #[test]
    fn auto_gives_ovs_where_it_can_run_up_to_the_limit() {
        assert_eq!(decide_with(OvsChoice::Auto, 1, can), None);
        assert_eq!(decide_with(OvsChoice::Auto, OVS_AUTO_MAX_NODES, can), None);
        let over = decide_with(OvsChoice::Auto, OVS_AUTO_MAX_NODES + 1, can);
        assert_eq!(over, Some(SwitchOff::TooManyNodes { count: 9 }));
        assert!(over.expect("off").to_string().contains("--ovs"));
        assert_eq!(
            decide_with(OvsChoice::Auto, 1, cannot),
            Some(SwitchOff::Unavailable(
                "the OVS daemons need root".to_owned()
            ))
        );
    }

    #[test]
    fn always_ignores_the_limit_but_not_the_machine_and_never_is_never() {
        assert_eq!(decide_with(OvsChoice::Always, 64, can), None);
        assert!(matches!(
            decide_with(OvsChoice::Always, 1, cannot),
            Some(SwitchOff::Unavailable(_))
        ));
        assert_eq!(
            decide_with(OvsChoice::Never, 1, can),
            Some(SwitchOff::Asked)
        );
    }
}
