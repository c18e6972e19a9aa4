//! A proof's verdict, its lines by outcome and when it ran, as textfile metrics
//! (`--metrics-file`): the proof knows its own series; [`crate::textfile`] only writes them.

use std::time::SystemTime;

use super::report::ProofReport;
use crate::accounting::{Outcome, Verdict};
use crate::textfile::{self, Textfile};

impl ProofReport {
    /// A proof's verdict, its lines by outcome, and when it ran.
    pub fn textfile(&self, at: SystemTime) -> Textfile {
        let mut t = Textfile::default();
        let proof = [("proof", self.proof)];
        let verdict = match self.verdict {
            Verdict::Proven => "proven",
            Verdict::NotProven => "not_proven",
            Verdict::Inconclusive => "inconclusive",
        };
        t.state_set(
            "dpu_proof_verdict",
            "The proof's verdict: 1 for the state it reached",
            &proof,
            "verdict",
            &["proven", "not_proven", "inconclusive"],
            verdict,
        );
        for (result, wanted) in [
            ("met", 0u8),
            ("not_met", 1),
            ("inconclusive", 2),
            ("waived", 3),
        ] {
            let count = self
                .lines
                .iter()
                .filter(|l| {
                    matches!(
                        (&l.outcome, wanted),
                        (Outcome::Met, 0)
                            | (Outcome::NotMet(_), 1)
                            | (Outcome::Inconclusive(_), 2)
                            | (Outcome::Waived(_), 3)
                    )
                })
                .count();
            t.count(
                "dpu_proof_lines",
                "Expectations of the proof by result",
                &[("proof", self.proof), ("result", result)],
                i64::try_from(count).unwrap_or(i64::MAX),
            );
        }
        t.count(
            "dpu_proof_witnesses",
            "Independent witnesses whose counters the verdict was judged on",
            &proof,
            i64::try_from(self.witnesses.len()).unwrap_or(i64::MAX),
        );
        t.gauge(
            "dpu_proof_last_run_timestamp_seconds",
            "When the proof ran (Unix time)",
            &proof,
            textfile::unix_seconds(at),
        );
        t
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn a_proof_report_becomes_its_verdict_lines_and_time() {
        let report = ProofReport {
            proof: "storage",
            verdict: Verdict::Inconclusive,
            workload: String::new(),
            lines: Vec::new(),
            notes: Vec::new(),
            trials: Vec::new(),
            witnesses: Vec::new(),
        };
        let text = report
            .textfile(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .render()
            .expect("renders");
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_verdict{proof="storage",verdict="inconclusive"} 1"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_verdict{proof="storage",verdict="proven"} 0"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_lines{proof="storage",result="met"} 0"#),
            "{text}"
        );
        assert!(
            text.contains("dpu_proof_last_run_timestamp_seconds{proof=\"storage\"} 1700000000"),
            "{text}"
        );
    }
}
