//! The ToS that rdma_cm puts on RoCE connections of one RDMA port by default: the
//! `default_roce_tos` attribute of the rdma_cm configfs tree
//! (`drivers/infiniband/core/cma_configfs.c`), read under the root like sysfs. The tree
//! exists only when configfs is mounted and someone created the device's directory
//! (`mkdir /sys/kernel/config/rdma_cm/mlx5_0`); without it the kernel's default, 0,
//! applies. Applications can still choose their own per connection
//! (`rdma_set_option(RDMA_OPTION_ID_TOS)`, `NCCL_IB_TC` for verbs): this is the default.

use std::path::PathBuf;

use crate::root::read_attr;
use crate::{ProbeError, SysRoot};

/// The rdma_cm default ToS of one port, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceTos {
    /// The IP ToS byte (DSCP in the upper six bits, ECN in the lower two).
    pub tos: u8,
    /// The configfs file it was read from; `None` when there is none and the kernel's
    /// default (0) applies.
    pub file: Option<PathBuf>,
}

impl RoceTos {
    /// The DSCP the ToS carries (`tos >> 2`).
    pub fn dscp(&self) -> u8 {
        self.tos >> 2
    }
}

/// `{root}/sys/kernel/config/rdma_cm/{ibdev}/ports/{port}/default_roce_tos`.
pub fn roce_tos_path(root: &SysRoot, ibdev: &str, port: u32) -> PathBuf {
    root.sys("kernel/config/rdma_cm")
        .join(ibdev)
        .join("ports")
        .join(port.to_string())
        .join("default_roce_tos")
}

/// Reads the default ToS of `ibdev` port `port`: the configfs value when the file exists
/// (a decimal `u8`, as `default_roce_tos_show` prints it), else 0 from the kernel's
/// default. An unreadable or malformed file is an error naming it.
pub fn read_roce_tos(root: &SysRoot, ibdev: &str, port: u32) -> Result<RoceTos, ProbeError> {
    if ibdev.is_empty() || ibdev == "." || ibdev == ".." || ibdev.contains('/') {
        return Err(ProbeError::InvalidName {
            what: "RDMA device",
            name: ibdev.to_owned(),
            why: "is not a single path component",
        });
    }
    let path = roce_tos_path(root, ibdev, port);
    if !crate::root::exists(&path) {
        return Ok(RoceTos { tos: 0, file: None });
    }
    let text = read_attr(&path)?;
    let tos = text.parse::<u8>().map_err(|_| ProbeError::Format {
        path: path.clone(),
        detail: format!("{text:?} is not a ToS byte (0-255)"),
    })?;
    Ok(RoceTos {
        tos,
        file: Some(path),
    })
}
