//! Why a capture failed: what the bundle's writer and the capture itself refuse or fail
//! on, one type both return.

use std::io;
use std::path::PathBuf;

use dpu_probe::capture as recorder;

/// Why a capture failed; nothing is left in `out` when it does.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// `--out` names something that is not a directory.
    #[error("{path} exists and is not a directory: give a new or empty directory")]
    OutNotDir {
        /// The path given.
        path: PathBuf,
    },
    /// `--out` names a directory with entries: a capture never overwrites.
    #[error("{path} is not empty: give a new or empty directory (nothing was written)")]
    OutNotEmpty {
        /// The path given.
        path: PathBuf,
    },
    /// The interval between the readings is zero.
    #[error("the interval between the two readings must be more than zero")]
    ZeroInterval,
    /// The recorder would not start.
    #[error("cannot record")]
    Record(#[source] recorder::RecordError),
    /// `--snap-socket` could not be read at all (missing, refused, no answer in time); a
    /// method it refuses is recorded, not this.
    #[error("cannot capture the SNAP/SPDK socket {}", socket.display())]
    Snap {
        /// The socket given.
        socket: PathBuf,
        /// The call that could not be made.
        #[source]
        source: Box<dpu_nvmeof::snap::SnapError>,
    },
    /// `--ovs-rundir`'s daemons could not be read at all (a socket missing, refused, no
    /// answer in time; or a read refused as not read-only); a command a daemon refuses is
    /// recorded, not this.
    #[error("cannot capture OVS in {}", rundir.display())]
    Ovs {
        /// The run directory given.
        rundir: PathBuf,
        /// The read that could not be made.
        #[source]
        source: Box<dpu_ovs::capture::ReadError>,
    },
    /// Writing the bundle failed.
    #[error("cannot write {path}")]
    Write {
        /// What was being written.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}
