//! `dpuctl storage read PATH`: the host-side NVMe read demo. Reads a block device or file
//! read-only with O_DIRECT through io_uring and reports fio-style results (`-o json` has
//! the key names of fio's `--output-format=json` read section).

pub(crate) mod engine;
mod histogram;
mod report;
pub(crate) mod size;

use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::ReadArgs;
use crate::commands::Env;
use crate::outcome::Outcome;
use crate::output;
use engine::Limit;
use report::Results;

/// Parses `--runtime`: positive, finite seconds.
pub(crate) fn parse_runtime(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => Ok(secs),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

/// Runs the read and prints the results.
/// Opens `path` for O_DIRECT reads of `bs`-byte blocks and checks that it can be read so:
/// the file, its size and its direct-I/O alignment.
fn open_checked(path: &Path, bs: u64) -> anyhow::Result<(std::fs::File, u64, engine::Alignment)> {
    let shown = path.display();
    let mut file = engine::open_direct(path)?;
    let file_size = engine::size_of(&mut file, path)?;
    if file_size < bs {
        bail!("{shown} is {file_size} bytes, smaller than --bs {bs} bytes");
    }
    let align = engine::dio_alignment(&file);
    if align.source != "statx" {
        eprintln!(
            "dpuctl: note: {shown} does not report its direct-I/O alignment (statx \
             STATX_DIOALIGN); assuming {} bytes from {}",
            align.offset, align.source
        );
    }
    if !bs.is_multiple_of(align.offset) {
        bail!(
            "--bs {bs} is not a multiple of the {}-byte direct-I/O alignment of {shown}",
            align.offset
        );
    }
    Ok((file, file_size, align))
}

/// Reads `size` bytes of `path` (O_DIRECT, io_uring, never writing) for a proof's
/// workload; no progress display.
pub(crate) fn read_exactly(
    path: &Path,
    bs: u64,
    iodepth: u32,
    size: u64,
) -> anyhow::Result<engine::Measured> {
    let (file, file_size, align) = open_checked(path, bs)?;
    engine::read_loop(
        &file,
        file_size,
        bs,
        iodepth,
        align,
        Limit::Bytes(size),
        |_| {},
    )
}

pub(crate) fn run(env: &Env<'_>, args: &ReadArgs) -> anyhow::Result<Outcome> {
    let path = &args.path;
    let shown = path.display().to_string();
    let bs = args.bs;
    if let Some(size) = args.size {
        if size < bs {
            bail!("--size {size} bytes is smaller than --bs {bs} bytes");
        }
    }
    let (file, file_size, align) = open_checked(path, bs)?;
    let (limit, total) = match (args.size, args.runtime) {
        (Some(size), _) => (Limit::Bytes(size), Some(size / bs * bs)),
        (None, Some(secs)) => (Limit::Time(Duration::from_secs_f64(secs)), None),
        (None, None) => (Limit::Bytes(file_size), Some(file_size / bs * bs)),
    };
    let bar = progress_bar(env.json(), total);
    let measured = engine::read_loop(&file, file_size, bs, args.iodepth, align, limit, |n| {
        if let Some(bar) = &bar {
            bar.set_position(n);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let measured = measured?;
    let results = Results {
        path: shown,
        bs,
        iodepth: args.iodepth,
        io_bytes: measured.io_bytes,
        total_ios: measured.total_ios,
        runtime: measured.runtime,
        clat: measured.clat,
    };
    if env.json() {
        output::json(&results.fio_json())?;
    } else {
        results.print_table()?;
    }
    Ok(Outcome::Success)
}

/// A progress bar on stderr, only for people at a terminal.
fn progress_bar(json: bool, total: Option<u64>) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match total {
        Some(total) => ProgressBar::new(total).with_style(
            ProgressStyle::with_template(
                "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {binary_bytes} {binary_bytes_per_sec}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr());
    Some(bar)
}
