//! `dpuctl storage read PATH`: the host-side NVMe read demo. Reads a block device or file
//! read-only with O_DIRECT through io_uring and reports fio-style results (`-o json` has
//! the key names of fio's `--output-format=json` read section).

pub mod engine;
pub mod error;
mod histogram;
pub mod report;
pub mod size;

use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::Limit;
pub use error::{LoopError, ReadError};
use report::Results;

use crate::observe::Observer;
use crate::param::{Field, ParamError};

/// `dpuctl storage read` as parameters.
#[derive(Debug, Clone)]
pub struct ReadParams {
    /// The block device or file to read.
    pub path: PathBuf,
    /// Block size in bytes.
    pub bs: u64,
    /// Reads in flight.
    pub iodepth: u32,
    /// Bytes to read; default: the whole file (unless `runtime`).
    pub size: Option<u64>,
    /// Read for this long instead of a number of bytes.
    pub runtime: Option<f64>,
}

/// Parses `--runtime`: positive, finite seconds.
pub fn parse_runtime(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => Ok(secs),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

/// Opens `path` for O_DIRECT reads of `bs`-byte blocks and checks that it can be read so:
/// the file, its size and its direct-I/O alignment.
fn open_checked(
    path: &Path,
    bs: u64,
) -> Result<(std::fs::File, u64, engine::Alignment), ReadError> {
    let shown = path.display();
    let mut file = engine::open_direct(path)?;
    let file_size = engine::size_of(&mut file, path)?;
    if file_size < bs {
        return Err(ParamError::new(Field::BlockSize)
            .text(format!("{shown} is {file_size} bytes, smaller than "))
            .field(Field::BlockSize)
            .text(format!(" {bs} bytes"))
            .into());
    }
    let align = engine::dio_alignment(&file);
    if align.source != "statx" {
        tracing::warn!(
            "{shown} does not report its direct-I/O alignment (statx STATX_DIOALIGN); \
             assuming {} bytes from {}",
            align.offset,
            align.source
        );
    }
    if !bs.is_multiple_of(align.offset) {
        return Err(ParamError::new(Field::BlockSize)
            .field(Field::BlockSize)
            .text(format!(
                " {bs} is not a multiple of the {}-byte direct-I/O alignment of {shown}",
                align.offset
            ))
            .into());
    }
    Ok((file, file_size, align))
}

/// Reads `path` from `start` on (O_DIRECT, io_uring, never writing, wrapping at the end)
/// until `limit`, with no progress display: the workload of a proof, which reads a number
/// of bytes (`prove storage`) or for a time when it measures a rate (`prove qos`).
pub fn read_with(
    path: &Path,
    bs: u64,
    iodepth: u32,
    limit: Limit,
    start: u64,
) -> Result<engine::Measured, ReadError> {
    let (file, file_size, align) = open_checked(path, bs)?;
    engine::read_loop(
        &file,
        engine::Extent {
            size: file_size,
            start,
        },
        bs,
        iodepth,
        align,
        limit,
        |_| {},
    )
    .map_err(|source| ReadError::Read {
        path: path.to_owned(),
        source,
    })
}

/// How far a read has come, for a progress display: what [`run`] tells its
/// [`Observer`], in this order: `Started` once, `Advanced` as completions arrive, `Finished`
/// once the loop has ended, successfully or not. A read refused before it starts (bad
/// parameters, a path that cannot be read) tells nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEvent {
    /// The read starts: the bytes it will read when it is for a number of bytes, None when
    /// it is for a time.
    Started {
        /// Bytes the read will have read at the end, when that is known.
        total: Option<u64>,
    },
    /// More completions arrived.
    Advanced {
        /// Bytes read so far.
        bytes_done: u64,
    },
    /// The read loop has ended (its result is [`run`]'s).
    Finished,
}

/// Runs `dpuctl storage read`: the read and its fio-shaped results.
pub fn run(
    args: &ReadParams,
    progress: &mut dyn Observer<ReadEvent>,
) -> Result<Results, ReadError> {
    let path = &args.path;
    let shown = path.display().to_string();
    let bs = args.bs;
    if let Some(size) = args.size {
        if size < bs {
            return Err(ParamError::new(Field::Size)
                .field(Field::Size)
                .text(format!(" {size} bytes is smaller than "))
                .field(Field::BlockSize)
                .text(format!(" {bs} bytes"))
                .into());
        }
    }
    let (file, file_size, align) = open_checked(path, bs)?;
    let (limit, total) = match (args.size, args.runtime) {
        (Some(size), _) => (Limit::Bytes(size), Some(size / bs * bs)),
        (None, Some(secs)) => (Limit::Time(Duration::from_secs_f64(secs)), None),
        (None, None) => (Limit::Bytes(file_size), Some(file_size / bs * bs)),
    };
    progress.event(&ReadEvent::Started { total });
    let extent = engine::Extent {
        size: file_size,
        start: 0,
    };
    let measured = engine::read_loop(&file, extent, bs, args.iodepth, align, limit, |n| {
        progress.event(&ReadEvent::Advanced { bytes_done: n });
    });
    progress.event(&ReadEvent::Finished);
    let measured = measured.map_err(|source| ReadError::Read {
        path: path.clone(),
        source,
    })?;
    Ok(Results {
        path: shown,
        bs,
        iodepth: args.iodepth,
        io_bytes: measured.io_bytes,
        total_ios: measured.total_ios,
        runtime: measured.runtime,
        clat: measured.clat,
    })
}

#[cfg(test)]
mod tests;
