//! `dpuctl dpu counters`: one snapshot from the agent, or a watch that prints per-interval
//! deltas and rates computed by the probe's diff (so resets and wraps are flagged, never
//! shown as huge numbers).

use std::time::Duration;

use anyhow::Context as _;
use dpu_probe::snapshot::{diff, Change, Snapshot, SnapshotDiff};
use dpu_proto::v1::{self, counters_client::CountersClient};
use tokio_stream::StreamExt as _;

use super::env::{rpc_error, Env};
use crate::cli::CountersArgs;
use crate::exit::Exit;
use crate::output;
use dpu_host::snapshot_wire::{
    names_nothing, object_names, snapshot_from_wire, unit_name, AgentSelector,
};

pub(crate) async fn run(env: &Env<'_>, args: &CountersArgs) -> anyhow::Result<Exit> {
    let selectors: Vec<v1::CounterSelector> =
        args.selectors.iter().map(AgentSelector::to_wire).collect();
    match args.watch {
        None => once(env, args, selectors).await,
        Some(secs) => watch(env, args, selectors, secs).await,
    }
}

/// One `Counters.Snapshot`.
async fn snapshot(
    env: &Env<'_>,
    selectors: Vec<v1::CounterSelector>,
) -> anyhow::Result<v1::CounterSnapshot> {
    Ok(CountersClient::new(env.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .snapshot(v1::SnapshotRequest { selectors })
        .await
        .map_err(rpc_error("Counters.Snapshot"))?
        .into_inner())
}

/// Most object names one error line lists per source.
const MAX_LISTED: usize = 20;

/// Ends the run (exit 2, one error line, nothing on stdout) when a selector the user gave
/// names nothing on the DPU, so a typo (`-s netdev:pf0hfp`) fails a script instead of
/// passing it with an empty table, even beside selectors that matched. The line names
/// every such selector as `-s` took it and, from one more snapshot of the source's
/// catch-all selector, what exists. An object that exists but could not be read is not
/// this: it stays a `not read:` line.
async fn refuse_names_nothing(
    env: &Env<'_>,
    asked: &[AgentSelector],
    errors: &[v1::SourceError],
) -> anyhow::Result<()> {
    let missing = names_nothing(asked, errors);
    if missing.is_empty() {
        return Ok(());
    }
    let mut groups: Vec<Missing> = Vec::new();
    for selector in missing {
        let all = selector.catch_all();
        match groups.iter_mut().find(|g| g.catch_all == all) {
            Some(group) => group.selectors.push(selector.to_string()),
            None => groups.push(Missing {
                catch_all: all,
                selectors: vec![selector.to_string()],
                existing: Err(String::new()),
            }),
        }
    }
    for group in &mut groups {
        group.existing = snapshot(env, vec![group.catch_all.to_wire()])
            .await
            .map(|answer| object_names(&answer.samples, &group.catch_all))
            .map_err(|e| dpu_probe::error_chain(e.as_ref()));
    }
    anyhow::bail!("{}", names_nothing_line(&groups))
}

/// Selectors of one source that named nothing, and what that source has.
#[derive(Debug)]
struct Missing {
    /// The source's catch-all selector (`netdev`), which listed what exists.
    catch_all: AgentSelector,
    /// The selectors as `-s` took them (`netdev:pf0hfp`).
    selectors: Vec<String>,
    /// The objects the catch-all answered for, or why it could not be asked.
    existing: Result<Vec<String>, String>,
}

/// "-s netdev:pf0hfp names nothing (netdev has: p0, pf0hpf, pf0vf0)", one clause per
/// source, at most [`MAX_LISTED`] names each.
fn names_nothing_line(groups: &[Missing]) -> String {
    let clauses: Vec<String> = groups
        .iter()
        .map(|g| {
            let flags: Vec<String> = g.selectors.iter().map(|s| format!("-s {s}")).collect();
            let verb = if flags.len() == 1 { "names" } else { "name" };
            let all = &g.catch_all;
            let has = match &g.existing {
                Ok(names) if names.is_empty() => format!("{all} has none"),
                Ok(names) if names.len() > MAX_LISTED => format!(
                    "{all} has: {}, and {} more",
                    names[..MAX_LISTED].join(", "),
                    names.len() - MAX_LISTED
                ),
                Ok(names) => format!("{all} has: {}", names.join(", ")),
                Err(why) => format!("what {all} has could not be listed: {why}"),
            };
            format!("{} {verb} nothing on the DPU ({has})", flags.join(", "))
        })
        .collect();
    clauses.join("; ")
}

async fn once(
    env: &Env<'_>,
    args: &CountersArgs,
    selectors: Vec<v1::CounterSelector>,
) -> anyhow::Result<Exit> {
    let wire = snapshot(env, selectors).await?;
    refuse_names_nothing(env, &args.selectors, &wire.errors).await?;
    if env.json() {
        output::json(&wire)?;
        return Ok(Exit::Success);
    }
    let snapshot = snapshot_from_wire(&wire);
    let mut table = output::table(["source", "object", "counter", "value", "unit"]);
    for s in snapshot
        .samples
        .iter()
        .filter(|s| !args.nonzero || s.value != 0)
    {
        table.add_row([
            s.key.source.as_str().to_owned(),
            s.key.object.clone(),
            s.key.counter.to_string(),
            output::grouped(s.value),
            unit_name(s.unit).to_owned(),
        ]);
    }
    output::print_table(&table)?;
    print_footer(&snapshot, &wire.errors)?;
    Ok(Exit::Success)
}

fn print_footer(snapshot: &Snapshot, errors: &[v1::SourceError]) -> anyhow::Result<()> {
    output::line(&format!(
        "{} counters read within {:?}{}",
        snapshot.samples.len(),
        snapshot.skew(),
        window_detail(snapshot)
    ))?;
    for e in errors {
        output::line(&format!("not read: {}", e.message))?;
    }
    Ok(())
}

/// Where the window went, per source, and whether a reading thread was preempted:
/// " (rdma 2.1ms, netdev 150µs; preempted, read 2 times)", or nothing from an agent that
/// does not report windows.
fn window_detail(snapshot: &Snapshot) -> String {
    let read = &snapshot.read;
    if read.windows.is_empty() {
        return String::new();
    }
    let windows: Vec<String> = read
        .windows
        .iter()
        .map(|w| format!("{} {:?}", w.source, w.length()))
        .collect();
    let mut notes = Vec::new();
    if read.preempted {
        notes.push("preempted".to_owned());
    }
    if read.attempts > 1 {
        notes.push(format!("read {} times", read.attempts));
    }
    if notes.is_empty() {
        format!(" ({})", windows.join(", "))
    } else {
        format!(" ({}; {})", windows.join(", "), notes.join(", "))
    }
}

async fn watch(
    env: &Env<'_>,
    args: &CountersArgs,
    selectors: Vec<v1::CounterSelector>,
    secs: f64,
) -> anyhow::Result<Exit> {
    let interval = Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--watch must be a positive number of seconds")?;
    // One more snapshot than intervals: the first is the baseline.
    let max_snapshots = args.count.map_or(0, |n| n.saturating_add(1));
    let mut stream = CountersClient::new(env.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .watch(v1::WatchRequest {
            selectors,
            interval: Some(dpu_proto::pbjson_types::Duration {
                seconds: i64::try_from(interval.as_secs()).unwrap_or(i64::MAX),
                nanos: i32::try_from(interval.subsec_nanos()).unwrap_or(0),
            }),
            max_snapshots,
        })
        .await
        .map_err(rpc_error("Counters.Watch"))?
        .into_inner();
    let mut previous: Option<Snapshot> = None;
    let mut discontinuities = false;
    let mut first = true;
    while let Some(item) = stream.next().await {
        let wire = item.map_err(rpc_error("Counters.Watch"))?;
        if first {
            // Decided on the first snapshot, before anything is printed: a watch does not
            // start over a typo. An object that goes away later is the watch's news
            // (`not read:`), not a usage error.
            first = false;
            refuse_names_nothing(env, &args.selectors, &wire.errors).await?;
        }
        if env.json() {
            // One snapshot per line: a stream scripts can read incrementally.
            let line = serde_json::to_string(&wire).context("cannot encode snapshot")?;
            output::line(&line)?;
            continue;
        }
        let current = snapshot_from_wire(&wire);
        match &previous {
            None => output::line(&format!(
                "baseline: {} counters read within {:?}{}; deltas every {interval:?}",
                current.samples.len(),
                current.skew(),
                window_detail(&current)
            ))?,
            Some(before) => {
                let d = diff(before, &current);
                discontinuities |= d.has_discontinuities();
                print_diff(&d, args.nonzero)?;
            }
        }
        for e in &wire.errors {
            output::line(&format!("not read: {}", e.message))?;
        }
        previous = Some(current);
    }
    // A reset or wrap means some deltas above were unknown: say so in the exit code.
    Ok(if discontinuities {
        Exit::Inconclusive
    } else {
        Exit::Success
    })
}

fn print_diff(d: &SnapshotDiff, nonzero: bool) -> anyhow::Result<()> {
    let secs = d.interval.as_secs_f64();
    let mut table = output::table(["source", "object", "counter", "delta", "per second", "unit"]);
    for entry in &d.deltas {
        let (delta, rate) = match entry.change {
            Change::Delta(0) if nonzero => continue,
            Change::Delta(v) => (output::grouped(v), rate(v, secs)),
            Change::Wrapped(v) => (format!("{} (wrapped)", output::grouped(v)), rate(v, secs)),
            Change::Reset => ("RESET".to_owned(), "-".to_owned()),
            Change::Level => (
                format!(
                    "{} -> {}",
                    output::grouped(entry.before.unwrap_or_default()),
                    output::grouped(entry.after.unwrap_or_default())
                ),
                "-".to_owned(),
            ),
            Change::Appeared => ("appeared".to_owned(), "-".to_owned()),
            Change::Vanished => ("vanished".to_owned(), "-".to_owned()),
            Change::Saturated => ("SATURATED".to_owned(), "-".to_owned()),
        };
        table.add_row([
            entry.key.source.as_str().to_owned(),
            entry.key.object.clone(),
            entry.key.counter.to_string(),
            delta,
            rate,
            unit_name(entry.unit).to_owned(),
        ]);
    }
    output::line(&format!("after {secs:.3} s:"))?;
    if d.rebooted {
        output::line("the DPU rebooted: every counter restarted")?;
    }
    if table.row_count() == 0 {
        return output::line("  no counter changed");
    }
    output::print_table(&table)
}

fn rate(delta: u64, secs: f64) -> String {
    if secs > 0.0 {
        // Precision loss above 2^53 is irrelevant for a display rate.
        #[allow(clippy::cast_precision_loss)]
        let per_sec = delta as f64 / secs;
        // Whole units grouped like the deltas, one decimal after them.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = per_sec.trunc() as u64;
        let tenth = format!("{:.1}", per_sec.fract());
        // 0.96 rounds to "1.0": carry it into the whole part.
        match tenth.strip_prefix("1.") {
            Some(t) => format!("{}.{t}", output::grouped(whole.saturating_add(1))),
            None => format!("{}{}", output::grouped(whole), &tenth[1..]),
        }
    } else {
        "-".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::{names_nothing_line, rate, Missing};
    use dpu_host::snapshot_wire::AgentSelector;

    fn missing(all: &str, selectors: &[&str], existing: Result<Vec<String>, String>) -> Missing {
        Missing {
            catch_all: all.parse::<AgentSelector>().expect("selector"),
            selectors: selectors.iter().map(|s| (*s).to_owned()).collect(),
            existing,
        }
    }

    #[test]
    fn the_error_line_names_each_selector_and_what_its_source_has() {
        let names = |n: &[&str]| Ok(n.iter().map(|s| (*s).to_owned()).collect());
        let line = names_nothing_line(&[
            missing(
                "netdev",
                &["netdev:nosuch"],
                names(&["p0", "pf0hpf", "pf0vf0"]),
            ),
            missing(
                "rdma",
                &["rdma:mlx5_9", "rdma:mlx5_0/9"],
                names(&["mlx5_0", "mlx5_0/1"]),
            ),
            missing("block", &["block:nvme9n1"], names(&[])),
            missing(
                "volume",
                &["volume:r9n1"],
                Err("agent went away".to_owned()),
            ),
        ]);
        assert_eq!(
            line,
            "-s netdev:nosuch names nothing on the DPU (netdev has: p0, pf0hpf, pf0vf0); \
             -s rdma:mlx5_9, -s rdma:mlx5_0/9 name nothing on the DPU (rdma has: mlx5_0, \
             mlx5_0/1); -s block:nvme9n1 names nothing on the DPU (block has none); \
             -s volume:r9n1 names nothing on the DPU (what volume has could not be listed: \
             agent went away)"
        );
    }

    #[test]
    fn a_long_list_is_cut_at_twenty_with_the_rest_counted() {
        let many: Vec<String> = (0..25).map(|i| format!("pf0vf{i:02}")).collect();
        let line = names_nothing_line(&[missing("netdev", &["netdev:x"], Ok(many))]);
        assert!(line.contains("pf0vf19, and 5 more)"), "{line}");
        assert!(!line.contains("pf0vf20"), "{line}");
    }

    #[test]
    fn rates_are_grouped_with_one_decimal() {
        assert_eq!(rate(12_566_370_612, 1.0), "12,566,370,612.0");
        assert_eq!(rate(3, 2.0), "1.5");
        assert_eq!(rate(1_999_999, 2.0), "999,999.5");
        // 0.97 per second rounds up into the whole part, never "0.1.0".
        assert_eq!(rate(97, 100.0), "1.0");
        assert_eq!(rate(5, 0.0), "-");
    }
}
