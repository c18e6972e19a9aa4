//! Step a, storage ready: the exposure exists on the DPU (applied from the plan when it
//! gives the spec), its disk is mounted here, every
//! manifest file is there with its size and SHA-256, and the DPU's volume counted the
//! bytes those reads took. The reads bypass the page cache (`POSIX_FADV_DONTNEED` first),
//! so a file cached from an earlier run still goes to the disk and through the DPU.
//!
//! The volume's count is judged by the accounting engine, as every proof's is: an idle
//! window first measures the volume's background (another reader of the same volume), which
//! is allowed for and must be small next to the manifest; a counter that reset or vanished
//! makes the step INCONCLUSIVE, never "moved 0".

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use dpu_probe::snapshot::{diff, Sample, Snapshot, SnapshotDiff, Source, Unit};
use dpu_proto::v1::{self, storage_client::StorageClient};
use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
use sha2::{Digest as _, Sha256};
use tonic::transport::Channel;

use super::plan::{ManifestEntry, Plan};
use super::step_report::StepOutcome;
use dpu_host::accounting::{self, Evidence, Expectation, Line, Rule, Select, Side};
use dpu_host::agent::session::Session;

/// The idle window before the manifest is read, over which the volume's background is
/// measured: long enough to see a concurrent reader, short next to a demo run.
const IDLE_WINDOW: Duration = Duration::from_secs(1);

/// What the storage step leaves for the rest of the run's accounting.
#[derive(Debug, Clone)]
pub struct StorageAccount {
    /// The agent connection.
    pub channel: Channel,
    /// The io-stats name of the volume (`volumes/X` or the exposure's namespace).
    pub stats_name: String,
    /// The volume's read bytes when the run started.
    pub bytes_read_at_start: u64,
    /// The manifest's total bytes.
    pub manifest_bytes: u64,
}

/// The volume's cumulative read bytes.
pub async fn volume_bytes_read(channel: &Channel, name: &str) -> Result<u64, String> {
    StorageClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .get_io_stats(v1::GetIoStatsRequest {
            name: name.to_owned(),
        })
        .await
        .map(|r| r.into_inner().bytes_read)
        .map_err(|s| format!("Storage.GetIoStats({name}): {}", s.message()))
}

/// One reading of a volume's cumulative read bytes as a one-counter snapshot, taken `at`
/// (monotonic, from any fixed start), so it goes through the same engine as every other
/// count. SPDK's `bytes_read` is a 64-bit counter.
pub(crate) fn volume_reading(stats_name: &str, bytes_read: u64, at: Duration) -> Snapshot {
    Snapshot {
        taken_at: SystemTime::UNIX_EPOCH,
        monotonic_start: at,
        monotonic_end: at,
        boot_id: None,
        samples: vec![Sample::cumulative(
            Source::Volume,
            stats_name.to_owned(),
            "bytes_read",
            bytes_read,
            Unit::Bytes,
        )
        .with_width(64)],
        errors: Vec::new(),
        read: dpu_probe::snapshot::ReadReport::default(),
    }
}

/// The step's three readings of the volume: the idle window's start, its end (which is also
/// the reading before the manifest is read), and after the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeReadings {
    /// (bytes read, when) at the idle window's start.
    pub quiet_start: (u64, Duration),
    /// At its end, just before the manifest is read.
    pub before: (u64, Duration),
    /// After the manifest was read.
    pub after: (u64, Duration),
}

/// The engine's line for "the DPU volume counted the manifest's bytes": at least
/// `manifest_bytes` beyond the idle window's background, scaled to the read's duration.
pub fn judge_volume(stats_name: &str, manifest_bytes: u64, readings: &VolumeReadings) -> Line {
    let expectation = Expectation {
        name: format!("the DPU volume {stats_name} counted the manifest's bytes"),
        select: Select {
            side: Side::Dpu,
            source: Source::Volume,
            objects: vec![stats_name.to_owned()],
            counter: "bytes_read".to_owned(),
        },
        rule: Rule::AtLeast(manifest_bytes),
        why: "the files were read from the exposed disk, so the DPU's volume served them"
            .to_owned(),
        if_failed: "the files did not come through the DPU path".to_owned(),
        traffic: manifest_bytes,
        waiver: None,
        unformed: None,
    };
    let reading = |(bytes, at): (u64, Duration)| volume_reading(stats_name, bytes, at);
    // The host has no line here; its side is empty.
    let nothing = SnapshotDiff {
        interval: Duration::ZERO,
        rebooted: false,
        deltas: Vec::new(),
    };
    let evidence = Evidence {
        host: nothing.clone(),
        dpu: diff(&reading(readings.before), &reading(readings.after)),
        host_background: Some(nothing),
        dpu_background: Some(diff(
            &reading(readings.quiet_start),
            &reading(readings.before),
        )),
        far_end: None,
        far_end_background: None,
    };
    let (_, mut lines) = accounting::evaluate(&[expectation], &evidence);
    lines.remove(0)
}

/// The source device of the filesystem mounted exactly at `mount_point`, from
/// `mountinfo` (fields after ` - `: fstype, source).
pub fn mount_source(mountinfo: &str, mount_point: &Path) -> Option<(String, String)> {
    let want = mount_point.to_string_lossy();
    mountinfo.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let point = fields.get(4)?.replace("\\040", " ");
        if point != want {
            return None;
        }
        let dash = fields.iter().position(|f| *f == "-")?;
        Some((
            (*fields.get(dash + 2)?).to_owned(),
            (*fields.get(dash + 1)?).to_owned(),
        ))
    })
}

/// Reads `path` from the disk (cache dropped first), returning (bytes, sha256 hex).
fn read_uncached(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    // Best effort: a filesystem that ignores the advice still gives correct content.
    let _ = posix_fadvise(&file, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
    let mut hasher = Sha256::new();
    let mut buf = vec![0_u8; 1 << 20];
    let mut total = 0_u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((total, hex))
}

/// Checks every manifest entry under `base`; returns (bytes read, problems).
pub fn verify_manifest(base: &Path, manifest: &[ManifestEntry]) -> (u64, Vec<String>) {
    let mut read = 0;
    let mut problems = Vec::new();
    for entry in manifest {
        let path: PathBuf = base.join(&entry.path);
        match read_uncached(&path) {
            Err(e) => problems.push(format!("{}: {e}", path.display())),
            Ok((bytes, sha)) => {
                read += bytes;
                if bytes != entry.bytes {
                    problems.push(format!(
                        "{}: {bytes} bytes, the manifest says {}",
                        path.display(),
                        entry.bytes
                    ));
                } else if sha != entry.sha256 {
                    problems.push(format!(
                        "{}: sha256 {sha}, the manifest says {}",
                        path.display(),
                        entry.sha256
                    ));
                }
            }
        }
    }
    (read, problems)
}

/// Runs the step. The account is returned whenever the agent answered, so the review can
/// still show the volume's counters after a failure.
pub async fn run(session: &Session, plan: &Plan) -> (StepOutcome, Option<StorageAccount>) {
    let mut out = StepOutcome::default();
    let endpoint: dpu_proto::Endpoint = match plan.storage.agent.parse() {
        Ok(e) => e,
        Err(e) => return (out.fail(format!("storage.agent: {e}")), None),
    };
    // The session's own connection when the plan names the session's agent; else one to
    // the plan's, with the session's client certificate and timeout.
    let plans_agent;
    let agent = if &endpoint == session.agent().endpoint() {
        session.agent()
    } else {
        plans_agent = session.agent().to(endpoint);
        &plans_agent
    };
    let channel = agent
        .channel()
        .await
        .map_err(|e| dpu_probe::error_chain(&e));
    let channel = match channel {
        Ok(c) => c,
        Err(e) => {
            return (
                out.fail(format!("the agent at {}: {e}", plan.storage.agent)),
                None,
            )
        }
    };
    let exposure_name = if plan.storage.exposure.starts_with("exposures/") {
        plan.storage.exposure.clone()
    } else {
        format!("exposures/{}", plan.storage.exposure)
    };
    let mut client =
        StorageClient::new(channel.clone()).max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES);
    let reply = match plan
        .storage
        .exposure_spec
        .as_ref()
        .map(|v| serde_json::from_value::<v1::ExposureSpec>(v.clone()))
    {
        // Validated when the plan was loaded; kept as an error, not a panic.
        Some(Err(e)) => return (out.fail(format!("storage.exposure_spec: {e}")), None),
        Some(Ok(spec)) => {
            let id = exposure_name.trim_start_matches("exposures/").to_owned();
            out.note(format!(
                "applied {exposure_name} from the plan's exposure_spec"
            ));
            client
                .apply_exposure(v1::ApplyExposureRequest {
                    exposure_id: id,
                    spec: Some(spec),
                    options: None,
                })
                .await
        }
        None => {
            client
                .get_exposure(v1::GetExposureRequest {
                    name: exposure_name.clone(),
                })
                .await
        }
    };
    let exposure = match reply {
        Ok(e) => e.into_inner(),
        Err(s) => {
            let hint = if plan.storage.exposure_spec.is_none() {
                " (create it with `dpuctl storage expose`, or give [storage] exposure_spec)"
            } else {
                ""
            };
            return (
                out.fail(format!("{exposure_name} on the DPU: {}{hint}", s.message())),
                None,
            );
        }
    };
    out.note(format!(
        "{exposure_name}: namespace {}, controller {}{}",
        exposure.namespace,
        if exposure.controller.is_empty() {
            "-"
        } else {
            &exposure.controller
        },
        if exposure.host_device.is_empty() {
            String::new()
        } else {
            format!(", host device {}", exposure.host_device)
        }
    ));
    let stats_name = plan
        .storage
        .volume
        .as_ref()
        .map(|v| {
            if v.starts_with("volumes/") {
                v.clone()
            } else {
                format!("volumes/{v}")
            }
        })
        .unwrap_or_else(|| exposure.namespace.clone());
    let clock = Instant::now();
    let quiet_start = match volume_bytes_read(&channel, &stats_name).await {
        Ok(b) => (b, clock.elapsed()),
        Err(e) => return (out.fail(e), None),
    };
    tokio::time::sleep(IDLE_WINDOW).await;
    let before = match volume_bytes_read(&channel, &stats_name).await {
        Ok(b) => (b, clock.elapsed()),
        Err(e) => return (out.fail(e), None),
    };
    let start = before.0;
    let manifest_bytes = plan.storage.manifest.iter().map(|m| m.bytes).sum();
    let account = StorageAccount {
        channel: channel.clone(),
        stats_name: stats_name.clone(),
        bytes_read_at_start: start,
        manifest_bytes,
    };
    // Mounted, and from the exposed device when the DPU names it.
    let mountinfo =
        std::fs::read_to_string(session.sys_root().proc("self/mountinfo")).unwrap_or_default();
    match mount_source(&mountinfo, &plan.storage.mount_point) {
        None => {
            return (
                out.fail(format!(
                    "{} is not a mount point",
                    plan.storage.mount_point.display()
                )),
                Some(account),
            )
        }
        Some((source, fstype)) => {
            out.note(format!(
                "{} mounted from {source} ({fstype})",
                plan.storage.mount_point.display()
            ));
            let exposed = &exposure.host_device;
            if !exposed.is_empty()
                && source.trim_start_matches("/dev/") != exposed.trim_start_matches("/dev/")
            {
                return (
                    out.fail(format!(
                        "{} is mounted from {source}, but the exposure's disk is {exposed}",
                        plan.storage.mount_point.display()
                    )),
                    Some(account),
                );
            }
        }
    }
    let (read, problems) = verify_manifest(&plan.storage.mount_point, &plan.storage.manifest);
    out.note(format!(
        "manifest: {} files, {read} bytes read and hashed",
        plan.storage.manifest.len()
    ));
    if let Some(first) = problems.first() {
        let more = problems.len() - 1;
        for p in &problems {
            out.note(p.clone());
        }
        return (
            out.fail(format!(
                "the disk does not match the manifest: {first}{}",
                if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                }
            )),
            Some(account),
        );
    }
    let after = match volume_bytes_read(&channel, &stats_name).await {
        Ok(b) => (b, clock.elapsed()),
        Err(e) => return (out.fail(e), Some(account)),
    };
    let readings = VolumeReadings {
        quiet_start,
        before,
        after,
    };
    let line = judge_volume(&stats_name, manifest_bytes, &readings);
    out.note(format!(
        "{stats_name} counted {} bytes read on the DPU during the check ({} in the {:.1} s idle \
         window before it, allowed for)",
        line.delta
            .map_or_else(|| "an unknown number of".to_owned(), |d| d.to_string()),
        line.background
            .map_or_else(|| "?".to_owned(), |b| b.to_string()),
        IDLE_WINDOW.as_secs_f64()
    ));
    match line.outcome {
        accounting::Outcome::Met | accounting::Outcome::Waived(_) => {
            out.headline = format!(
                "{} files ({manifest_bytes} bytes) match the manifest and came through the DPU",
                plan.storage.manifest.len()
            );
            (out, Some(account))
        }
        accounting::Outcome::NotMet(_) => {
            let counted = line.net.unwrap_or_default();
            (
                out.fail(format!(
                    "the DPU's volume counted {counted} of the {manifest_bytes} bytes read: the \
                     files did not come through the DPU path"
                )),
                Some(account),
            )
        }
        accounting::Outcome::Inconclusive(why) => (
            out.inconclusive(format!("the DPU's volume count cannot be judged: {why}")),
            Some(account),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_source_comes_from_the_exact_mount_point() {
        let mi = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                  40 22 259:0 / /mnt/nvme\\040demo rw,relatime - xfs /dev/nvme0n1 rw\n\
                  41 40 0:50 / /mnt/nvme\\040demo/sub rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mount_source(mi, Path::new("/mnt/nvme demo")),
            Some(("/dev/nvme0n1".to_owned(), "xfs".to_owned()))
        );
        assert_eq!(mount_source(mi, Path::new("/mnt")), None);
    }

    fn readings(quiet: (u64, u64), after: u64, read_secs: u64) -> VolumeReadings {
        VolumeReadings {
            quiet_start: (quiet.0, Duration::ZERO),
            before: (quiet.1, Duration::from_secs(1)),
            after: (after, Duration::from_secs(1 + read_secs)),
        }
    }

    #[test]
    fn the_volume_count_is_judged_by_the_engine() {
        const MANIFEST: u64 = 1 << 30;
        // The manifest's bytes on a quiet volume: met.
        let line = judge_volume("volumes/v", MANIFEST, &readings((5, 5), 5 + MANIFEST, 2));
        assert_eq!(line.outcome, accounting::Outcome::Met, "{line:?}");
        // Too few bytes: not met.
        let line = judge_volume(
            "volumes/v",
            MANIFEST,
            &readings((5, 5), 5 + MANIFEST / 2, 2),
        );
        assert!(
            matches!(line.outcome, accounting::Outcome::NotMet(_)),
            "{line:?}"
        );
        // Another reader of the volume: its idle-window rate, over the read's 2 s, is most of
        // the window's count, so the manifest's bytes cannot be told from it.
        let burst = MANIFEST / 2;
        let line = judge_volume(
            "volumes/v",
            MANIFEST,
            &readings((0, burst), burst + MANIFEST + 2 * burst, 2),
        );
        assert!(
            matches!(&line.outcome, accounting::Outcome::Inconclusive(why) if why.contains("background")),
            "{line:?}"
        );
    }

    #[test]
    fn a_reset_volume_counter_is_inconclusive_not_moved_nothing() {
        // Before: 10 GiB; after the read: 1 KiB (SNAP restarted and the counter began again).
        let line = judge_volume(
            "volumes/v",
            1 << 20,
            &readings((10 << 30, 10 << 30), 1024, 2),
        );
        assert!(
            matches!(&line.outcome, accounting::Outcome::Inconclusive(why) if why.contains("bytes_read")),
            "{line:?}"
        );
        assert_eq!(line.delta, None);
    }

    #[test]
    fn manifest_mismatches_are_named() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("a"), b"abc").expect("write");
        let good = ManifestEntry {
            path: "a".into(),
            bytes: 3,
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into(),
        };
        assert_eq!(
            verify_manifest(dir.path(), std::slice::from_ref(&good)),
            (3, vec![])
        );
        let wrong = ManifestEntry {
            sha256: "00".repeat(32),
            ..good.clone()
        };
        let missing = ManifestEntry {
            path: "b".into(),
            ..good
        };
        let (read, problems) = verify_manifest(dir.path(), &[wrong, missing]);
        assert_eq!(read, 3);
        assert!(problems[0].contains("sha256"), "{problems:?}");
        assert!(problems[1].contains("No such file"), "{problems:?}");
    }
}
