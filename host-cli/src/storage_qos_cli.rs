//! The arguments of `dpuctl storage qos`, apart from `cli.rs` so the storage subcommand
//! list there only names them.

use clap::{ArgGroup, Args};

/// `dpuctl storage qos VOLUME ...`: the whole set of a volume's limits (SPDK's
/// `bdev_set_qos_limit` keys); a limit not given is unlimited, `--clear` lifts them all.
#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("limits")
        .required(true)
        .multiple(true)
        .args(["iops", "read_mbps", "write_mbps", "rw_mbps", "clear"])
))]
pub(crate) struct QosArgs {
    /// `volumes/{remote}n{nsid}` (a bare `{remote}n{nsid}` is taken as that).
    pub(crate) volume: String,
    /// Read and write I/Os per second together: a multiple of 1000 (SPDK's unit), 0 =
    /// unlimited.
    #[arg(long, value_name = "IOPS")]
    pub(crate) iops: Option<u64>,
    /// Read MiB per second, 0 = unlimited.
    #[arg(long, value_name = "MIBPS")]
    pub(crate) read_mbps: Option<u64>,
    /// Write MiB per second, 0 = unlimited.
    #[arg(long, value_name = "MIBPS")]
    pub(crate) write_mbps: Option<u64>,
    /// Read and write MiB per second together, 0 = unlimited.
    #[arg(long, value_name = "MIBPS")]
    pub(crate) rw_mbps: Option<u64>,
    /// Lift every limit of the volume.
    #[arg(long, conflicts_with_all = ["iops", "read_mbps", "write_mbps", "rw_mbps"])]
    pub(crate) clear: bool,
    /// Check and answer what would be set; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}
