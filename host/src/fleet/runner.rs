//! Runs one command against every target at once: bounded, each target with its own
//! deadline, cancellable.
//!
//! Why this shape: a fleet command is only as useful as its slowest node allows. Each
//! target gets its own session (its own connection and TLS), at most `parallel` run at a
//! time, and a target that hangs runs out its own deadline while the others finish; a
//! refused connection or a failed call becomes that node's result, never the run's error.
//! On cancellation (Ctrl-C) what finished is kept and the rest are CANCELLED.

use std::future::Future;
use std::time::{Duration, Instant};

use dpu_probe::error_chain;
use futures_util::stream::{self, StreamExt as _};

use super::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};
use super::target::Target;
use crate::session::{AgentError, Session};

/// How a fleet run is paced.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How many targets are asked at once (at least 1).
    pub parallel: usize,
    /// How long each target gets for the whole command.
    pub deadline: Duration,
    /// The per-call limit inside it (connecting, each RPC).
    pub call_timeout: Duration,
}

/// The check id every unreachable node's problem carries.
pub const REACHABLE: &str = "agent.reachable";
/// The cause every unreachable node's problem carries: what groups them.
pub const UNREACHABLE_CAUSE: &str = "agent unreachable";

/// Runs `op` against every target (in a session of its own) and builds the report, rows
/// in target order. `cancel` resolving stops the run: finished rows are kept, the rest
/// are CANCELLED.
pub async fn run_fleet<Op, Fut>(
    command: &str,
    targets: &[Target],
    options: &RunOptions,
    cancel: impl Future<Output = ()>,
    op: Op,
) -> FleetReport
where
    Op: Fn(Session, &Target) -> Fut,
    Fut: Future<Output = Result<NodeOutcome, AgentError>>,
{
    let started = Instant::now();
    let mut rows: Vec<Option<NodeReport>> = vec![None; targets.len()];
    let runs = stream::iter(targets.iter().enumerate())
        .map(|(index, target)| {
            let session = Session::new(
                target.agent.clone(),
                target.tls.clone(),
                "/",
                options.call_timeout,
            );
            let run = op(session, target);
            async move { (index, one(target, options, run).await) }
        })
        .buffer_unordered(options.parallel.max(1));
    tokio::pin!(runs);
    tokio::pin!(cancel);
    let mut cancelled = false;
    loop {
        tokio::select! {
            next = runs.next() => match next {
                Some((index, row)) => rows[index] = Some(row),
                None => break,
            },
            () = &mut cancel => {
                cancelled = true;
                break;
            }
        }
    }
    let nodes = rows
        .into_iter()
        .zip(targets)
        .map(|(row, target)| row.unwrap_or_else(|| cancelled_row(target)))
        .collect();
    FleetReport::new(command, nodes, millis(started.elapsed()), cancelled)
}

/// One target's run under its deadline, made into its row.
async fn one(
    target: &Target,
    options: &RunOptions,
    run: impl Future<Output = Result<NodeOutcome, AgentError>>,
) -> NodeReport {
    let started = Instant::now();
    let deadline = options.deadline;
    let outcome = match tokio::time::timeout(deadline, run).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => failed(error, options.call_timeout),
        Err(_) => unreachable(format!(
            "no answer within its {} deadline",
            humantime::format_duration(deadline)
        )),
    };
    NodeReport {
        name: target.name.clone(),
        agent: target.agent.to_string(),
        status: outcome.status(),
        elapsed_ms: millis(started.elapsed()),
        problems: sorted(outcome.problems),
        facts: outcome.facts,
        compared: outcome.compared,
        skipped: outcome.skipped,
    }
}

fn sorted(mut problems: Vec<Problem>) -> Vec<Problem> {
    problems.sort_by_key(|p| std::cmp::Reverse(p.status));
    problems
}

/// A connection that could not be made, or a call the transport failed, is UNREACHABLE;
/// a call the agent answered with an error is a FAIL of that call. The detail says what a
/// person needs: a call that ran out its `--timeout`, a TLS handshake that failed, else
/// the error's chain.
fn failed(error: AgentError, call_timeout: Duration) -> NodeOutcome {
    let transport = match &error {
        AgentError::Connect(_) => true,
        AgentError::Rpc { status, .. } => matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
        ),
    };
    let rpc = match &error {
        AgentError::Rpc { rpc, status } => Some((*rpc, status.code())),
        AgentError::Connect(_) => None,
    };
    let detail = match &error {
        AgentError::Rpc { rpc, status } if status.message() == "Timeout expired" => format!(
            "{rpc}: no answer within the per-call --timeout of {}",
            humantime::format_duration(call_timeout)
        ),
        _ => {
            let chain = error_chain(&error);
            let tls = ["certificate", "handshake", "TLS", "tls"];
            if tls.iter().any(|t| chain.contains(t)) {
                format!("TLS handshake failed: {chain}")
            } else {
                chain
            }
        }
    };
    match rpc {
        Some((rpc, code)) if !transport => NodeOutcome {
            problems: vec![Problem::new(
                NodeStatus::Fail,
                "agent.call",
                format!("{rpc} answered {code:?}"),
                detail,
            )],
            ..NodeOutcome::default()
        },
        _ => unreachable(detail),
    }
}

/// An UNREACHABLE outcome with `detail`.
pub fn unreachable(detail: String) -> NodeOutcome {
    NodeOutcome {
        problems: vec![Problem::new(
            NodeStatus::Unreachable,
            REACHABLE,
            UNREACHABLE_CAUSE,
            detail,
        )],
        ..NodeOutcome::default()
    }
}

fn cancelled_row(target: &Target) -> NodeReport {
    NodeReport {
        name: target.name.clone(),
        agent: target.agent.to_string(),
        status: NodeStatus::Cancelled,
        elapsed_ms: 0.0,
        problems: vec![Problem::new(
            NodeStatus::Cancelled,
            "run.cancelled",
            "cancelled before it finished",
            "the run was interrupted",
        )],
        facts: serde_json::Value::Null,
        compared: Default::default(),
        skipped: None,
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
