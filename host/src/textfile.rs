//! A command's verdict and key numbers as a file for node_exporter's textfile collector
//! (`--metrics-file FILE.prom`), so a proof or check run from cron or a systemd timer on
//! every node becomes something Prometheus can alert on
//! (`dpu_proof_verdict{proof="storage",verdict="proven"} == 0`).
//!
//! The text is prometheus-client's (label values escaped as the exposition format
//! requires); the file is replaced atomically (a temporary file in the same directory,
//! synced, then renamed), so the collector never reads half a file. Verdicts are state sets:
//! one series per possible verdict, 1 for the one that happened, so an alert names the
//! state it wants without knowing an encoding.
//!
//! A foundation: each report renders its own series (`ProofReport::textfile`,
//! `FleetReport::textfile`, `PerfReport::textfile`, `check::textfile::of`) with the
//! [`Textfile`] builder, so this file imports none of the products.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

type Labels = Vec<(String, String)>;
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;
/// Whole numbers (states, counts) print as integers.
type CountFamily = Family<Labels, Gauge>;

/// Why the metrics file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    /// The metrics could not be encoded (a name the encoder refuses).
    #[error("cannot encode the metrics")]
    Encode(#[source] std::fmt::Error),
    /// The file or its temporary sibling could not be written or renamed.
    #[error("cannot write the metrics file {}", path.display())]
    Write {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Gauges by name and labels, rendered together.
#[derive(Default)]
pub struct Textfile {
    registry: Registry,
    families: BTreeMap<&'static str, GaugeFamily>,
    counts: BTreeMap<&'static str, CountFamily>,
}

impl std::fmt::Debug for Textfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Textfile")
            .field(
                "metrics",
                &self
                    .families
                    .keys()
                    .chain(self.counts.keys())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Textfile {
    /// Sets gauge `name{labels}` to `value`; the first use of a name registers it with `help`.
    pub fn gauge(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        registered(&mut self.registry, &mut self.families, name, help)
            .get_or_create(&owned(labels))
            .set(value);
    }

    /// Sets whole-number gauge `name{labels}` (a state, a count) to `value`; the first use
    /// of a name registers it with `help`.
    pub fn count(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: i64,
    ) {
        registered(&mut self.registry, &mut self.counts, name, help)
            .get_or_create(&owned(labels))
            .set(value);
    }

    /// One series per state of a state set, 1 for `current`, 0 for the others.
    pub fn state_set(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        state_label: &str,
        states: &[&str],
        current: &str,
    ) {
        for state in states {
            let mut all = labels.to_vec();
            all.push((state_label, state));
            self.count(name, help, &all, i64::from(*state == current));
        }
    }

    /// The exposition text.
    pub fn render(&self) -> Result<String, TextfileError> {
        let mut text = String::new();
        encode(&mut text, &self.registry).map_err(TextfileError::Encode)?;
        Ok(text)
    }

    /// Replaces `path` atomically with the exposition text.
    pub fn write_atomic(&self, path: &Path) -> Result<(), TextfileError> {
        let text = self.render()?;
        let write_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TextfileError::Write { path, source }
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "metrics".to_owned());
        // Not ending in `.prom`: the collector never reads the temporary file.
        let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(write_err(&tmp)(e));
        }
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            write_err(path)(e)
        })
    }
}

/// The family `name` of `families`, registered with `help` on first use.
fn registered<'a, M>(
    registry: &mut Registry,
    families: &'a mut BTreeMap<&'static str, Family<Labels, M>>,
    name: &'static str,
    help: &'static str,
) -> &'a Family<Labels, M>
where
    M: Default,
    Family<Labels, M>: Metric + Clone,
{
    families.entry(name).or_insert_with(|| {
        let family = Family::default();
        registry.register(name, help, family.clone());
        family
    })
}

fn owned(labels: &[(&str, &str)]) -> Labels {
    labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `at` as Unix time in seconds, the value of every `*_timestamp_seconds` series.
pub fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_set_marks_one_state_and_label_values_are_escaped() {
        let mut t = Textfile::default();
        t.state_set(
            "dpu_check_status",
            "help",
            &[("check", "a\"b\\c\nd")],
            "status",
            &["pass", "fail"],
            "fail",
        );
        let text = t.render().expect("renders");
        assert!(text.contains("# TYPE dpu_check_status gauge"), "{text}");
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_check_status{check="a\"b\\c\nd",status="fail"} 1"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_check_status{check="a\"b\\c\nd",status="pass"} 0"#),
            "{text}"
        );
    }

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("dpu.prom");
        std::fs::write(&path, "old").expect("seed");
        let mut t = Textfile::default();
        t.gauge("dpu_x", "help", &[], 2.5);
        t.count("dpu_y", "help", &[], 3);
        t.write_atomic(&path).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        assert!(text.lines().any(|l| l == "dpu_x 2.5"), "{text}");
        assert!(text.lines().any(|l| l == "dpu_y 3"), "{text}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A directory that does not exist is an error naming the path, not a panic.
        let err = t
            .write_atomic(&dir.path().join("missing/dpu.prom"))
            .expect_err("no such directory");
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
