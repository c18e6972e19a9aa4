//! `dpu-sim`: a simulated BlueField under the real `dpu-agent`, for people who write
//! automation against the agent and have no DPU at hand (and for this project's own tests).
//!
//! Only the machine beneath the agent is simulated: its sys tree ([`fixture`]), SNAP's
//! JSON-RPC socket ([`fake_snap`], held to SPDK v24.01's observable behaviour by the spdk
//! tier; a captured OVS replayed by [`fake_ovs`]), counters that move ([`traffic`]), faults
//! on demand ([`fault`]) and, for proofs, a
//! host with a real disk whose reads the volume counts ([`host_disk`]). Where the machine
//! can run them, each node's switch is real Open vSwitch: private daemons in a network
//! namespace of their own ([`ovs_daemons`]). The code under test is always the real agent
//! binary, started by [`Simulation::start`].
//!
//! Owns: building simulated machines, running them and breaking them on purpose. Must not
//! touch: the agent's or `dpuctl`'s code (it runs their binaries), or anything outside the
//! directory it is given but the loop device a host disk attaches (and detaches) and the
//! network namespace each node's OVS runs in (created and deleted with it).

pub mod fake_ovs;
pub mod fake_snap;
pub mod fault;
pub mod fixture;
pub mod host_disk;
pub mod netns;
pub mod ovs_daemons;
mod profile;
pub mod qos_throttle;
mod simulation;
mod switch;
pub mod tool;
pub mod traffic;

pub use host_disk::{HostDisk, HostDiskError, HostPath};
pub use ovs_daemons::{OvsDaemons, OvsError};
pub use profile::{Profile, UnknownProfile};
pub use simulation::{Node, SimError, Simulation, SimulationOptions, SIMULATED_TARGET};
pub use switch::{OvsChoice, SwitchOff, OVS_AUTO_MAX_NODES};
