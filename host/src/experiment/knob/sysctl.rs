//! The sysctl knob: the allow-listed names only ([`Sysctl`]), written to their
//! `/proc/sys` file and read back.

use std::path::{Path, PathBuf};

use super::control::{parse_in, read_trimmed, write_and_check, KnobError, MachineKnob};
use crate::experiment::plan::Sysctl;

/// One allow-listed sysctl.
#[derive(Debug, Clone)]
pub struct SysctlKnob {
    name: Sysctl,
    file: PathBuf,
}

impl SysctlKnob {
    /// `name`'s file under `root` (`/` on a machine): `proc/sys/net/core/rmem_max`.
    pub fn new(name: Sysctl, root: &Path) -> Self {
        let relative = name.name().replace('.', "/");
        Self {
            name,
            file: root.join("proc/sys").join(relative),
        }
    }

    /// `value` checked for this sysctl's shape (one integer, or three for
    /// `tcp_rmem`/`tcp_wmem`, min ≤ default ≤ max) and normalised to single spaces.
    fn check(&self, value: &str) -> Result<String, KnobError> {
        let knob = self.describe();
        let words: Vec<&str> = value.split_whitespace().collect();
        let expected = if self.name.is_triple() { 3 } else { 1 };
        if words.len() != expected {
            return Err(KnobError::InvalidValue {
                knob,
                value: value.to_owned(),
                reason: format!("expected {expected} integer(s)"),
            });
        }
        let numbers = words
            .iter()
            .map(|w| parse_in(&knob, w, 0..=i32::MAX as u32))
            .collect::<Result<Vec<u32>, _>>()?;
        if numbers.windows(2).any(|w| w[0] > w[1]) {
            return Err(KnobError::InvalidValue {
                knob,
                value: value.to_owned(),
                reason: "min, default and max must not decrease".to_owned(),
            });
        }
        Ok(words.join(" "))
    }
}

impl MachineKnob for SysctlKnob {
    fn describe(&self) -> String {
        format!("sysctl {}", self.name.name())
    }

    fn read_current(&self) -> Result<String, KnobError> {
        read_trimmed(&self.describe(), &self.file)
    }

    fn apply(&self, value: &str) -> Result<(), KnobError> {
        let value = self.check(value)?;
        write_and_check(&self.describe(), &self.file, &value)
    }
}
