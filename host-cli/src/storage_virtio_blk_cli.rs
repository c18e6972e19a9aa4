//! The arguments of `dpuctl storage virtio-blk create|list|get|delete`, apart from `cli.rs`
//! so the storage subcommand list there only names them.

use clap::{Args, Subcommand};

/// `dpuctl storage virtio-blk ...`: emulated virtio-blk devices, each backed by one volume.
#[derive(Debug, Subcommand)]
pub(crate) enum VirtioBlkCommand {
    /// Create a virtio-blk controller on a host function, backed by a volume.
    #[command(
        after_help = "Examples:\n  dpuctl storage virtio-blk create --id vm1 --volume volumes/r0n1 --pf 0\n  dpuctl storage virtio-blk create --id vm2 --volume volumes/r0n2 --pci 0000:03:00.4 --num-queues 4 --queue-size 256 --serial VM2DISK"
    )]
    Create(VirtioBlkCreateArgs),
    /// The virtio-blk controllers the agent manages, with SNAP's state of each.
    #[command(after_help = "Example:\n  dpuctl -o json storage virtio-blk list")]
    List,
    /// One virtio-blk controller.
    #[command(after_help = "Example:\n  dpuctl storage virtio-blk get virtioBlkControllers/vm1")]
    Get {
        /// `virtioBlkControllers/{id}` (a bare id is taken as that).
        name: String,
    },
    /// Delete a virtio-blk controller (the host loses the disk).
    #[command(
        after_help = "Example:\n  dpuctl storage virtio-blk delete virtioBlkControllers/vm1"
    )]
    Delete {
        /// `virtioBlkControllers/{id}` (a bare id is taken as that).
        name: String,
        /// Succeed when it does not exist.
        #[arg(long)]
        allow_missing: bool,
    },
}

/// `dpuctl storage virtio-blk create`.
#[derive(Debug, Args)]
pub(crate) struct VirtioBlkCreateArgs {
    /// Client-chosen id: 1-63 characters of [A-Za-z0-9_-], starting with a letter.
    #[arg(long)]
    pub(crate) id: String,
    /// The backing volume, `volumes/{bdev}` (a bare bdev name is taken as that).
    #[arg(long)]
    pub(crate) volume: String,
    /// Host PF index among SNAP's virtio-blk functions (absent with --pci or --vuid: 0).
    #[arg(long, conflicts_with_all = ["pci", "vuid"])]
    pub(crate) pf: Option<u32>,
    /// Host VF index (absent: the PF itself).
    #[arg(long, conflicts_with_all = ["pci", "vuid"])]
    pub(crate) vf: Option<u32>,
    /// The function by the PCI address the host sees (bb:dd.f or 0000:bb:dd.f).
    #[arg(long, value_name = "BDF", conflicts_with = "vuid")]
    pub(crate) pci: Option<String>,
    /// The function by SNAP's VUID (stable across reboots).
    #[arg(long)]
    pub(crate) vuid: Option<String>,
    /// Virtqueues offered to the host (absent: SNAP's default).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    pub(crate) num_queues: u32,
    /// Entries per virtqueue, a power of two (absent: SNAP's default).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    pub(crate) queue_size: u32,
    /// Serial number the host reads (at most 20 characters; absent: SNAP's).
    #[arg(long, default_value = "")]
    pub(crate) serial: String,
    /// Check and answer what would be created; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}
