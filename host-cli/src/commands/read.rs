//! `dpuctl storage read PATH`: flags to the read's parameters, the read (dpu-host's
//! io_uring engine) with a progress bar for people at a terminal, and the fio-shaped
//! results as a table or fio's JSON.

use std::io::IsTerminal as _;

use dpu_host::observe::Observer;
use dpu_host::storage_read::{self, ReadEvent, ReadParams};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::env::Env;
use crate::cli::ReadArgs;
use crate::exit::Exit;
use crate::output;

pub(crate) fn run(env: &Env<'_>, args: &ReadArgs) -> anyhow::Result<Exit> {
    let params = ReadParams {
        path: args.path.clone(),
        bs: args.bs,
        iodepth: args.iodepth,
        size: args.size,
        runtime: args.runtime,
    };
    let mut bar = Bar {
        shown: !env.json() && std::io::stderr().is_terminal(),
        bar: None,
    };
    let results = storage_read::run(&params, &mut bar)?;
    if env.json() {
        output::json(&results.fio_json())?;
    } else {
        let mut table = output::table(["read", "value"]);
        for row in results.rows() {
            table.add_row(row);
        }
        output::print_table(&table)?;
    }
    Ok(Exit::Success)
}

/// A progress bar on stderr, only for people at a terminal.
struct Bar {
    shown: bool,
    bar: Option<ProgressBar>,
}

impl Observer<ReadEvent> for Bar {
    fn event(&mut self, event: &ReadEvent) {
        match *event {
            ReadEvent::Started { total } => self.start(total),
            ReadEvent::Advanced { bytes_done } => {
                if let Some(bar) = &self.bar {
                    bar.set_position(bytes_done);
                }
            }
            ReadEvent::Finished => {
                if let Some(bar) = self.bar.take() {
                    bar.finish_and_clear();
                }
            }
        }
    }
}

impl Bar {
    /// Draws the bar (a spinner for a read by time) when a person is watching.
    fn start(&mut self, total: Option<u64>) {
        if !self.shown {
            return;
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
        self.bar = Some(bar);
    }
}
