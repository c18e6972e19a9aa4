//! The rdma_cm default ToS knob, through configfs as the kernel documents it
//! (Documentation/ABI/testing/configfs-rdma_cm): `mkdir
//! /sys/kernel/config/rdma_cm/DEV` makes the device's `ports/N/default_roce_tos`
//! appear; the value is the ToS byte new RDMA-CM connections on that port use.
//!
//! UNVERIFIED on hardware (no RDMA device here): `dpuctl experiment run` with a
//! `rdma-cm-tos` plan on a ConnectX port would settle it.

use std::path::{Path, PathBuf};

use super::control::{parse_in, read_trimmed, write_and_check, KnobError, MachineKnob};

/// The rdma_cm default ToS of one port of an RDMA device. The device name was checked by
/// the plan, so it is safe as a path component.
#[derive(Debug, Clone)]
pub struct RdmaCmTosKnob {
    device: String,
    port: u32,
    device_dir: PathBuf,
}

impl RdmaCmTosKnob {
    /// Port `port` of `device`, configfs under `root` (`/` on a machine).
    pub fn new(device: &str, port: u32, root: &Path) -> Self {
        Self {
            device: device.to_owned(),
            port,
            device_dir: root.join("sys/kernel/config/rdma_cm").join(device),
        }
    }

    fn file(&self) -> PathBuf {
        self.device_dir
            .join("ports")
            .join(self.port.to_string())
            .join("default_roce_tos")
    }

    /// Creates the device's configfs directory when absent (the kernel then fills it).
    fn ensure_device_dir(&self) -> Result<(), KnobError> {
        if self.device_dir.is_dir() {
            return Ok(());
        }
        std::fs::create_dir(&self.device_dir).map_err(|source| KnobError::Io {
            knob: self.describe(),
            op: "create",
            path: self.device_dir.clone(),
            source,
        })
    }
}

impl MachineKnob for RdmaCmTosKnob {
    fn describe(&self) -> String {
        format!("rdma_cm default ToS of {} port {}", self.device, self.port)
    }

    fn read_current(&self) -> Result<String, KnobError> {
        self.ensure_device_dir()?;
        read_trimmed(&self.describe(), &self.file())
    }

    fn apply(&self, value: &str) -> Result<(), KnobError> {
        let tos = parse_in(&self.describe(), value, 0..=255u8)?;
        self.ensure_device_dir()?;
        write_and_check(&self.describe(), &self.file(), &tos.to_string())
    }
}
