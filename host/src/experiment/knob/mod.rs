//! Applying an experiment's knob through the kernel, never through a shell string: an
//! MTU by `RTM_SETLINK` (`mtu.rs`), a sysctl by writing its `/proc/sys` file (`sysctl.rs`),
//! the rdma_cm default ToS through configfs (`rdma_cm_tos.rs`), a ring size through
//! ethtool's generic netlink (`ring.rs`), the PFC priorities through DCB netlink
//! (`pfc.rs`). Every value is checked for
//! the knob's type and range before anything is written, read back after, and a
//! mismatch is an error, so the revert journal can trust that "applied" means applied.
//!
//! An `env` knob changes nothing on the machine (the measured command gets the variable:
//! [`super::run`]), so it has no [`MachineKnob`].

mod control;
mod mtu;
mod pfc;
mod rdma_cm_tos;
mod ring;
mod sysctl;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use control::{KnobError, MachineKnob};
pub use mtu::MtuKnob;
pub use pfc::PfcKnob;
pub use rdma_cm_tos::RdmaCmTosKnob;
pub use ring::RingKnob;
pub use sysctl::SysctlKnob;

use super::plan::{Knob, SysctlValue};

/// The machine-side control of a plan's knob rooted at `/`: `Ok(None)` for an `env`
/// knob (nothing on the machine changes).
pub fn machine_knob(knob: &Knob) -> Result<Option<Box<dyn MachineKnob>>, KnobError> {
    machine_knob_at(knob, Path::new("/"))
}

/// [`machine_knob`] with the `/proc` and `/sys` files under `root` (tests use a
/// temporary directory; the MTU, ring and PFC knobs are netlink in the caller's namespace).
pub fn machine_knob_at(
    knob: &Knob,
    root: &Path,
) -> Result<Option<Box<dyn MachineKnob>>, KnobError> {
    Ok(match knob {
        Knob::Mtu { interface, .. } => Some(Box::new(MtuKnob::new(interface, root))),
        Knob::Env { .. } => None,
        Knob::RdmaCmTos { device, .. } => Some(Box::new(RdmaCmTosKnob::new(device, 1, root))),
        Knob::Sysctl { name, .. } => Some(Box::new(SysctlKnob::new(*name, root))),
        Knob::Ring {
            interface, ring, ..
        } => Some(Box::new(RingKnob::new(interface, *ring))),
        Knob::Pfc { interface, .. } => Some(Box::new(PfcKnob::new(interface))),
    })
}

/// The plan's A and B as the text a [`MachineKnob`] takes (for `env`, the values
/// themselves).
pub fn values_text(knob: &Knob) -> (String, String) {
    fn pair<T: ToString>(a: &T, b: &T) -> (String, String) {
        (a.to_string(), b.to_string())
    }
    match knob {
        Knob::Mtu { values, .. } | Knob::Ring { values, .. } => pair(&values.a, &values.b),
        Knob::Env { values, .. } => (values.a.clone(), values.b.clone()),
        Knob::RdmaCmTos { values, .. } => pair(&values.a, &values.b),
        Knob::Pfc { values, .. } => (values.a.text(), values.b.text()),
        Knob::Sysctl { values, .. } => (sysctl_text(values.a), sysctl_text(values.b)),
    }
}

/// A sysctl value as `/proc/sys` prints it, with single spaces.
pub fn sysctl_text(value: SysctlValue) -> String {
    match value {
        SysctlValue::One(v) => v.to_string(),
        SysctlValue::Three([a, b, c]) => format!("{a} {b} {c}"),
    }
}
