//! Why a read could not start or did not finish, one variant per way, each with the path
//! and the operating system's own error as its source. Parameter problems (a block size
//! the file cannot be read in) are [`ParamError`]s, which name the field, never a flag.

use std::io;
use std::path::PathBuf;

use crate::param::ParamError;

/// Why a read of a block device or file could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path's metadata could not be read (missing, no permission ...).
    #[error("cannot stat {}", path.display())]
    Stat {
        /// What was to be read.
        path: PathBuf,
        /// The operating system's answer.
        #[source]
        source: io::Error,
    },
    /// The path is a directory, socket, FIFO ...: nothing the engine reads.
    #[error("{} is neither a regular file nor a block device", path.display())]
    NotFileOrDevice {
        /// What was to be read.
        path: PathBuf,
    },
    /// The filesystem refused O_DIRECT (EINVAL): tmpfs before Linux 6.6, some FUSE.
    #[error(
        "cannot open {} with O_DIRECT: the filesystem does not support direct I/O (tmpfs \
         does not); use a block device or a file on ext4/xfs",
        path.display()
    )]
    NoDirectIo {
        /// What was to be read.
        path: PathBuf,
        /// The EINVAL the open returned.
        #[source]
        source: io::Error,
    },
    /// The open failed for another reason.
    #[error("cannot open {} for reading", path.display())]
    Open {
        /// What was to be read.
        path: PathBuf,
        /// The operating system's answer.
        #[source]
        source: io::Error,
    },
    /// A block device's size (a seek to its end) could not be found.
    #[error("cannot find the size of {}", path.display())]
    Size {
        /// What was to be read.
        path: PathBuf,
        /// The operating system's answer.
        #[source]
        source: io::Error,
    },
    /// A parameter the file cannot be read with (a block size larger than the file or
    /// not a multiple of its direct-I/O alignment, a size under one block ...).
    #[error("{0}")]
    Param(#[from] ParamError),
    /// The loop failed once it had the file: the ring, a buffer, or a read.
    #[error("reading {}", path.display())]
    Read {
        /// What was being read.
        path: PathBuf,
        /// What failed.
        #[source]
        source: LoopError,
    },
}

/// Why the read loop over an open file failed. It is given a file, not a path, so
/// [`ReadError::Read`] adds the path.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The file is smaller than one block, so there is nothing to read.
    #[error("the file holds no whole {block_size}-byte block")]
    NoWholeBlock {
        /// The block size asked for.
        block_size: u64,
    },
    /// One read cannot ask for this many bytes (io_uring lengths are 32-bit).
    #[error("a block of {block_size} bytes is too large for one read")]
    BlockTooLarge {
        /// The block size asked for.
        block_size: u64,
    },
    /// The buffer's size and alignment do not form a layout.
    #[error("bad buffer layout: {len} bytes aligned to {align}")]
    BufferLayout {
        /// Bytes per buffer.
        len: u64,
        /// Alignment asked for.
        align: u64,
        /// Why the layout was refused.
        #[source]
        source: std::alloc::LayoutError,
    },
    /// The allocator had no memory for a read buffer.
    #[error("cannot allocate a {len}-byte read buffer")]
    Allocation {
        /// Bytes per buffer.
        len: u64,
    },
    /// io_uring could not be set up (old kernel, seccomp, io_uring_disabled).
    #[error("cannot set up io_uring")]
    Ring(#[source] io::Error),
    /// Submitting to or waiting on the ring failed.
    #[error("io_uring submit failed")]
    Submit(#[source] io::Error),
    /// A read completed with an error.
    #[error("read of {block_size} bytes at offset {offset} failed")]
    Failed {
        /// Where the read was.
        offset: u64,
        /// How many bytes it asked for.
        block_size: u64,
        /// The error the completion carried.
        #[source]
        source: io::Error,
    },
    /// A read returned fewer bytes than asked for.
    #[error("short read at offset {offset}: {got} of {block_size} bytes (did the file shrink?)")]
    Short {
        /// Where the read was.
        offset: u64,
        /// Bytes it returned.
        got: u64,
        /// How many bytes it asked for.
        block_size: u64,
    },
}
