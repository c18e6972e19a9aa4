use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use dpu_proto::Endpoint;

use super::{
    classify_chain, run_fleet, RunOptions, Unasked, HUNG_CAUSE, NOT_LISTENING_CAUSE, TLS_CAUSE,
};
use crate::agent::session::AgentError;
use crate::fleet::ops;
use crate::fleet::report::{FleetReport, NodeStatus};
use crate::fleet::target::Target;

fn target(name: &str, socket: &Path) -> Target {
    Target::new(name.to_owned(), Endpoint::Unix(socket.to_owned()))
}

async fn health(targets: &[Target], deadline: Duration, call_timeout: Duration) -> FleetReport {
    let options = RunOptions {
        parallel: 4,
        deadline,
        call_timeout,
    };
    run_fleet(
        "health",
        targets,
        &options,
        std::future::pending(),
        |s, _| ops::health(s),
    )
    .await
}

/// (cause, nodes) of every group.
fn groups(report: &FleetReport) -> Vec<(&str, Vec<&str>)> {
    report
        .groups
        .iter()
        .inspect(|g| {
            assert_eq!(g.check, super::REACHABLE, "{g:?}");
            assert_eq!(g.status, NodeStatus::Unreachable, "{g:?}");
        })
        .map(|g| {
            (
                g.cause.as_str(),
                g.nodes.iter().map(String::as_str).collect(),
            )
        })
        .collect()
}

fn detail<'a>(report: &'a FleetReport, node: &str) -> &'a str {
    let row = report.nodes.iter().find(|n| n.name == node).expect("row");
    &row.problems[0].detail
}

#[tokio::test]
async fn a_hung_agent_and_one_that_is_not_there_are_told_apart() {
    // Issue 35: both read "agent unreachable", one group. A hung agent accepts (the
    // kernel's backlog of a listener that never accepts) and answers nothing; a missing
    // socket and a stale one (its listener gone) are refused at once.
    let dir = tempfile::tempdir().expect("tempdir");
    let hung = dir.path().join("hung.sock");
    let _listener = UnixListener::bind(&hung).expect("bind");
    let stale = dir.path().join("stale.sock");
    drop(UnixListener::bind(&stale).expect("bind"));
    let targets = [
        target("hung", &hung),
        target("missing", &dir.path().join("nobody.sock")),
        target("stale", &stale),
    ];

    // The deadline runs out first.
    let report = health(
        &targets,
        Duration::from_millis(500),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        groups(&report),
        [
            (NOT_LISTENING_CAUSE, vec!["missing", "stale"]),
            (HUNG_CAUSE, vec!["hung"]),
        ],
        "{report:#?}"
    );
    assert!(detail(&report, "hung").contains("deadline"), "{report:#?}");

    // The per-call --timeout runs out first: the same cause, its own detail.
    let report = health(
        &targets,
        Duration::from_secs(30),
        Duration::from_millis(500),
    )
    .await;
    assert_eq!(
        groups(&report),
        [
            (NOT_LISTENING_CAUSE, vec!["missing", "stale"]),
            (HUNG_CAUSE, vec!["hung"]),
        ],
        "{report:#?}"
    );
    assert!(detail(&report, "hung").contains("timeout"), "{report:#?}");
}

#[test]
fn a_tls_failure_is_found_inside_the_io_error_that_carries_it() {
    // tokio-rustls hands rustls's error up inside an io::Error, whose source() skips it:
    // the classification looks inside.
    let rustls_error = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
    let io = std::io::Error::new(std::io::ErrorKind::InvalidData, rustls_error);
    assert_eq!(classify_chain(&io), Unasked::Tls);
    let alert = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        rustls::Error::AlertReceived(rustls::AlertDescription::UnknownCA),
    );
    assert_eq!(classify_chain(&alert), Unasked::Tls);
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(classify_chain(&refused), Unasked::NotListening);
    let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
    assert_eq!(classify_chain(&timed_out), Unasked::Hung);
    assert_eq!(classify_chain(&tonic::TimeoutExpired(())), Unasked::Hung);
    let other = std::io::Error::other("no route to host");
    assert_eq!(classify_chain(&other), Unasked::Other);
    assert_ne!(TLS_CAUSE, HUNG_CAUSE);
}

/// A run that blocks its thread for `block`, then reports that its call ran out the
/// channel's per-call timeout, as tonic does.
async fn late_call_timeout(
    block: Duration,
) -> Result<crate::fleet::report::NodeOutcome, AgentError> {
    std::thread::sleep(block);
    Err(AgentError::Rpc {
        rpc: "Inventory.GetSystem",
        status: tonic::Status::cancelled(super::TIMEOUT_EXPIRED),
    })
}

/// One target whose run blocks for `block` and then reports a per-call timeout, under
/// `deadline` with `call_timeout`.
async fn late_run(deadline: Duration, call_timeout: Duration, block: Duration) -> FleetReport {
    let targets = [target("late", Path::new("/nonexistent/late.sock"))];
    let options = RunOptions {
        parallel: 1,
        deadline,
        call_timeout,
    };
    run_fleet(
        "health",
        &targets,
        &options,
        std::future::pending(),
        |_, _| late_call_timeout(block),
    )
    .await
}

#[tokio::test]
async fn a_call_timeout_seen_after_the_deadline_is_the_deadline_it_ran_out() {
    // A late wake-up on a loaded machine (seen in CI's fleet tier: `--timeout 30
    // --deadline 10` reported "the per-call --timeout of 10s"): the call's own timeout,
    // held to the deadline, and the deadline have both run out when the run is polled,
    // and the run answers first. The limit the node ran out is its deadline.
    let deadline = Duration::from_millis(200);
    let report = late_run(deadline, deadline, deadline + Duration::from_millis(50)).await;
    assert_eq!(
        detail(&report, "late"),
        "no answer within its 200ms deadline"
    );
    assert_eq!(groups(&report), [(HUNG_CAUSE, vec!["late"])]);

    // Control: the same timeout well inside the deadline is the per-call timeout.
    let report = late_run(Duration::from_secs(30), deadline, Duration::ZERO).await;
    assert_eq!(
        detail(&report, "late"),
        "Inventory.GetSystem: no answer within the per-call --timeout of 200ms"
    );
    assert_eq!(groups(&report), [(HUNG_CAUSE, vec!["late"])]);
}
