//! The fake replaying a captured transcript: recorded answers under the new request's id,
//! readings in order (or pinned), an error for what was not captured, and the fake's own
//! state out of it.

use super::*;

/// Two readings of a plain SPDK: iostat moved between them, SNAP's listing was refused
/// with the error the peer gave (kept, data included).
const TRANSCRIPT: &str = r#"{"reading":1,"method":"spdk_get_version","request":{"jsonrpc":"2.0","method":"spdk_get_version","id":1},"response":{"jsonrpc":"2.0","id":1,"result":{"version":"SPDK v24.01"}}}
{"reading":1,"method":"bdev_get_iostat","request":{"jsonrpc":"2.0","method":"bdev_get_iostat","params":{"name":"m0"},"id":2},"response":{"jsonrpc":"2.0","id":2,"result":{"tick_rate":1,"bdevs":[{"name":"m0","bytes_read":4096}]}}}
{"reading":1,"method":"nvme_subsystem_list","request":{"jsonrpc":"2.0","method":"nvme_subsystem_list","id":3},"response":{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":{"why":"plain"}}}}

{"reading":2,"method":"spdk_get_version","request":{"jsonrpc":"2.0","method":"spdk_get_version","id":4},"response":{"jsonrpc":"2.0","id":4,"result":{"version":"SPDK v24.01"}}}
{"reading":2,"method":"bdev_get_iostat","request":{"jsonrpc":"2.0","method":"bdev_get_iostat","params":{"name":"m0"},"id":5},"response":{"jsonrpc":"2.0","id":5,"result":{"tick_rate":1,"bdevs":[{"name":"m0","bytes_read":8192}]}}}
"#;

fn replaying() -> (tempfile::TempDir, FakeSnap, Conn) {
    let dir = tempfile::tempdir().expect("tempdir");
    let replay = Replay::from_jsonl(TRANSCRIPT).expect("transcript");
    assert_eq!(replay.len(), 3);
    let snap =
        FakeSnap::start_replaying(&dir.path().join("spdk.sock"), replay).expect("start replaying");
    let conn = Conn::open(snap.path());
    (dir, snap, conn)
}

fn bytes_read(result: &Value) -> u64 {
    result["bdevs"][0]["bytes_read"]
        .as_u64()
        .expect("bytes_read")
}

#[test]
fn readings_play_in_order_and_the_last_repeats() {
    let (_dir, snap, mut conn) = replaying();
    let ask = json!({"name": "m0"});
    assert_eq!(bytes_read(&conn.ok("bdev_get_iostat", ask.clone())), 4096);
    assert_eq!(bytes_read(&conn.ok("bdev_get_iostat", ask.clone())), 8192);
    assert_eq!(bytes_read(&conn.ok("bdev_get_iostat", ask.clone())), 8192);
    // Pinned at the first reading, every answer is the first reading's.
    snap.replay_reading(Some(1));
    assert_eq!(bytes_read(&conn.ok("bdev_get_iostat", ask.clone())), 4096);
    assert_eq!(bytes_read(&conn.ok("bdev_get_iostat", ask)), 4096);
    assert_eq!(
        conn.ok("spdk_get_version", Value::Null)["version"],
        "SPDK v24.01"
    );
    assert_eq!(snap.requests_of("bdev_get_iostat").len(), 5);
}

#[test]
fn a_recorded_error_is_answered_as_recorded() {
    let (_dir, _snap, mut conn) = replaying();
    let reply = conn.call("nvme_subsystem_list", Value::Null);
    assert_eq!(
        reply["error"],
        json!({"code": -32601, "message": "Method not found", "data": {"why": "plain"}}),
        "{reply}"
    );
}

#[test]
fn what_was_not_captured_is_a_clear_error_and_the_fake_state_is_not_used() {
    let (_dir, snap, mut conn) = replaying();
    // Other params than recorded.
    let (code, message) = conn.refused("bdev_get_iostat", json!({"name": "m1"}));
    assert_eq!(code, NOT_CAPTURED_CODE);
    assert!(message.contains("not captured"), "{message}");
    assert!(message.contains("bdev_get_iostat"), "{message}");
    assert!(message.contains("m1"), "{message}");
    // A method the fake serves from its own state when not replaying.
    let (code, message) = conn.refused("bdev_get_bdevs", Value::Null);
    assert_eq!(code, NOT_CAPTURED_CODE, "{message}");
    // A reading that did not ask it.
    snap.replay_reading(Some(2));
    let (code, message) = conn.refused("nvme_subsystem_list", Value::Null);
    assert_eq!(code, NOT_CAPTURED_CODE);
    assert!(message.contains("reading 2"), "{message}");
}

#[test]
fn without_a_transcript_the_fake_answers_from_its_state() {
    // Control for the refusal above: the same bdev_get_bdevs is answered by a plain fake.
    let mut fixture = fixture(FakeDialect::Snap4);
    let result = fixture.conn.ok("bdev_get_bdevs", Value::Null);
    assert!(result.is_array(), "{result}");
}

#[test]
fn a_line_that_is_not_an_exchange_is_refused_with_its_number() {
    let err = Replay::from_jsonl("{\"method\":\"m\",\"request\":{}}\n").expect_err("no response");
    assert!(err.to_string().contains("line 1"), "{err}");
    assert!(err.to_string().contains("response"), "{err}");
    let err = Replay::from_jsonl("\n\nnot json\n").expect_err("not JSON");
    assert!(err.to_string().contains("line 3"), "{err}");
}
