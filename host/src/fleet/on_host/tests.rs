use std::path::PathBuf;
use std::time::Duration;

use dpu_proto::Endpoint;

use super::{judge_proof, OnHost};
use crate::fleet::report::NodeStatus;
use crate::fleet::target::Target;
use crate::remote::ssh::Ssh;
use crate::remote::watched::{Ended, RemoteOutput};

fn output(stdout: &str, stderr: &str, ended: Ended) -> RemoteOutput {
    RemoteOutput {
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        ended,
    }
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn the_hosts_verdict_is_the_nodes() {
    let proven = judge_proof(
        "storage",
        &output(
            r#"{"proof":"storage","verdict":"PROVEN","lines":[]}"#,
            "",
            Ended::Exited(Some(0)),
        ),
        LIMIT,
    );
    assert_eq!(proven.status(), NodeStatus::Pass);
    assert_eq!(proven.compared["storage proof"], "PROVEN");

    let not = judge_proof(
        "storage",
        &output(
            r#"{"verdict":"NOT_PROVEN","lines":[
              {"expectation":{"name":"DPU RDMA port received the read"},"outcome":{"result":"not_met","reason":"the read went over TCP"}},
              {"expectation":{"name":"host NIC stayed quiet"},"outcome":{"result":"met"}}]}"#,
            "",
            Ended::Exited(Some(1)),
        ),
        LIMIT,
    );
    assert_eq!(not.status(), NodeStatus::Fail);
    assert_eq!(not.problems[0].cause, "storage offload NOT PROVEN");
    assert_eq!(
        not.problems[0].detail, "DPU RDMA port received the read: the read went over TCP",
        "only the line not met"
    );

    let unsure = judge_proof(
        "switch",
        &output(
            r#"{"verdict":"INCONCLUSIVE","lines":[]}"#,
            "",
            Ended::Exited(Some(3)),
        ),
        LIMIT,
    );
    assert_eq!(unsure.status(), NodeStatus::Inconclusive);
}

#[test]
fn a_host_that_cannot_run_the_proof_is_named_for_why() {
    let ssh_failed = judge_proof(
        "storage",
        &output(
            "",
            "ssh: connect to host gpu-01 port 22: Connection refused\n",
            Ended::Exited(Some(255)),
        ),
        LIMIT,
    );
    assert_eq!(ssh_failed.status(), NodeStatus::Unreachable);
    assert!(ssh_failed.problems[0].detail.contains("Connection refused"));

    let missing = judge_proof(
        "storage",
        &output("", "sh: 1: dpuctl: not found\n", Ended::Exited(Some(127))),
        LIMIT,
    );
    assert_eq!(
        missing.problems[0].cause,
        "dpuctl is not installed on the host"
    );

    let refused = judge_proof(
        "storage",
        &output(
            "",
            "dpuctl: error: cannot reach the agent\n",
            Ended::Exited(Some(2)),
        ),
        LIMIT,
    );
    assert_eq!(refused.status(), NodeStatus::Fail);
    assert_eq!(
        refused.problems[0].detail,
        "exit 2: dpuctl: error: cannot reach the agent"
    );

    let slow = judge_proof("storage", &output("", "", Ended::TimedOut), LIMIT);
    assert_eq!(slow.status(), NodeStatus::Unreachable);
    assert!(
        slow.problems[0].detail.contains("1m"),
        "{:?}",
        slow.problems
    );
}

#[test]
fn the_host_agent_is_passed_and_nothing_runs_without_ssh() {
    let on_host = OnHost {
        hop: Ssh::new(PathBuf::from("ssh"), None, None),
        dpuctl: "dpuctl".into(),
    };
    let mut target = Target::new("gpu-01", Endpoint::Unix("/s".into()));
    target.host_agent = Some("tcp:192.168.100.2:50051".parse().expect("endpoint"));
    assert_eq!(
        on_host.words(&target, &["prove".into(), "storage".into()]),
        [
            "dpuctl",
            "-o",
            "json",
            "--agent",
            "tcp:192.168.100.2:50051",
            "prove",
            "storage"
        ]
    );
    let skipped = on_host.prove(&target, "storage", &[], LIMIT, &Default::default());
    assert_eq!(skipped.status(), NodeStatus::Skip);
}
