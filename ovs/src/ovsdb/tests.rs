//! The exact transactions the typed requests send, checked against a scripted ovsdb-server
//! on a temporary socket (the real daemons are exercised in `tests/tests/ovs`).

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use super::{Error, Ovsdb, OvsdbOptions};

const LONG: Duration = Duration::from_secs(10);
const ROOT: &str = "dec1295d-6c8c-4825-9e79-5040ab3740c9";

/// One connection of the scripted server.
struct Server {
    stream: UnixStream,
    buf: Vec<u8>,
}

impl Server {
    async fn accept(listener: &UnixListener) -> Self {
        let (stream, _) = tokio::time::timeout(LONG, listener.accept())
            .await
            .expect("client connects")
            .expect("accept");
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    async fn recv(&mut self) -> Value {
        loop {
            let mut values = serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
            if let Some(Ok(v)) = values.next() {
                let end = values.byte_offset();
                self.buf.drain(..end);
                return v;
            }
            let mut chunk = [0_u8; 4096];
            let n = tokio::time::timeout(LONG, self.stream.read(&mut chunk))
                .await
                .expect("client sends")
                .expect("read");
            assert_ne!(n, 0, "client hung up");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn send(&mut self, v: Value) {
        self.stream
            .write_all(v.to_string().as_bytes())
            .await
            .expect("write");
    }

    /// Receives a `transact`, returns its operations (params without the db name).
    async fn transact(&mut self) -> (Value, Vec<Value>) {
        let req = self.recv().await;
        assert_eq!(req["method"], "transact", "{req}");
        let params = req["params"].as_array().expect("array params").clone();
        assert_eq!(params[0], "Open_vSwitch");
        (req["id"].clone(), params[1..].to_vec())
    }

    async fn reply(&mut self, id: Value, result: Value) {
        self.send(json!({"id": id, "result": result, "error": null}))
            .await;
    }
}

fn snapshot_reply(other_config: Value) -> Value {
    json!([
        {"rows": [{"_uuid": ["uuid", ROOT], "bridges": ["set", []], "other_config": other_config,
            "next_cfg": 4, "cur_cfg": 4}]},
        {"rows": []}, {"rows": []}, {"rows": []}
    ])
}

fn ovsdb(dir: &tempfile::TempDir, apply: Duration) -> Ovsdb {
    let address = format!("unix:{}", dir.path().join("db.sock").display());
    Ovsdb::with_options(
        &address,
        OvsdbOptions {
            apply_timeout: apply,
            ..OvsdbOptions::default()
        },
    )
    .expect("unix address")
}

#[tokio::test]
async fn add_bridge_sends_the_ovs_vsctl_transaction_and_waits_for_cur_cfg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join("db.sock")).expect("bind");
    let server = tokio::spawn(async move {
        let mut s = Server::accept(&listener).await;
        let (id, ops) = s.transact().await;
        assert_eq!(ops.len(), 4, "snapshot selects the four tables");
        s.reply(id, snapshot_reply(json!(["map", []]))).await;
        // ovsdb-server may probe us in between; the answer must echo the params.
        s.send(json!({"method": "echo", "params": ["probe"], "id": "echo"}))
            .await;
        assert_eq!(
            s.recv().await,
            json!({"result": ["probe"], "error": null, "id": "echo"})
        );
        let (id, ops) = s.transact().await;
        assert_eq!(
            Value::Array(ops),
            json!([
                {"op": "insert", "table": "Interface", "uuid-name": "iface",
                    "row": {"name": "br0", "type": "internal"}},
                {"op": "insert", "table": "Port", "uuid-name": "port",
                    "row": {"name": "br0", "interfaces": ["named-uuid", "iface"]}},
                {"op": "insert", "table": "Bridge", "uuid-name": "bridge",
                    "row": {"name": "br0", "ports": ["named-uuid", "port"],
                        "datapath_type": "netdev"}},
                {"op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["bridges", "insert", ["set", [["named-uuid", "bridge"]]]]]},
                {"op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["next_cfg", "+=", 1]]},
                {"op": "select", "table": "Open_vSwitch", "where": [], "columns": ["next_cfg"]},
            ])
        );
        s.reply(
            id,
            json!([{"uuid": ["uuid", ROOT]}, {"uuid": ["uuid", ROOT]}, {"uuid": ["uuid", ROOT]},
                {"count": 1}, {"count": 1}, {"rows": [{"next_cfg": 5}]}]),
        )
        .await;
        let (id, ops) = s.transact().await;
        assert_eq!(
            Value::Array(ops),
            json!([{"op": "wait", "table": "Open_vSwitch", "where": [["cur_cfg", ">=", 5]],
                "columns": ["_uuid"], "until": "!=", "rows": [], "timeout": 3000}])
        );
        s.reply(id, json!([{}])).await;
        // Applied: the bridge is read back, and its local port got OFPP_LOCAL.
        let (id, ops) = s.transact().await;
        assert_eq!(ops.len(), 4, "snapshot selects the four tables");
        s.reply(id, bridge_snapshot(5, json!(65534), json!(["set", []])))
            .await;
    });
    let applied = ovsdb(&dir, Duration::from_secs(3))
        .bridges()
        .add("br0")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("added");
    assert!(applied.changed && applied.confirmed);
    assert_eq!(applied.next_cfg, Some(5));
    tokio::time::timeout(LONG, server)
        .await
        .expect("script ends")
        .expect("script passes");
}

const BR: &str = "5c19c029-05d9-4884-a54f-c85832b679e6";
const PORT: &str = "1f7c7163-6461-4ebe-b229-0174553a1050";
const IFACE: &str = "2a7c7163-6461-4ebe-b229-0174553a1051";

/// A snapshot reply with bridge `br0` (local port and interface) at configuration `cfg`,
/// its interface's `ofport` and `error` as given.
fn bridge_snapshot(cfg: i64, ofport: Value, error: Value) -> Value {
    json!([
        {"rows": [{"_uuid": ["uuid", ROOT], "bridges": ["uuid", BR],
            "other_config": ["map", []], "next_cfg": cfg, "cur_cfg": cfg}]},
        {"rows": [{"_uuid": ["uuid", BR], "name": "br0", "ports": ["uuid", PORT],
            "datapath_type": ""}]},
        {"rows": [{"_uuid": ["uuid", PORT], "name": "br0", "interfaces": ["uuid", IFACE]}]},
        {"rows": [{"_uuid": ["uuid", IFACE], "name": "br0", "type": "internal",
            "ofport": ofport, "error": error}]},
    ])
}

#[tokio::test]
async fn a_bridge_vswitchd_refused_is_removed_again_in_one_transaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join("db.sock")).expect("bind");
    let server = tokio::spawn(async move {
        let mut s = Server::accept(&listener).await;
        let (id, _) = s.transact().await;
        s.reply(id, snapshot_reply(json!(["map", []]))).await;
        let (id, _) = s.transact().await;
        s.reply(
            id,
            json!([{"uuid": ["uuid", IFACE]}, {"uuid": ["uuid", PORT]}, {"uuid": ["uuid", BR]},
                {"count": 1}, {"count": 1}, {"rows": [{"next_cfg": 5}]}]),
        )
        .await;
        let (id, _) = s.transact().await;
        s.reply(id, json!([{}])).await;
        // Applied, and refused: ofport -1 with OVS's reason.
        let (id, _) = s.transact().await;
        s.reply(
            id,
            bridge_snapshot(
                5,
                json!(-1),
                json!("could not open network device br0 (Invalid argument)"),
            ),
        )
        .await;
        // The undo: the del-br of exactly the row this request inserted, with next_cfg.
        let (id, ops) = s.transact().await;
        assert_eq!(
            Value::Array(ops),
            json!([
                {"op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["bridges", "delete", ["set", [["uuid", BR]]]]]},
                {"op": "delete", "table": "Bridge", "where": [["_uuid", "==", ["uuid", BR]]]},
                {"op": "mutate", "table": "Open_vSwitch", "where": [],
                    "mutations": [["next_cfg", "+=", 1]]},
                {"op": "select", "table": "Open_vSwitch", "where": [], "columns": ["next_cfg"]},
            ])
        );
        s.reply(
            id,
            json!([{"count": 1}, {"count": 1}, {"count": 1}, {"rows": [{"next_cfg": 6}]}]),
        )
        .await;
        let (id, ops) = s.transact().await;
        assert_eq!(ops[0]["where"], json!([["cur_cfg", ">=", 6]]));
        s.reply(id, json!([{}])).await;
    });
    let err = ovsdb(&dir, Duration::from_secs(3))
        .bridges()
        .add("br0")
        .execute()
        .await
        .expect_err("vswitchd refused it");
    assert!(
        matches!(&err, Error::NotCreated { kind: "bridge", name, removed: true, removal: None,
            error: Some(e), .. } if name == "br0" && e.contains("Invalid argument")),
        "{err:?}"
    );
    let text = err.to_string();
    for part in [
        "bridge br0",
        "datapath type system",
        "could not open network device br0 (Invalid argument)",
        "removed again",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    assert!(!err.is_transient());
    tokio::time::timeout(LONG, server)
        .await
        .expect("script ends")
        .expect("script passes");
}

#[tokio::test]
async fn an_existing_bridge_vswitchd_never_created_is_reported_not_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join("db.sock")).expect("bind");
    let server = tokio::spawn(async move {
        let mut s = Server::accept(&listener).await;
        // Caught up, no ofport, no error: the datapath could not be opened.
        for _ in 0..2 {
            let (id, ops) = s.transact().await;
            assert_eq!(ops.len(), 4, "only reads: {ops:?}");
            s.reply(
                id,
                bridge_snapshot(7, json!(["set", []]), json!(["set", []])),
            )
            .await;
        }
    });
    let err = ovsdb(&dir, Duration::from_secs(3))
        .bridges()
        .add("br0")
        .execute()
        .await
        .expect_err("not running");
    assert!(
        matches!(
            &err,
            Error::NotCreated {
                removed: false,
                error: None,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("no OpenFlow port"), "{text}");
    assert!(text.contains("left as it is"), "{text}");
    tokio::time::timeout(LONG, server)
        .await
        .expect("script ends")
        .expect("script passes");
}

#[tokio::test]
async fn other_config_is_one_mutate_and_a_stalled_vswitchd_is_not_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join("db.sock")).expect("bind");
    let server = tokio::spawn(async move {
        let mut s = Server::accept(&listener).await;
        let (id, ops) = s.transact().await;
        assert_eq!(
            Value::Array(ops[..2].to_vec()),
            json!([
                {"op": "select", "table": "Open_vSwitch", "where": [], "columns": ["other_config"]},
                {"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [
                    ["other_config", "delete", ["set", ["hw-offload"]]],
                    ["other_config", "insert", ["map", [["hw-offload", "true"]]]]]},
            ])
        );
        s.reply(
            id,
            json!([{"rows": [{"other_config": ["map", [["hw-offload", "false"]]]}]},
                {"count": 1}, {"count": 1}, {"rows": [{"next_cfg": 9}]}]),
        )
        .await;
        let (id, _) = s.transact().await;
        s.reply(
            id,
            json!([{"error": "timed out", "details": "\"wait\" timed out after 100 ms"}]),
        )
        .await;
        let (id, ops) = s.transact().await;
        assert_eq!(ops[0]["columns"], json!(["cur_cfg"]));
        s.reply(id, json!([{"rows": [{"cur_cfg": 8}]}])).await;
    });
    let err = ovsdb(&dir, Duration::from_millis(100))
        .other_config()
        .set("hw-offload", "true")
        .execute()
        .await
        .expect_err("vswitchd never catches up");
    assert!(
        matches!(
            err,
            Error::NotApplied {
                next_cfg: 9,
                cur_cfg: Some(8),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("is ovs-vswitchd running"), "{err}");
    tokio::time::timeout(LONG, server)
        .await
        .expect("script ends")
        .expect("script passes");
}

#[tokio::test]
async fn refused_request_keeps_ovsdb_error_and_details() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join("db.sock")).expect("bind");
    let server = tokio::spawn(async move {
        let mut s = Server::accept(&listener).await;
        let req = s.recv().await;
        // Verbatim from ovsdb-server 3.1 for an unknown database (no "result" member).
        s.send(
            json!({"id": req["id"], "error": {"error": "unknown database",
            "details": "get_schema request specifies unknown database Nope", "syntax": "[]"}}),
        )
        .await;
    });
    let err = ovsdb(&dir, LONG)
        .get_schema("Nope")
        .await
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "ovsdb-server refused get_schema: unknown database: \
         get_schema request specifies unknown database Nope"
    );
    tokio::time::timeout(LONG, server)
        .await
        .expect("script ends")
        .expect("script passes");
}

#[test]
fn only_unix_addresses() {
    assert!(Ovsdb::new("unix:/run/openvswitch/db.sock").is_ok());
    assert!(Ovsdb::new("/run/openvswitch/db.sock").is_ok());
    for bad in ["tcp:127.0.0.1:6640", "ssl:h:6640", "unix:", ""] {
        assert!(
            matches!(Ovsdb::new(bad), Err(Error::Address { .. })),
            "{bad}"
        );
    }
}
