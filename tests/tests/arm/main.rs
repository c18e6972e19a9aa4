//! The Arm check: the aarch64 `dpu-agent` runs under qemu-aarch64 (natively on an Arm host)
//! and answers the x86 `dpuctl` over a Unix socket and TCP; the cross-built binaries stay
//! within the glibc floor of BlueField OS; the `.deb` packages hold what a DPU install needs.
//!
//! Inputs: `DPU_TEST_AARCH64_BIN_DIR` (else the aarch64 agent is cross-built here) and
//! `DPU_TEST_DEB_DIR` (else the package tests skip). See `dpu_tests::arm`.

mod agent;
mod glibc;
mod package;

use std::path::PathBuf;

use dpu_tests::arm;

/// The aarch64 `dpu-agent`, checked to be an AArch64 ELF, when it exists and this machine
/// can run it; otherwise why not.
pub(crate) fn aarch64_agent() -> Result<PathBuf, String> {
    let dir = arm::aarch64_bin_dir()?;
    let agent = dir.join("dpu-agent");
    arm::assert_aarch64_elf(&agent);
    if let Some(reason) = arm::cannot_run_aarch64() {
        return Err(reason);
    }
    Ok(agent)
}
