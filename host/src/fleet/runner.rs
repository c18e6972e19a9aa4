//! Runs one command against every target at once: bounded, each target with its own
//! deadline, cancellable.
//!
//! Why this shape: a fleet command is only as useful as its slowest node allows. Each
//! target gets its own agent connection (and TLS), at most `parallel` run at a
//! time, and a target that hangs runs out its own deadline while the others finish; a
//! refused connection or a failed call becomes that node's result, never the run's error.
//! On cancellation (Ctrl-C) what finished is kept and the rest are CANCELLED.

use std::future::Future;
use std::time::{Duration, Instant};

use dpu_probe::error_chain;
use futures_util::stream::{self, StreamExt as _};

use super::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};
use super::target::Target;
use crate::agent::dial_cause::DialCause;
use crate::agent::session::{AgentConnection, AgentError};

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
/// The cause of an unreachable node that fits none of the kinds below (a name that does
/// not resolve, no route, a host-side failure): what groups them.
pub const UNREACHABLE_CAUSE: &str = "agent unreachable";
/// The cause of a node whose agent took the connection and did not answer within the
/// per-call `--timeout` or the `--deadline` (a stopped or hung agent).
pub const HUNG_CAUSE: &str = "agent did not answer in time";
/// The cause of a node whose TLS handshake failed (its certificate not trusted by the
/// inventory's CA, or ours not by it).
pub const TLS_CAUSE: &str = "TLS handshake failed";
/// The cause of a node where nothing listens: the connection was refused or the Unix
/// socket does not exist.
pub const NOT_LISTENING_CAUSE: &str = "no agent listening (connection refused or socket missing)";
/// The cause of a node whose Unix socket refuses this user.
pub const PERMISSION_CAUSE: &str = "permission denied on the agent's socket";

/// The ways a node can fail to be asked, each grouped on its own: they have different
/// fixes (restart a hung agent, fix a CA, start an agent or fix the address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unasked {
    Hung,
    Tls,
    NotListening,
    PermissionDenied,
    Other,
}

impl Unasked {
    fn cause(self) -> &'static str {
        match self {
            Self::Hung => HUNG_CAUSE,
            Self::Tls => TLS_CAUSE,
            Self::NotListening => NOT_LISTENING_CAUSE,
            Self::PermissionDenied => PERMISSION_CAUSE,
            Self::Other => UNREACHABLE_CAUSE,
        }
    }
}

/// Runs `op` against every target (on a connection of its own) and builds the report, rows
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
    Op: Fn(AgentConnection, &Target) -> Fut,
    Fut: Future<Output = Result<NodeOutcome, AgentError>>,
{
    let started = Instant::now();
    let mut rows: Vec<Option<NodeReport>> = vec![None; targets.len()];
    let runs = stream::iter(targets.iter().enumerate())
        .map(|(index, target)| {
            let agent = AgentConnection::new(
                target.agent.clone(),
                target.tls.clone(),
                options.call_timeout,
            );
            let run = op(agent, target);
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
    let ran_out = || {
        unasked(
            Unasked::Hung,
            format!(
                "no answer within its {} deadline",
                humantime::format_duration(deadline)
            ),
        )
    };
    let outcome = match tokio::time::timeout(deadline, run).await {
        Ok(Ok(outcome)) => outcome,
        // The call's own timeout and the deadline both ran out (the call timeout is held
        // to the deadline, and a late wake-up on a loaded machine sees both at once; the
        // run is polled first): the node's deadline is the limit it ran out, not a
        // `--timeout` the user set longer.
        Ok(Err(error)) if is_call_timeout(&error) && started.elapsed() >= deadline => ran_out(),
        Ok(Err(error)) => failed(error, options.call_timeout),
        Err(_) => ran_out(),
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

/// A connection that could not be made, or a call the transport failed, is UNREACHABLE,
/// with its kind's cause ([`classify`]); a call the agent answered with an error is a
/// FAIL of that call. The detail says what a person needs: a call that ran out its
/// `--timeout`, a TLS handshake that failed, else the error's chain.
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
    let kind = classify(&error);
    let detail = match &error {
        AgentError::Rpc { rpc, .. } if is_call_timeout(&error) => format!(
            "{rpc}: no answer within the per-call --timeout of {}",
            humantime::format_duration(call_timeout)
        ),
        _ if kind == Unasked::Tls => format!("TLS handshake failed: {}", error_chain(&error)),
        _ => error_chain(&error),
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
        _ => unasked(kind, detail),
    }
}

/// Whether the call ran out the channel's per-call timeout.
fn is_call_timeout(error: &AgentError) -> bool {
    matches!(error, AgentError::Rpc { status, .. } if status.message() == TIMEOUT_EXPIRED)
}

/// tonic's message for a call that ran out the channel's timeout (`tonic::TimeoutExpired`
/// made into a status, which drops the error itself).
const TIMEOUT_EXPIRED: &str = "Timeout expired";

/// Which kind of unreachable `error` is: the dial's own cause first (agent/dial_cause.rs:
/// missing socket, refused, permission), then a call that ran out its time, then what the
/// error chain holds.
fn classify(error: &AgentError) -> Unasked {
    if let Some(cause) = error.dial_cause() {
        return match cause {
            DialCause::SocketMissing { .. } | DialCause::Refused { .. } => Unasked::NotListening,
            DialCause::PermissionDenied { .. } => Unasked::PermissionDenied,
        };
    }
    match error {
        AgentError::Rpc { status, .. }
            if status.code() == tonic::Code::DeadlineExceeded
                || status.message() == TIMEOUT_EXPIRED =>
        {
            Unasked::Hung
        }
        AgentError::Rpc { status, .. } => classify_chain(status),
        AgentError::Connect(e) => classify_chain(e),
    }
}

/// The kind an error chain shows: a rustls error anywhere is TLS (it wins: a handshake
/// that failed is not also a timeout), a timeout is hung, a refused connection (a call
/// whose reconnect was refused) is nothing listening; a missing socket is the dial's
/// cause, never looked for here (a TLS file not found is not a missing agent). An `io::Error`'s `source()` skips the error it wraps (tokio-rustls
/// wraps rustls's so), so the walk goes into it with `get_ref`.
fn classify_chain(err: &(dyn std::error::Error + 'static)) -> Unasked {
    use std::io::ErrorKind;
    let mut found = Unasked::Other;
    let mut link = Some(err);
    while let Some(e) = link {
        if e.is::<rustls::Error>() {
            return Unasked::Tls;
        }
        if e.is::<tonic::TimeoutExpired>() || e.is::<tokio::time::error::Elapsed>() {
            found = Unasked::Hung;
        }
        link = e.source();
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::TimedOut => found = Unasked::Hung,
                ErrorKind::ConnectionRefused if found == Unasked::Other => {
                    found = Unasked::NotListening;
                }
                _ => {}
            }
            if let Some(inner) = io.get_ref() {
                link = Some(inner);
            }
        }
    }
    found
}

/// An UNREACHABLE outcome of no particular kind ([`UNREACHABLE_CAUSE`]) with `detail`.
pub fn unreachable(detail: String) -> NodeOutcome {
    unasked(Unasked::Other, detail)
}

/// An UNREACHABLE outcome of `kind` with `detail`.
fn unasked(kind: Unasked, detail: String) -> NodeOutcome {
    NodeOutcome {
        problems: vec![Problem::new(
            NodeStatus::Unreachable,
            REACHABLE,
            kind.cause(),
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

#[cfg(test)]
mod tests;
