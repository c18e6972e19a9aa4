//! Commands that must run on each host itself (`fleet prove storage|switch`): dpuctl on the
//! host over ssh, its JSON read back and judged here.
//!
//! Why on the host: a proof measures traffic the host makes (an NVMe-oF read from the
//! host's block device, packets out of the host's interface) against the DPU's counters;
//! only the host can make that traffic. The host's dpuctl runs the single-node proof with
//! its own accounting engine, so the fleet's verdict is exactly the single node's.
//! The remote words are quoted once for the remote shell (`shlex`, as `roce::peer`
//! does) and run under the pair runner's watcher, which stops them when the session ends.

use std::time::Duration;

use super::report::{NodeOutcome, NodeStatus, Problem};
use super::target::Target;
use crate::remote::ssh::Ssh;
use crate::remote::watched::{Cancel, Ended, RemoteOutput};

/// How commands reach the hosts.
#[derive(Debug, Clone)]
pub struct OnHost {
    /// ssh, its port and identity.
    pub hop: Ssh,
    /// The dpuctl program on the hosts (a name on their PATH or a path).
    pub dpuctl: String,
}

/// The check id of a host that could not be reached over ssh.
pub const HOST_REACHABLE: &str = "host.reachable";

impl OnHost {
    /// The remote words: `dpuctl -o json [--agent HOST_AGENT] COMMAND...`.
    pub fn words(&self, target: &Target, command: &[String]) -> Vec<String> {
        let mut words = vec![self.dpuctl.clone(), "-o".into(), "json".into()];
        if let Some(agent) = &target.host_agent {
            words.push("--agent".into());
            words.push(agent.to_string());
        }
        words.extend(command.iter().cloned());
        words
    }

    /// Runs `prove PROOF ARGS...` on the target's host and judges the host's report:
    /// PROVEN is PASS, NOT PROVEN a FAIL naming the lines not met, INCONCLUSIVE stays
    /// INCONCLUSIVE. Blocking (the ssh session); the runner calls it on a blocking thread.
    pub fn prove(
        &self,
        target: &Target,
        proof: &str,
        args: &[String],
        limit: Duration,
        cancel: &Cancel,
    ) -> NodeOutcome {
        let mut command = vec!["prove".to_owned(), proof.to_owned()];
        command.extend(args.iter().cloned());
        self.run_judged(target, &command, limit, cancel, |output| {
            judge_proof(proof, output, limit)
        })
    }

    /// Runs dpuctl `command` on the target's host and judges what it printed with
    /// `judge`: SKIP without an `ssh` destination, UNREACHABLE when ssh cannot be run.
    /// Blocking (the ssh session).
    pub(super) fn run_judged(
        &self,
        target: &Target,
        command: &[String],
        limit: Duration,
        cancel: &Cancel,
        judge: impl FnOnce(&RemoteOutput) -> NodeOutcome,
    ) -> NodeOutcome {
        let Some(ssh) = &target.ssh else {
            return NodeOutcome {
                skipped: Some("no `ssh` destination in the inventory".to_owned()),
                ..NodeOutcome::default()
            };
        };
        let words = self.words(target, command);
        match self.hop.run_watched(ssh, &words, limit, cancel) {
            Err(e) => one(
                NodeStatus::Unreachable,
                HOST_REACHABLE,
                "host unreachable over ssh",
                dpu_probe::error_chain(&e),
            ),
            Ok(output) => judge(&output),
        }
    }
}

pub(super) fn one(
    status: NodeStatus,
    check: &str,
    cause: impl Into<String>,
    detail: String,
) -> NodeOutcome {
    NodeOutcome {
        problems: vec![Problem::new(status, check, cause, detail)],
        ..NodeOutcome::default()
    }
}

/// The last lines of stderr, for a detail.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// What a remote `dpuctl` run's end says before its report is read: `Some` outcome when
/// it was cancelled or ran past `limit` (the report, if any, is not the command's last
/// word), `None` with the exit code when it exited by itself.
pub(super) fn ended_early(
    ended: Ended,
    limit: Duration,
    what: &str,
) -> Result<Option<i32>, NodeOutcome> {
    match ended {
        Ended::Cancelled => Err(one(
            NodeStatus::Cancelled,
            "run.cancelled",
            "cancelled before it finished",
            format!("the run was interrupted; the host's {what} was stopped"),
        )),
        Ended::TimedOut => Err(one(
            NodeStatus::Unreachable,
            HOST_REACHABLE,
            "host ran past its deadline",
            format!(
                "the {what} did not end within {}; it was stopped",
                humantime::format_duration(limit)
            ),
        )),
        Ended::Exited(code) => Ok(code),
    }
}

/// The outcome of a remote `dpuctl` that printed no report: ssh could not reach the host
/// (255), dpuctl is not installed (127), or it failed, with the last lines it wrote.
pub(super) fn no_report(code: Option<i32>, stderr: &str, what: &str) -> NodeOutcome {
    let (status, check, cause) = match code {
        Some(255) => (
            NodeStatus::Unreachable,
            HOST_REACHABLE,
            "host unreachable over ssh".to_owned(),
        ),
        Some(127) => (
            NodeStatus::Fail,
            "host.dpuctl",
            "dpuctl is not installed on the host".to_owned(),
        ),
        _ => (
            NodeStatus::Fail,
            "host.dpuctl",
            format!("dpuctl on the host could not run the {what}"),
        ),
    };
    let detail = format!(
        "exit {}: {}",
        code.map_or("by signal".to_owned(), |c| c.to_string()),
        tail(stderr)
    );
    one(status, check, cause, detail)
}

/// Judges what the host's `dpuctl -o json prove PROOF` printed and how it ended.
pub fn judge_proof(proof: &str, output: &RemoteOutput, limit: Duration) -> NodeOutcome {
    let check = format!("prove.{proof}");
    let code = match ended_early(output.ended, limit, "proof") {
        Ok(code) => code,
        Err(outcome) => return outcome,
    };
    let report: Option<serde_json::Value> = serde_json::from_str(output.stdout.trim()).ok();
    let verdict = report
        .as_ref()
        .and_then(|r| r.get("verdict"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let Some(verdict) = verdict else {
        return no_report(code, &output.stderr, "proof");
    };
    let report = report.unwrap_or_default();
    let lines = report
        .get("lines")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let unmet = |result: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["outcome"]["result"] == result)
            .map(|l| {
                format!(
                    "{}: {}",
                    l["expectation"]["name"].as_str().unwrap_or("a line"),
                    l["outcome"]["reason"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    let (problems, compared) = match verdict.as_str() {
        "PROVEN" => (Vec::new(), "PROVEN"),
        "NOT_PROVEN" => (
            vec![Problem::new(
                NodeStatus::Fail,
                check,
                format!("{proof} offload NOT PROVEN"),
                unmet("not_met").join("; "),
            )],
            "NOT PROVEN",
        ),
        _ => (
            vec![Problem::new(
                NodeStatus::Inconclusive,
                check,
                format!("{proof} proof INCONCLUSIVE"),
                unmet("inconclusive").join("; "),
            )],
            "INCONCLUSIVE",
        ),
    };
    NodeOutcome {
        problems,
        compared: [(format!("{proof} proof"), compared.to_owned())].into(),
        facts: report,
        skipped: None,
    }
}

#[cfg(test)]
mod tests;
