use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

use serde_json::{json, Value};

use super::*;

/// One JSON-RPC 1.0 call over a fresh connection, blocking; the reply as sent.
fn call(socket: &Path, method: &str, params: Value) -> Value {
    let mut stream = UnixStream::connect(socket).expect("connect");
    let request = json!({"id": 7, "method": method, "params": params});
    stream
        .write_all(request.to_string().as_bytes())
        .expect("send");
    let mut replies = serde_json::Deserializer::from_reader(stream).into_iter::<Value>();
    replies.next().expect("a reply").expect("JSON")
}

fn transcript(lines: &[Value]) -> Replay {
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    Replay::from_jsonl(&text.join("\n")).expect("transcript")
}

fn exchange(reading: u32, method: &str, params: Value, response: Value) -> Value {
    json!({"reading": reading, "method": method,
        "request": {"id": 1, "method": method, "params": params}, "response": response})
}

#[test]
fn both_sockets_answer_what_was_recorded_and_name_what_was_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ovsdb = transcript(&[exchange(
        1,
        "list_dbs",
        json!([]),
        json!({"id": 1, "result": ["Open_vSwitch"], "error": null}),
    )]);
    let vswitchd = transcript(&[
        exchange(
            1,
            "dpif/show",
            json!([]),
            json!({"id": 2, "result": "first\n", "error": null}),
        ),
        exchange(
            2,
            "dpif/show",
            json!([]),
            json!({"id": 9, "result": "second\n", "error": null}),
        ),
        exchange(
            1,
            "dpctl/show",
            json!(["x@y"]),
            json!({"id": 3, "result": null, "error": "no such dp"}),
        ),
    ]);
    let fake = FakeOvs::start_replaying(dir.path(), ovsdb, vswitchd).expect("start");
    let pid = std::fs::read_to_string(dir.path().join(VSWITCHD_PID_FILE)).expect("pid file");
    let ctl = dir.path().join(format!("ovs-vswitchd.{}.ctl", pid.trim()));

    let listed = call(&fake.ovsdb_socket(), "list_dbs", json!([]));
    assert_eq!(
        listed,
        json!({"id": 7, "result": ["Open_vSwitch"], "error": null})
    );
    // Readings in order, the last repeating; pinned, always that reading's.
    assert_eq!(call(&ctl, "dpif/show", json!([]))["result"], "first\n");
    assert_eq!(call(&ctl, "dpif/show", json!([]))["result"], "second\n");
    assert_eq!(call(&ctl, "dpif/show", json!([]))["result"], "second\n");
    fake.replay_reading(Some(1));
    assert_eq!(call(&ctl, "dpif/show", json!([]))["result"], "first\n");
    // A recorded refusal is answered as the daemon sent it.
    let refused = call(&ctl, "dpctl/show", json!(["x@y"]));
    assert_eq!(refused["error"], "no such dp");
    assert_eq!(refused["result"], Value::Null);
    // Not recorded: the same method with other params, a method of the other daemon.
    for (socket, method, params) in [
        (ctl.as_path(), "dpctl/show", json!(["a@b"])),
        (fake.ovsdb_socket().as_path(), "dpif/show", json!([])),
    ] {
        let missing = call(socket, method, params.clone());
        let message = missing["error"].as_str().expect("an error string");
        assert!(
            message.starts_with(&format!("not captured: {method} with params {params}")),
            "{message}"
        );
        assert_eq!(missing["result"], Value::Null);
    }
    drop(fake);
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "sockets and pid file removed: {left:?}");
}

#[test]
fn a_run_directory_with_a_pid_file_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join(VSWITCHD_PID_FILE);
    std::fs::write(&pid_file, "4242\n").expect("a running OVS's pid file");
    let err = FakeOvs::start_replaying(dir.path(), Replay::default(), Replay::default())
        .expect_err("refused");
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
    assert_eq!(std::fs::read_to_string(&pid_file).expect("kept"), "4242\n");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [VSWITCHD_PID_FILE],
        "the sockets bound first are removed"
    );
}
