//! The ring knob: an interface's RX or TX ring size, read with `ETHTOOL_MSG_RINGS_GET`
//! and set with `ETHTOOL_MSG_RINGS_SET` ([`dpu_probe::ethtool_netlink`]), what
//! `ethtool -g`/`-G` do. The driver's maximum is read before the change, so a size past
//! it is refused naming both before anything is sent; the size is read back after.

use dpu_probe::ethtool_netlink::{EthtoolNetlink, Ring, RingSizes};

use super::control::{check_read_back, parse_in, KnobError, MachineKnob};
use crate::experiment::plan::RingDirection;

/// One ring of an interface, in the caller's network namespace. The name was checked by
/// the plan (`check_ifname`) and is checked again by the probe before any request.
#[derive(Debug, Clone)]
pub struct RingKnob {
    interface: String,
    ring: Ring,
}

impl RingKnob {
    /// The `ring` ring of `interface`.
    pub fn new(interface: &str, ring: RingDirection) -> Self {
        Self {
            interface: interface.to_owned(),
            ring: match ring {
                RingDirection::Rx => Ring::Rx,
                RingDirection::Tx => Ring::Tx,
            },
        }
    }

    /// The ring sizes as the driver reports them now.
    fn sizes(&self, socket: &mut EthtoolNetlink) -> Result<RingSizes, KnobError> {
        socket
            .rings(&self.interface)
            .map_err(|e| KnobError::driver(self.describe(), "read the ring sizes".to_owned(), e))
    }

    fn open(&self) -> Result<EthtoolNetlink, KnobError> {
        EthtoolNetlink::open()
            .map_err(|e| KnobError::driver(self.describe(), "open ethtool netlink".to_owned(), e))
    }

    /// This ring's (size, maximum) in `sizes`; `None` where the driver reports no such ring.
    fn of(&self, sizes: &RingSizes) -> (Option<u32>, Option<u32>) {
        match self.ring {
            Ring::Rx => (sizes.rx, sizes.rx_max),
            Ring::Tx => (sizes.tx, sizes.tx_max),
        }
    }

    fn no_such_ring(&self, value: &str) -> KnobError {
        KnobError::InvalidValue {
            knob: self.describe(),
            value: value.to_owned(),
            reason: format!(
                "the driver of {} reports no {} ring (ethtool -g shows n/a)",
                self.interface,
                self.ring.name()
            ),
        }
    }
}

impl MachineKnob for RingKnob {
    fn describe(&self) -> String {
        format!("{} ring of {}", self.ring.name(), self.interface)
    }

    fn read_current(&self) -> Result<String, KnobError> {
        let sizes = self.sizes(&mut self.open()?)?;
        match self.of(&sizes) {
            (Some(size), _) => Ok(size.to_string()),
            (None, _) => Err(self.no_such_ring("")),
        }
    }

    fn apply(&self, value: &str) -> Result<(), KnobError> {
        let knob = self.describe();
        let size = parse_in(&knob, value, 1..=u32::MAX)?;
        let mut socket = self.open()?;
        let max = match self.of(&self.sizes(&mut socket)?) {
            (_, Some(max)) => max,
            (_, None) => return Err(self.no_such_ring(value)),
        };
        if size > max {
            return Err(KnobError::InvalidValue {
                knob,
                value: value.to_owned(),
                reason: format!(
                    "{size} is above the driver's maximum of {max} for the {} ring of {}",
                    self.ring.name(),
                    self.interface
                ),
            });
        }
        socket
            .set_ring(&self.interface, self.ring, size)
            .map_err(|e| KnobError::driver(self.describe(), format!("set it to {size}"), e))?;
        let found = match self.of(&self.sizes(&mut socket)?) {
            (Some(found), _) => found.to_string(),
            (None, _) => "nothing".to_owned(),
        };
        check_read_back(&knob, &size.to_string(), found)
    }
}
