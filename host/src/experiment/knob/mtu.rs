//! The MTU knob: read from `/sys/class/net/IF/mtu`, set with `RTM_SETLINK`
//! ([`dpu_probe::netlink::set_link_mtu`]) and read back.

use std::path::{Path, PathBuf};

use super::control::{check_read_back, parse_in, read_trimmed, KnobError, MachineKnob};

/// The MTU range a plan may ask for; the device's own limits are the kernel's to enforce.
const MTU_RANGE: std::ops::RangeInclusive<u32> = 68..=65535;

/// An interface's MTU. The name was checked by the plan (`check_ifname`), so it is safe
/// as a path component and a netlink attribute.
#[derive(Debug, Clone)]
pub struct MtuKnob {
    interface: String,
    sys_file: PathBuf,
}

impl MtuKnob {
    /// The MTU of `interface`, read under `root` (`/` on a machine).
    pub fn new(interface: &str, root: &Path) -> Self {
        Self {
            interface: interface.to_owned(),
            sys_file: root.join("sys/class/net").join(interface).join("mtu"),
        }
    }
}

impl MachineKnob for MtuKnob {
    fn describe(&self) -> String {
        format!("mtu of {}", self.interface)
    }

    fn read_current(&self) -> Result<String, KnobError> {
        read_trimmed(&self.describe(), &self.sys_file)
    }

    fn apply(&self, value: &str) -> Result<(), KnobError> {
        let knob = self.describe();
        let mtu = parse_in(&knob, value, MTU_RANGE)?;
        dpu_probe::netlink::set_link_mtu(&self.interface, mtu).map_err(|source| {
            let hint = match source.raw_os_error() {
                Some(nix::libc::EINVAL) => format!(
                    ": {} does not take an MTU of {mtu} (past the device's max_mtu or \
                     under its min_mtu)",
                    self.interface
                ),
                Some(nix::libc::ENODEV) => format!(": no interface {}", self.interface),
                Some(nix::libc::EPERM) => ": changing an MTU needs CAP_NET_ADMIN".to_owned(),
                _ => String::new(),
            };
            KnobError::Netlink {
                knob: knob.clone(),
                value: mtu.to_string(),
                hint,
                source: Box::new(source),
            }
        })?;
        check_read_back(&knob, &mtu.to_string(), self.read_current()?)
    }
}
