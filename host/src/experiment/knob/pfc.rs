//! The PFC knob: the priorities PFC is enabled on, read with `DCB_CMD_IEEE_GET` and set
//! with `DCB_CMD_IEEE_SET` of `DCB_ATTR_IEEE_PFC` ([`dpu_probe::dcb::DcbNetlink`]), what
//! `dcb pfc set dev IF prio-pfc ...` does. A read-modify-write: only `pfc_en` changes,
//! `pfc_cap`, `mbc` and `delay` are sent back as the driver reported them. The number of
//! priorities is checked against the port's `pfc_cap` first; the mask is read back after.

use dpu_probe::dcb::{DcbNetlink, IeeePfc};

use super::control::{check_read_back, KnobError, MachineKnob};
use crate::experiment::plan::PfcPriorities;

/// PFC on one interface, in the caller's network namespace. The name was checked by the
/// plan (`check_ifname`) and is checked again by the probe before any request.
#[derive(Debug, Clone)]
pub struct PfcKnob {
    interface: String,
}

impl PfcKnob {
    /// PFC of `interface`.
    pub fn new(interface: &str) -> Self {
        Self {
            interface: interface.to_owned(),
        }
    }

    /// The socket and the port's PFC object as the driver reports it now.
    fn current(&self) -> Result<(DcbNetlink, IeeePfc), KnobError> {
        let read = "read the IEEE PFC object".to_owned();
        let mut socket =
            DcbNetlink::open().map_err(|e| KnobError::driver(self.describe(), read.clone(), e))?;
        let config = socket
            .ieee_config(&self.interface)
            .map_err(|e| KnobError::driver(self.describe(), read.clone(), e))?;
        let pfc = config.pfc.ok_or_else(|| KnobError::Unsupported {
            knob: self.describe(),
            why: format!(
                "the driver of {} answers DCB without an IEEE PFC object (no ieee_getpfc)",
                self.interface
            ),
        })?;
        Ok((socket, pfc))
    }
}

impl MachineKnob for PfcKnob {
    fn describe(&self) -> String {
        format!("pfc of {}", self.interface)
    }

    fn read_current(&self) -> Result<String, KnobError> {
        let (_, pfc) = self.current()?;
        Ok(PfcPriorities(pfc.pfc_en).text())
    }

    fn apply(&self, value: &str) -> Result<(), KnobError> {
        let knob = self.describe();
        let wanted =
            PfcPriorities::parse_text(value).map_err(|reason| KnobError::InvalidValue {
                knob: knob.clone(),
                value: value.to_owned(),
                reason,
            })?;
        let (mut socket, pfc) = self.current()?;
        let count = wanted.0.count_ones();
        if pfc.pfc_cap != 0 && count > u32::from(pfc.pfc_cap) {
            return Err(KnobError::InvalidValue {
                knob,
                value: value.to_owned(),
                reason: format!(
                    "enables {count} priorities; {} allows PFC on at most {} at once (pfc_cap)",
                    self.interface, pfc.pfc_cap
                ),
            });
        }
        let change = IeeePfc {
            pfc_en: wanted.0,
            ..pfc
        };
        socket.set_ieee_pfc(&self.interface, &change).map_err(|e| {
            KnobError::driver(self.describe(), format!("set it to {}", wanted.text()), e)
        })?;
        check_read_back(&knob, &wanted.text(), self.read_current()?)
    }
}
