//! The control-socket client against a scripted daemon: socket discovery through the pid
//! file, the request shape, OVS's error text, a restart under a new pid.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

use super::{parse_list_commands, Error, Unixctl};
use crate::flow::DumpType;

const LONG: Duration = Duration::from_secs(10);

/// A daemon with pid `pid` in `rundir` answering each request with `answer(request)`.
fn daemon(rundir: &Path, pid: u32, answer: fn(&Value) -> Value) -> JoinHandle<Vec<Value>> {
    std::fs::write(rundir.join("ovs-vswitchd.pid"), format!("{pid}\n")).expect("pid file");
    let listener =
        UnixListener::bind(rundir.join(format!("ovs-vswitchd.{pid}.ctl"))).expect("bind");
    tokio::spawn(async move {
        let (mut stream, _) = tokio::time::timeout(LONG, listener.accept())
            .await
            .expect("client connects")
            .expect("accept");
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let mut chunk = [0_u8; 4096];
        loop {
            let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
            if let Some(Ok(req)) = values.next() {
                let end = values.byte_offset();
                buf.drain(..end);
                let mut reply = answer(&req);
                reply["id"] = req["id"].clone();
                stream
                    .write_all(reply.to_string().as_bytes())
                    .await
                    .expect("write");
                seen.push(req);
                continue;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return seen,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
}

fn answer(req: &Value) -> Value {
    match req["method"].as_str() {
        Some("version") => json!({"result": "ovs-vswitchd (Open vSwitch) 3.1.0\n", "error": null}),
        Some("dpctl/dump-flows") => json!({"result": "flow-dump from the main thread:\n",
            "error": null}),
        Some(other) => json!({"result": null, "error": format!(
            "\"{other}\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n")}),
        None => json!({"result": null, "error": "no method"}),
    }
}

#[tokio::test]
async fn commands_reach_the_socket_named_by_the_pid_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = daemon(dir.path(), 4242, answer);
    let ctl = Unixctl::vswitchd(dir.path());
    assert_eq!(
        ctl.socket_path().expect("pid file read"),
        dir.path().join("ovs-vswitchd.4242.ctl")
    );
    assert_eq!(
        ctl.version().await.expect("version"),
        "ovs-vswitchd (Open vSwitch) 3.1.0"
    );
    let flows = ctl
        .dump_flows()
        .more()
        .names(true)
        .flow_type(DumpType::Offloaded)
        .execute()
        .await
        .expect("dump");
    assert_eq!(flows, "flow-dump from the main thread:\n");
    let err = ctl
        .command("frob")
        .arg("x")
        .execute()
        .await
        .expect_err("unknown");
    assert!(
        matches!(&err, Error::Command { command, message } if command == "frob"
            && message == "\"frob\" is not a valid command (use \"list-commands\" to see a list of valid commands)"),
        "{err:?}"
    );
    assert!(!err.is_transient());
    drop(ctl);
    let seen = tokio::time::timeout(LONG, server)
        .await
        .expect("daemon ends")
        .expect("daemon passes");
    assert_eq!(seen[0]["params"], json!([]));
    assert_eq!(
        seen[1],
        json!({"method": "dpctl/dump-flows", "params": ["-m", "--names", "type=offloaded"],
            "id": seen[1]["id"]})
    );
    assert_eq!(seen[2]["params"], json!(["x"]));
}

/// ovs-vswitchd 3.1 with the userspace datapath only, as seen in the OVS tier.
fn userspace_only(req: &Value) -> Value {
    match req["params"][0].as_str() {
        Some("system@ovs-system") => json!({"result": null, "error":
            "opening datapath system@ovs-system failed (No such file or directory)\n"}),
        _ => json!({"result": "netdev@ovs-netdev:\n  lookups: hit:0 missed:0 lost:0\n",
            "error": null}),
    }
}

#[tokio::test]
async fn a_datapath_that_cannot_be_opened_is_told_in_ovs_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = daemon(dir.path(), 77, userspace_only);
    let ctl = Unixctl::vswitchd(dir.path());
    assert_eq!(
        ctl.datapath_open_error("").await.expect("asked").as_deref(),
        Some("opening datapath system@ovs-system failed (No such file or directory)")
    );
    assert_eq!(
        ctl.datapath_open_error("netdev").await.expect("asked"),
        None
    );
    drop(ctl);
    let seen = tokio::time::timeout(LONG, server)
        .await
        .expect("daemon ends")
        .expect("daemon passes");
    assert_eq!(seen[0]["method"], "dpctl/show");
    assert_eq!(seen[0]["params"], json!(["system@ovs-system"]));
    assert_eq!(seen[1]["params"], json!(["netdev@ovs-netdev"]));
}

#[tokio::test]
async fn a_restarted_daemon_is_found_under_its_new_pid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = daemon(dir.path(), 100, answer);
    let ctl = Unixctl::vswitchd(dir.path());
    ctl.version().await.expect("first daemon");
    let second = daemon(dir.path(), 200, answer);
    ctl.version().await.expect("second daemon");
    drop(ctl);
    assert_eq!(first.await.expect("first").len(), 1);
    assert_eq!(second.await.expect("second").len(), 1);
}

#[tokio::test]
async fn missing_or_bad_pid_file_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctl = Unixctl::vswitchd(dir.path());
    let err = ctl.version().await.expect_err("no pid file");
    assert!(matches!(err, Error::PidFile { .. }), "{err:?}");
    assert!(err.to_string().contains("ovs-vswitchd.pid"), "{err}");
    std::fs::write(dir.path().join("ovs-vswitchd.pid"), "garbage").expect("write");
    assert!(matches!(ctl.version().await, Err(Error::BadPidFile { .. })));
    // A stale pid file: the socket is gone.
    std::fs::write(dir.path().join("ovs-vswitchd.pid"), "99999\n").expect("write");
    let err = ctl.version().await.expect_err("no socket");
    assert!(
        matches!(&err, Error::Rpc { .. }) && err.is_transient(),
        "{err:?}"
    );
}

#[test]
fn list_commands_output_is_parsed() {
    // The head of ovs-vswitchd 3.1's reply.
    let text = "The available commands are:\n  autoattach/show-isid    [bridge]\n  \
        bond/list               \n  dpctl/dump-flows        [-m] [--names | --no-names] [dp] \
        [filter=..] [type=..] [pmd=..]\n  version                 \n";
    let commands = parse_list_commands(text);
    let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "autoattach/show-isid",
            "bond/list",
            "dpctl/dump-flows",
            "version"
        ]
    );
    assert_eq!(commands[0].usage, "[bridge]");
    assert_eq!(commands[1].usage, "");
    assert!(commands[2].usage.starts_with("[-m]"));
}
