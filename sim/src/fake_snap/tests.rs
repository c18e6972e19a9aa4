//! Wire-level tests of the fake: raw JSON in, raw JSON out, checked against what SPDK
//! v24.01's source answers (and, for SNAP's methods, the public clients' shapes).

use super::*;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;

/// A blocking client that reads back-to-back JSON values like the real ones do.
struct Conn {
    stream: StdUnixStream,
    buf: Vec<u8>,
    next_id: u64,
}

impl Conn {
    fn open(path: &Path) -> Self {
        let stream = StdUnixStream::connect(path).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Self {
            stream,
            buf: Vec::new(),
            next_id: 0,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// The next value, and the raw bytes it came in (with what followed it up to the next
    /// value).
    fn recv_raw(&mut self) -> (Value, Vec<u8>) {
        loop {
            let (next, consumed) = {
                let mut values =
                    serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
                (values.next(), values.byte_offset())
            };
            if let Some(Ok(v)) = next {
                let raw: Vec<u8> = self.buf.drain(..consumed).collect();
                return (v, raw);
            }
            let mut chunk = [0_u8; 4096];
            let n = self.stream.read(&mut chunk).expect("read");
            assert_ne!(n, 0, "server hung up");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn recv(&mut self) -> Value {
        self.recv_raw().0
    }

    /// Sends `method` with `params` (`Value::Null`: none) and returns the whole reply.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let mut request = json!({"jsonrpc": "2.0", "method": method, "id": self.next_id});
        if !params.is_null() {
            request["params"] = params;
        }
        self.send(request.to_string().as_bytes());
        let reply = self.recv();
        assert_eq!(reply["id"], self.next_id, "{reply}");
        reply
    }

    /// The result of a call that must succeed.
    fn ok(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call(method, params.clone());
        assert!(
            reply.get("error").is_none(),
            "{method} {params} refused: {reply}"
        );
        reply["result"].clone()
    }

    /// The `(code, message)` of a call that must fail.
    fn refused(&mut self, method: &str, params: Value) -> (i64, String) {
        let reply = self.call(method, params.clone());
        let error = &reply["error"];
        assert!(error.is_object(), "{method} {params} succeeded: {reply}");
        (
            error["code"].as_i64().expect("code"),
            error["message"].as_str().expect("message").to_owned(),
        )
    }
}

fn decode_failed() -> (i64, String) {
    (-32603, "spdk_json_decode_object failed".to_owned())
}

struct Fixture {
    _dir: tempfile::TempDir,
    snap: FakeSnap,
    conn: Conn,
}

fn fixture(dialect: FakeDialect) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let snap = FakeSnap::start_with(&dir.path().join("spdk.sock"), dialect).expect("start");
    let conn = Conn::open(snap.path());
    Fixture {
        _dir: dir,
        snap,
        conn,
    }
}

fn attach(name: &str, traddr: &str) -> Value {
    json!({"name": name, "trtype": "rdma", "adrfam": "ipv4", "traddr": traddr,
           "trsvcid": "4420", "subnqn": "nqn.2016-06.io.spdk:cnode1"})
}

#[test]
fn answers_back_to_back_and_split_requests_and_records_them() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    // Two requests in one write, no delimiter.
    conn.send(
        br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":1}{"jsonrpc":"2.0","method":"rpc_get_methods","id":2,"params":{"current":true}}"#,
    );
    let (version, raw) = conn.recv_raw();
    assert_eq!(
        version,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"version": "SPDK v24.01",
            "fields": {"major": 24, "minor": 1, "patch": 0, "suffix": ""}}})
    );
    assert_eq!(version["result"]["version"], FAKE_SPDK_VERSION);
    let methods = conn.recv();
    assert!(raw.ends_with(b"}") || raw.ends_with(b"\n"), "{raw:?}");
    assert_eq!(methods["id"], 2);
    assert!(methods["result"]
        .as_array()
        .expect("list")
        .contains(&json!("emulation_function_list")));
    // One request split across writes.
    conn.send(br#"{"jsonrpc":"2.0","meth"#);
    std::thread::sleep(Duration::from_millis(20));
    conn.send(br#"od":"bdev_nope","id":"x","params":{"a":1}}"#);
    assert_eq!(
        conn.recv(),
        json!({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}})
    );
    assert_eq!(
        snap.requests(),
        vec![
            ("spdk_get_version".to_owned(), Value::Null),
            ("rpc_get_methods".to_owned(), json!({"current": true})),
            ("bdev_nope".to_owned(), json!({"a": 1})),
        ]
    );
    assert_eq!(snap.requests_of("bdev_nope"), [json!({"a": 1})]);
}

#[test]
fn every_reply_ends_with_a_newline() {
    let Fixture {
        _dir,
        snap: _snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":1}"#);
    let mut raw = Vec::new();
    while !raw.ends_with(b"\n") {
        let mut byte = [0_u8; 1];
        conn.stream.read_exact(&mut byte).expect("read");
        raw.push(byte[0]);
    }
    let reply: Value = serde_json::from_slice(&raw).expect("one JSON value and a newline");
    assert_eq!(reply["id"], 1);
}

#[test]
fn the_jsonrpc_layer_refuses_and_accepts_what_v24_01_does() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    let invalid = json!({"jsonrpc": "2.0", "id": null,
                         "error": {"code": -32600, "message": "Invalid request"}});
    // A batch is refused as a whole, with id null, and the connection stays open.
    conn.send(br#"[{"jsonrpc":"2.0","method":"spdk_get_version","id":1}]"#);
    assert_eq!(conn.recv(), invalid);
    conn.send(b"[]");
    assert_eq!(conn.recv(), invalid);
    conn.send(b"\"spdk_get_version\"");
    assert_eq!(conn.recv(), invalid, "a top-level string");
    // The "jsonrpc" member is optional, but must be "2.0" when present.
    conn.send(br#"{"method":"spdk_get_version","id":3}"#);
    assert_eq!(conn.recv()["result"]["version"], "SPDK v24.01");
    for bad in [
        br#"{"jsonrpc":"1.0","method":"spdk_get_version","id":4}"#.as_slice(),
        br#"{"jsonrpc":2.0,"method":"spdk_get_version","id":4}"#,
        br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":4,"extra":1}"#,
        br#"{"jsonrpc":"2.0","method":7,"id":4}"#,
        br#"{"jsonrpc":"2.0","id":4}"#,
        br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":[4]}"#,
    ] {
        conn.send(bad);
        assert_eq!(conn.recv(), invalid, "{}", String::from_utf8_lossy(bad));
    }
    // Params that are neither object, array nor null: invalid, but the id is known by then.
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":5,"params":3}"#);
    assert_eq!(conn.recv()["error"]["code"], -32600);
    // params null is no params.
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":6,"params":null}"#);
    assert_eq!(conn.recv()["id"], 6);
    // spdk_get_version refuses any params, even empty ones.
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":7,"params":{}}"#);
    assert_eq!(
        conn.recv()["error"],
        json!({"code": -32602, "message": "spdk_get_version method requires no parameters"})
    );
    // A notification's result is not sent; its error is, with id null.
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version"}"#);
    conn.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":null}"#);
    conn.send(br#"{"jsonrpc":"2.0","method":"no_such_method"}"#);
    assert_eq!(
        conn.recv(),
        json!({"jsonrpc": "2.0", "id": null,
               "error": {"code": -32601, "message": "Method not found"}})
    );
    // rpc_get_methods refuses bad params with -32602, not -32603.
    assert_eq!(
        conn.refused("rpc_get_methods", json!({"current": 1})),
        (-32602, "Invalid parameters".to_owned())
    );
    assert_eq!(
        conn.refused("rpc_get_methods", json!({"all": true})),
        (-32602, "Invalid parameters".to_owned())
    );
    // Bytes that are not JSON: the connection is closed with no reply, as SPDK v24.01 does.
    conn.send(b"{not json");
    let mut rest = Vec::new();
    let _ = conn.stream.read_to_end(&mut rest);
    assert!(rest.iter().all(u8::is_ascii_whitespace), "{rest:?}");
    // Only requests that reached a method are recorded.
    assert_eq!(snap.requests().len(), 8, "{:?}", snap.requests());
}

#[test]
fn many_connections_and_cleanup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("spdk.sock");
    let snap = FakeSnap::start(&path).expect("start");
    let mut a = Conn::open(&path);
    let mut b = Conn::open(&path);
    assert_eq!(b.ok("spdk_get_version", Value::Null)["fields"]["major"], 24);
    assert_eq!(a.ok("bdev_get_bdevs", Value::Null), json!([]));
    assert!(FakeSnap::start(&path).is_err(), "path already served");
    drop(snap);
    assert!(!path.exists(), "socket removed");
    let restarted = FakeSnap::start(&path).expect("restart on the same path");
    let mut c = Conn::open(restarted.path());
    assert_eq!(
        c.ok("spdk_get_version", Value::Null)["version"],
        "SPDK v24.01"
    );
}

#[test]
fn the_version_knob_drives_spdk_get_version_and_the_iostat_forms() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    let by_name = json!({"name": "Rn1"});
    let by_names = json!({"names": ["Rn1"]});
    // v24.01: only `name` (and `per_channel`; not even `reset_mode`).
    assert_eq!(
        conn.ok("bdev_get_iostat", by_name.clone())["bdevs"][0]["name"],
        "Rn1"
    );
    assert_eq!(
        conn.refused("bdev_get_iostat", by_names.clone()),
        decode_failed()
    );
    assert_eq!(
        conn.refused(
            "bdev_get_iostat",
            json!({"name": "Rn1", "reset_mode": "all"})
        ),
        decode_failed()
    );
    for (version, name_ok, names_ok) in [
        ("v25.09", true, false),
        ("v26.01", true, true),
        ("v26.05", false, true),
    ] {
        snap.set_version(version);
        let got = conn.ok("spdk_get_version", Value::Null);
        assert_eq!(got["version"], format!("SPDK {version}"));
        for (params, ok) in [(&by_name, name_ok), (&by_names, names_ok)] {
            let reply = conn.call("bdev_get_iostat", params.clone());
            if ok {
                assert_eq!(
                    reply["result"]["bdevs"][0]["name"], "Rn1",
                    "{version} {reply}"
                );
            } else {
                assert_eq!(
                    reply["error"],
                    json!({"code": -32603, "message": "spdk_json_decode_object failed"}),
                    "{version} {params}"
                );
            }
        }
    }
    assert_eq!(snap.version().to_string(), "SPDK v26.05");
    assert_eq!(
        conn.ok("spdk_get_version", Value::Null)["fields"],
        json!({"major": 26, "minor": 5, "patch": 0, "suffix": ""})
    );
}

#[test]
fn iostat_reports_spdk_counters_and_refuses_like_v24_01() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    assert!(snap.record_io("Rn1", 8192, 4096));
    let stats = conn.ok("bdev_get_iostat", json!({"name": "Rn1"}));
    assert_eq!(stats["tick_rate"], 2_000_000_000_u64);
    let b = &stats["bdevs"][0];
    assert_eq!(
        (&b["bytes_read"], &b["num_read_ops"], &b["bytes_written"]),
        (&json!(8192), &json!(1), &json!(4096))
    );
    assert_eq!(b["read_latency_ticks"], 1000);
    assert!(b.get("bytes_copied").is_some() && b.get("min_read_latency_ticks").is_some());
    let later = conn.ok("bdev_get_iostat", Value::Null);
    assert!(later["ticks"].as_u64() > stats["ticks"].as_u64());
    assert_eq!(
        conn.refused("bdev_get_iostat", json!({"name": "nope"})),
        (-19, "No such device".to_owned())
    );
    assert_eq!(
        conn.refused("bdev_get_iostat", json!({"per_channel": true})),
        (-22, "Invalid argument".to_owned())
    );
    assert_eq!(
        conn.refused("bdev_get_iostat", json!({"name": 5})),
        decode_failed()
    );
    let per_channel = conn.ok(
        "bdev_get_iostat",
        json!({"name": "Rn1", "per_channel": true}),
    );
    assert_eq!(per_channel["channels"][0]["bytes_read"], 8192);
    snap.reads_between_polls(Some(("Rn1", 100)));
    let polled = conn.ok("bdev_get_iostat", json!({"name": "Rn1"}));
    assert_eq!(polled["bdevs"][0]["bytes_read"], 8292);
}

#[test]
fn bdevs_list_and_refuse_like_v24_01() {
    let Fixture {
        _dir,
        snap: _snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    assert_eq!(conn.ok("bdev_get_bdevs", Value::Null), json!([]));
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    let bdevs = conn.ok("bdev_get_bdevs", json!({"name": "Rn1", "timeout": 0}));
    let b = &bdevs[0];
    assert_eq!((&b["name"], &b["block_size"]), (&json!("Rn1"), &json!(512)));
    assert_eq!(b["product_name"], "NVMe disk");
    assert!(b["uuid"].as_str().is_some_and(|u| u.len() == 36), "{b}");
    assert_eq!(
        conn.refused("bdev_get_bdevs", json!({"name": "ghost"})),
        (-19, "No such device".to_owned())
    );
    assert_eq!(
        conn.refused("bdev_get_bdevs", json!({"name": "Rn1", "x": 1})),
        decode_failed()
    );
}

#[test]
fn attach_decodes_every_field_like_v24_01() {
    let Fixture {
        _dir,
        snap: _snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    let with = |extra: Value| {
        let mut p = attach("R", "192.0.2.10");
        for (k, v) in extra.as_object().expect("object") {
            p[k] = v.clone();
        }
        p
    };
    for bad in [
        json!({"trsvcid": 4420}),
        json!({"hdgst": "true"}),
        json!({"ddgst": 1}),
        json!({"num_io_queues": "4"}),
        json!({"num_io_queues": -1}),
        json!({"ctrlr_loss_timeout_sec": "30"}),
        json!({"ctrlr_loss_timeout_sec": 2_147_483_648_u64}),
        json!({"reconnect_delay_sec": -1}),
        json!({"fast_io_fail_timeout_sec": 1.5}),
        json!({"multipath": "sometimes"}),
        json!({"subnqn": null}),
        json!({"unknown_key": true}),
    ] {
        assert_eq!(
            conn.refused("bdev_nvme_attach_controller", with(bad.clone())),
            decode_failed(),
            "{bad}"
        );
    }
    assert_eq!(
        conn.refused(
            "bdev_nvme_attach_controller",
            json!({"name": "R", "trtype": "rdma"})
        ),
        decode_failed(),
        "traddr is required"
    );
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", Value::Null),
        decode_failed()
    );
    // The reconnect trio (bdev_nvme_check_io_error_resiliency_params): -22.
    for trio in [
        json!({"ctrlr_loss_timeout_sec": 30}),
        json!({"reconnect_delay_sec": 5}),
        json!({"ctrlr_loss_timeout_sec": 10, "reconnect_delay_sec": 20}),
        json!({"ctrlr_loss_timeout_sec": 30, "reconnect_delay_sec": 10,
               "fast_io_fail_timeout_sec": 5}),
        json!({"ctrlr_loss_timeout_sec": -2, "reconnect_delay_sec": 10}),
    ] {
        assert_eq!(
            conn.refused("bdev_nvme_attach_controller", with(trio.clone())),
            (-22, "Invalid argument".to_owned()),
            "{trio}"
        );
    }
    assert_eq!(
        conn.refused(
            "bdev_nvme_attach_controller",
            with(json!({"num_io_queues": 0}))
        ),
        (
            -22,
            "num_io_queues out of bounds, min: 1 max: 65536\n".to_owned()
        )
    );
    assert_eq!(
        conn.refused(
            "bdev_nvme_attach_controller",
            with(json!({"adrfam": "ipx"}))
        ),
        (-22, "Failed to parse adrfam: ipx".to_owned())
    );
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", with(json!({"max_bdevs": 0}))),
        (-22, "max_bdevs cannot be zero".to_owned())
    );
    assert_eq!(
        conn.refused(
            "bdev_nvme_attach_controller",
            with(json!({"trtype": "carrier-pigeon"}))
        ),
        (-19, "No such device".to_owned())
    );
    assert_eq!(
        conn.refused(
            "bdev_nvme_attach_controller",
            with(json!({"psk": "/nonexistent/psk"}))
        ),
        (
            -22,
            "Could not retrieve PSK from file: /nonexistent/psk".to_owned()
        )
    );
    // Everything the agent sends, well typed; -1 reconnects forever.
    let full = with(
        json!({"hostnqn": "nqn.2014-08.org.nvmexpress:uuid:1", "hdgst": true,
                           "ddgst": true, "num_io_queues": 8, "ctrlr_loss_timeout_sec": -1,
                           "reconnect_delay_sec": 10, "fast_io_fail_timeout_sec": 20}),
    );
    assert_eq!(conn.ok("bdev_nvme_attach_controller", full), json!(["Rn1"]));
    let mut tcp = attach("T", "192.0.2.11");
    tcp["trtype"] = json!("TCP");
    tcp["ctrlr_loss_timeout_sec"] = json!(30);
    tcp["reconnect_delay_sec"] = json!(10);
    tcp["fast_io_fail_timeout_sec"] = json!(20);
    assert_eq!(conn.ok("bdev_nvme_attach_controller", tcp), json!(["Tn1"]));
}

#[test]
fn attach_of_an_existing_name_follows_v24_01() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    // Same name, same path (traddr + trsvcid): -114 (EALREADY), whatever else differs.
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.10")),
        (
            -114,
            "A controller named R already exists with the specified network path\n".to_owned()
        )
    );
    let mut other_nqn = attach("R", "192.0.2.10");
    other_nqn["subnqn"] = json!("nqn.2016-06.io.spdk:cnode9");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", other_nqn.clone())
            .0,
        -114,
        "the path check comes first"
    );
    // Same name, another path, another subnqn or hostnqn: -22 with SPDK's message.
    other_nqn["traddr"] = json!("192.0.2.20");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", other_nqn),
        (
            -22,
            "A controller named R already exists, but uses a different subnqn \
             (nqn.2016-06.io.spdk:cnode1)\n"
                .to_owned()
        )
    );
    let mut other_host = attach("R", "192.0.2.20");
    other_host["hostnqn"] = json!("nqn.2014-08.org.nvmexpress:uuid:other");
    let (code, message) = conn.refused("bdev_nvme_attach_controller", other_host);
    assert_eq!(code, -22);
    assert!(
        message.starts_with(
            "A controller named R already exists, but uses a different hostnqn \
             (nqn.2014-08.org.nvmexpress:uuid:"
        ),
        "{message}"
    );
    // Same name, another traddr: succeeds, adding a failover path and no bdev.
    assert_eq!(
        conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.20")),
        json!([])
    );
    // The same alternate path again: the probe connects, then add_secondary_trid refuses.
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.20")),
        (-32602, "Invalid parameters".to_owned())
    );
    // Another name on a transport id already in use: -17.
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("S", "192.0.2.10")),
        (-17, "File exists".to_owned())
    );
    let mut disabled = attach("R", "192.0.2.30");
    disabled["multipath"] = json!("disable");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", disabled),
        (
            -114,
            "A controller named R already exists and multipath is disabled\n".to_owned()
        )
    );
    let listed = conn.ok("bdev_nvme_get_controllers", json!({"name": "R"}));
    let ctrlr = &listed[0]["ctrlrs"][0];
    assert_eq!(ctrlr["trid"]["traddr"], "192.0.2.10");
    assert_eq!(
        ctrlr["alternate_trids"],
        json!([{"trtype": "RDMA", "adrfam": "IPv4", "traddr": "192.0.2.20",
                "trsvcid": "4420", "subnqn": "nqn.2016-06.io.spdk:cnode1"}])
    );
    assert_eq!(snap.state().nvme_controllers["R"].ctrlrs[0].paths.len(), 2);
    // Multipath mode: a second nvme_ctrlr under the name, the bdevs reported again.
    let mut multi = attach("R", "192.0.2.40");
    multi["multipath"] = json!("multipath");
    assert_eq!(
        conn.ok("bdev_nvme_attach_controller", multi),
        json!(["Rn1"])
    );
    let listed = conn.ok("bdev_nvme_get_controllers", json!({"name": "R"}));
    assert_eq!(listed[0]["ctrlrs"].as_array().map(Vec::len), Some(2));
}

#[test]
fn targets_that_refuse_connections_fail_the_attach_as_the_release_does() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    // Nothing listening: v24.01 answers -19 (seen on spdk_tgt).
    snap.refuse_connections_to("192.0.2.99", "4420");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.99")),
        (-19, "No such device".to_owned())
    );
    // Listening, but not serving that subsystem: -32602.
    snap.serve_only("192.0.2.98", "4420", &["nqn.2016-06.io.spdk:other"]);
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.98")),
        (-32602, "Invalid parameters".to_owned())
    );
    let mut no_nqn = attach("R", "192.0.2.10");
    no_nqn.as_object_mut().map(|m| m.remove("subnqn"));
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", no_nqn).0,
        -32602,
        "a connect without subnqn is refused by the target"
    );
    snap.set_version("v24.09");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.99")),
        (-5, "Input/output error".to_owned())
    );
    snap.accept_connections_to("192.0.2.99", "4420");
    assert_eq!(
        conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.99")),
        json!(["Rn1"])
    );
    // Port 4421 of the same address is another target.
    snap.refuse_connections_to("192.0.2.10", "4421");
    let mut other_port = attach("Q", "192.0.2.10");
    other_port["trsvcid"] = json!("4421");
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", other_port).0,
        -5
    );
    // From v25.01 the default mode is multipath: another path adds a controller.
    snap.set_version("v25.01");
    assert_eq!(
        conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.50")),
        json!(["Rn1"])
    );
}

#[test]
fn get_controllers_and_detach_answer_like_v24_01() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    assert_eq!(conn.ok("bdev_nvme_get_controllers", Value::Null), json!([]));
    assert_eq!(
        conn.refused("bdev_nvme_get_controllers", json!({"name": "R"})),
        (22, "Controller R does not exist".to_owned())
    );
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    let listed = conn.ok("bdev_nvme_get_controllers", json!({"name": "R"}));
    let hostnqn = snap.state().default_hostnqn;
    assert!(hostnqn.starts_with("nqn.2014-08.org.nvmexpress:uuid:"));
    assert_eq!(
        listed,
        json!([{"name": "R", "ctrlrs": [{"state": "enabled",
            "trid": {"trtype": "RDMA", "adrfam": "IPv4", "traddr": "192.0.2.10",
                     "trsvcid": "4420", "subnqn": "nqn.2016-06.io.spdk:cnode1"},
            "cntlid": 1, "host": {"nqn": hostnqn, "addr": "", "svcid": ""}}]}])
    );
    assert_eq!(
        conn.ok("bdev_nvme_get_controllers", Value::Null),
        listed,
        "all controllers"
    );
    assert_eq!(
        conn.refused("bdev_nvme_get_controllers", json!({"name": 1})),
        decode_failed()
    );
    // Detach: unknown name, unknown key, a path filter that matches nothing.
    assert_eq!(
        conn.refused("bdev_nvme_detach_controller", json!({"name": "ghost"})),
        (-19, "No such device".to_owned())
    );
    assert_eq!(
        conn.refused(
            "bdev_nvme_detach_controller",
            json!({"name": "R", "force": true})
        ),
        decode_failed()
    );
    assert_eq!(
        conn.refused(
            "bdev_nvme_detach_controller",
            json!({"name": "R", "traddr": "192.0.2.77"})
        ),
        (-6, "No such device or address".to_owned())
    );
    // Detaching the alternate path keeps the controller; the name alone removes it all.
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.20"));
    assert_eq!(
        conn.ok(
            "bdev_nvme_detach_controller",
            json!({"name": "R", "traddr": "192.0.2.20"})
        ),
        json!(true)
    );
    assert_eq!(snap.state().nvme_controllers["R"].ctrlrs[0].paths.len(), 1);
    // Detaching the active path of a controller with an alternate fails over.
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.20"));
    conn.ok(
        "bdev_nvme_detach_controller",
        json!({"name": "R", "traddr": "192.0.2.10"}),
    );
    let listed = conn.ok("bdev_nvme_get_controllers", json!({"name": "R"}));
    assert_eq!(listed[0]["ctrlrs"][0]["trid"]["traddr"], "192.0.2.20");
    assert!(snap.state().bdevs.contains_key("Rn1"));
    assert_eq!(
        conn.ok("bdev_nvme_detach_controller", json!({"name": "R"})),
        json!(true)
    );
    let state = snap.state();
    assert!(state.nvme_controllers.is_empty() && state.bdevs.is_empty());
}

/// Attaches `R` and makes subsystem `nqn` with namespace 1 on `Rn1` (uuid given).
fn snap4_subsystem(conn: &mut Conn, nqn: &str) {
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    conn.ok("nvme_subsystem_create", json!({"nqn": nqn}));
    conn.ok(
        "nvme_namespace_create",
        json!({"nqn": nqn, "nsid": 1, "bdev_name": "Rn1", "bdev_type": "spdk",
               "uuid": "11111111-2222-3333-4444-555555555555"}),
    );
}

const NQN: &str = "nqn.2022-10.io.nvda.nvme:0";

#[test]
fn snap4_subsystems_take_dpf_keys_and_refuse_snap3_ones() {
    let Fixture {
        _dir,
        snap: _snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    // Only nqn (as DPF sends it): the defaults S-DPF's capture shows.
    assert_eq!(
        conn.ok("nvme_subsystem_create", json!({"nqn": NQN})),
        json!(true)
    );
    let both = "nqn.2022-10.io.nvda.nvme:1";
    conn.ok(
        "nvme_subsystem_create",
        json!({"nqn": both, "serial_number": "SN1", "model_number": "MN1", "nn": 32,
               "mnan": 16}),
    );
    for bad in [
        json!({"nqn": "x", "number_namespaces": 4}),
        json!({"nqn": "x", "maximum_namespaces": 4}),
        json!({"nqn": "x", "nn": "4"}),
        json!({"nqn": "x", "serial_number": 1}),
        json!({"serial_number": "SN"}),
    ] {
        assert_eq!(
            conn.refused("nvme_subsystem_create", bad.clone()),
            decode_failed(),
            "{bad}"
        );
    }
    assert_eq!(
        conn.refused("nvme_subsystem_create", json!({"nqn": NQN})).0,
        -17,
        "duplicate"
    );
    assert_eq!(
        conn.refused(
            "nvme_subsystem_create",
            json!({"nqn": "y", "serial_number": "123456789012345678901"})
        )
        .0,
        -22
    );
    let list = conn.ok("nvme_subsystem_list", Value::Null);
    assert_eq!(
        list[0],
        json!({"nqn": NQN, "sn": "MNC12", "mn": "BlueField NVMe SNAP Controller",
               "nn": 1024, "mnan": 1024, "controllers": [], "namespaces": []})
    );
    assert_eq!(
        (&list[1]["sn"], &list[1]["nn"], &list[1]["mnan"]),
        (&json!("SN1"), &json!(32), &json!(16))
    );
    assert_eq!(
        conn.refused("nvme_subsystem_destroy", json!({"nqn": NQN, "force": true})),
        decode_failed(),
        "no force"
    );
    assert_eq!(
        conn.ok("nvme_subsystem_destroy", json!({"nqn": NQN})),
        json!(true)
    );
    assert_eq!(
        conn.refused("nvme_subsystem_destroy", json!({"nqn": NQN}))
            .0,
        -19
    );
}

#[test]
fn snap4_namespaces_keep_a_given_uuid_and_get_a_random_one_otherwise() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    conn.ok("bdev_nvme_attach_controller", attach("A", "192.0.2.10"));
    conn.ok("bdev_nvme_attach_controller", attach("B", "192.0.2.11"));
    conn.ok("nvme_subsystem_create", json!({"nqn": NQN, "nn": 4}));
    let ns = |nsid: u32, bdev: &str| json!({"nqn": NQN, "nsid": nsid, "bdev_name": bdev, "bdev_type": "spdk"});
    for bad in [
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "An1", "bdev_type": "spdk",
               "nguid": "00112233445566778899aabbccddeeff"}),
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "An1", "bdev_type": "spdk",
               "eui64": "0011223344556677"}),
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "An1"}),
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "An1", "bdev_type": "kernel"}),
        json!({"nqn": NQN, "nsid": "1", "bdev_name": "An1", "bdev_type": "spdk"}),
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "An1", "bdev_type": "spdk",
               "uuid": "not-a-uuid"}),
    ] {
        assert_eq!(
            conn.refused("nvme_namespace_create", bad.clone()),
            decode_failed(),
            "{bad}"
        );
    }
    assert_eq!(
        conn.refused("nvme_namespace_create", ns(5, "An1")).0,
        -22,
        "nsid > nn"
    );
    assert_eq!(conn.refused("nvme_namespace_create", ns(1, "ghost")).0, -19);
    conn.ok("nvme_namespace_create", ns(1, "An1"));
    let mut given = ns(2, "Bn1");
    given["uuid"] = json!("AAAAAAAA-2222-3333-4444-555555555555");
    conn.ok("nvme_namespace_create", given);
    let state = snap.state();
    let random = &state.subsystems[NQN].namespaces[&1].uuid;
    assert_eq!(random.len(), 36, "{random}");
    assert_eq!(
        state.subsystems[NQN].namespaces[&2].uuid,
        "aaaaaaaa-2222-3333-4444-555555555555"
    );
    assert_eq!(
        conn.refused("nvme_namespace_create", ns(3, "An1")).0,
        -17,
        "a bdev backs one namespace"
    );
    // After a SNAP restart, a namespace created without a uuid gets another one.
    let mut snap = snap;
    snap.restart().expect("restart");
    let mut conn = Conn::open(snap.path());
    conn.ok("bdev_nvme_attach_controller", attach("A", "192.0.2.10"));
    conn.ok("nvme_subsystem_create", json!({"nqn": NQN, "nn": 4}));
    conn.ok("nvme_namespace_create", ns(1, "An1"));
    assert_ne!(&snap.state().subsystems[NQN].namespaces[&1].uuid, random);
}

#[test]
fn emulation_functions_list_and_address_controllers() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    snap4_subsystem(&mut conn, NQN);
    let functions = conn.ok("emulation_function_list", json!({"all": true}));
    assert_eq!(
        functions[0],
        json!({"hotplugged": false, "emulation_type": "NVME", "pf_index": 0,
               "pci_bdf": "03:00.2", "vhca_id": 2, "vuid": "MT2334XZ0001NVMES0D0F2",
               "ctrl_id": "",
               "vfs": [
                   {"hotplugged": false, "emulation_type": "NVME", "pf_index": 0,
                    "vf_index": 0, "pci_bdf": "03:0c.0", "vhca_id": 98,
                    "vuid": "MT2334XZ0001NVMES0D0F2VF1", "ctrl_id": ""},
                   {"hotplugged": false, "emulation_type": "NVME", "pf_index": 0,
                    "vf_index": 1, "pci_bdf": "03:0c.1", "vhca_id": 99,
                    "vuid": "MT2334XZ0001NVMES0D0F2VF2", "ctrl_id": ""}]})
    );
    assert_eq!(functions.as_array().map(Vec::len), Some(2));
    assert_eq!(conn.ok("emulation_function_list", Value::Null), functions);
    assert_eq!(
        conn.refused("emulation_function_list", json!({"all": 1})),
        decode_failed()
    );
    let create = |extra: Value| {
        let mut p = json!({"nqn": NQN});
        for (k, v) in extra.as_object().expect("object") {
            p[k] = v.clone();
        }
        p
    };
    // A PCI domain is not part of SNAP's BDF: no such function.
    let (code, message) = conn.refused(
        "nvme_controller_create",
        create(json!({"pci_bdf": "0000:03:00.2"})),
    );
    assert_eq!(code, -19, "{message}");
    assert!(message.contains("0000:03:00.2"), "{message}");
    assert_eq!(
        conn.refused("nvme_controller_create", create(json!({}))).0,
        -22
    );
    assert_eq!(
        conn.refused("nvme_controller_create", create(json!({"vf_id": 0})))
            .0,
        -22
    );
    assert_eq!(
        conn.refused("nvme_controller_create", create(json!({"pf_id": 7})))
            .0,
        -19
    );
    assert_eq!(
        conn.refused(
            "nvme_controller_create",
            create(json!({"pf_id": 0, "pci_bdf": "03:00.3"}))
        )
        .0,
        -22,
        "two keys naming different functions"
    );
    for bad in [
        json!({"pf_id": "0"}),
        json!({"pf_id": 0, "num_queues": "4"}),
        json!({"pf_id": 0, "suspended": "yes"}),
        json!({"pf_id": 0, "name": "x"}),
        json!({"pf_id": 0, "nr_io_queues": 4}),
    ] {
        assert_eq!(
            conn.refused("nvme_controller_create", create(bad.clone())),
            decode_failed(),
            "{bad}"
        );
    }
    let created = conn.ok(
        "nvme_controller_create",
        create(
            json!({"pci_bdf": "03:00.2", "ctrl": "c0", "suspended": true,
                      "num_queues": 8, "mdts": 5}),
        ),
    );
    assert_eq!(created, json!({"ctrl_id": "c0"}));
    let (code, message) = conn.refused(
        "nvme_controller_create",
        create(json!({"pf_id": 0, "ctrl": "c1"})),
    );
    assert_eq!(code, -17);
    assert!(
        message.contains("already exists") && message.contains("c0"),
        "{message}"
    );
    assert_eq!(
        conn.refused(
            "nvme_controller_create",
            create(json!({"pf_id": 1, "ctrl": "c0"}))
        ),
        (-17, "Controller c0 already exists".to_owned())
    );
    // By VF index, VUID and VHCA id; without `ctrl` SNAP names it.
    let vf = conn.ok(
        "nvme_controller_create",
        create(json!({"pf_id": 0, "vf_id": 1})),
    );
    assert_eq!(vf, json!({"ctrl_id": "NVMeCtrl1"}));
    conn.ok(
        "nvme_controller_create",
        create(json!({"vuid": "MT2334XZ0001NVMES0D0F3", "ctrl": "by_vuid"})),
    );
    conn.ok(
        "nvme_controller_create",
        create(json!({"vhca_id": 98, "ctrl": "by_vhca"})),
    );
    let functions = conn.ok("emulation_function_list", json!({"all": true}));
    assert_eq!(functions[0]["ctrl_id"], "c0");
    assert_eq!(functions[0]["vfs"][1]["ctrl_id"], "NVMeCtrl1");
    assert_eq!(functions[0]["vfs"][0]["ctrl_id"], "by_vhca");
    assert_eq!(functions[1]["ctrl_id"], "by_vuid");
    let state = snap.state();
    let c0 = &state.controllers["c0"];
    assert_eq!(
        (c0.function.as_str(), c0.num_queues, c0.mdts, c0.suspended),
        ("pf0", 8, 5, true)
    );
    assert_eq!(state.controllers["NVMeCtrl1"].function, "pf0vf1");
    // A table without VFs and with a virtio function.
    snap.set_functions(vec![FakePf {
        hotplugged: true,
        emulation_type: "VIRTIO_BLK".to_owned(),
        pf_index: 4,
        pci_bdf: "04:00.0".to_owned(),
        vhca_id: 9,
        vuid: "V".to_owned(),
        vfs: Vec::new(),
    }]);
    assert_eq!(
        conn.refused("nvme_controller_create", create(json!({"pf_id": 4})))
            .0,
        -19,
        "not an NVMe function"
    );
    assert_eq!(snap.functions()[0].pf_index, 4);
}

#[test]
fn snap4_controllers_run_attach_and_report_state_like_the_public_clients_show() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap4);
    snap4_subsystem(&mut conn, NQN);
    conn.ok(
        "nvme_controller_create",
        json!({"nqn": NQN, "pf_id": 0, "ctrl": "live"}),
    );
    // Attach to a running controller (S-PERF does).
    assert_eq!(
        conn.ok(
            "nvme_controller_attach_ns",
            json!({"ctrl_id": "live", "nsid": 1})
        ),
        json!(true)
    );
    assert_eq!(
        conn.refused(
            "nvme_controller_attach_ns",
            json!({"ctrl_id": "live", "nsid": 1})
        )
        .0,
        -17
    );
    let controllers = conn.ok("nvme_controller_list", Value::Null);
    assert_eq!(
        controllers,
        json!([{"ctrl_id": "live", "vhca_id": 2, "nqn": NQN, "mdts": 7, "num_queues": 16,
                "namespaces": [{"nsid": 1, "bdev": "Rn1",
                                "uuid": "11111111-2222-3333-4444-555555555555"}]}])
    );
    assert_eq!(
        conn.ok("nvme_controller_list", json!({"ctrl": "live"})),
        controllers
    );
    let subsystem = |conn: &mut Conn| conn.ok("nvme_subsystem_list", Value::Null)[0].clone();
    let sub = subsystem(&mut conn);
    assert_eq!(
        sub["controllers"][0],
        json!({"ctrl_id": "live", "vhca_id": 2, "nqn": NQN, "plugged": true,
               "state": "STARTED", "num_queues": 16, "max_queues": 32, "mdts": 7,
               "namespaces": [{"nsid": 1, "bdev": "Rn1",
                               "uuid": "11111111-2222-3333-4444-555555555555"}]})
    );
    assert_eq!(
        sub["namespaces"][0],
        json!({"nsid": 1, "bdev": "Rn1", "nqn": NQN,
               "uuid": "11111111-2222-3333-4444-555555555555", "ready": "Yes",
               "max inflights per weight": 65535, "controllers": [{"ctrl_id": "live"}]})
    );
    // Suspend / resume keep {ctrl_id}; the state follows.
    assert_eq!(
        conn.ok("nvme_controller_suspend", json!({"ctrl_id": "live"})),
        json!(true)
    );
    assert_eq!(subsystem(&mut conn)["controllers"][0]["state"], "SUSPENDED");
    assert_eq!(
        conn.refused("nvme_controller_resume", json!({"ctrl": "live"})),
        decode_failed()
    );
    conn.ok("nvme_controller_resume", json!({"ctrl_id": "live"}));
    assert_eq!(subsystem(&mut conn)["controllers"][0]["state"], "STARTED");
    let (code, message) = conn.refused("nvme_controller_resume", json!({"ctrl_id": "live"}));
    assert_eq!(code, -1);
    assert!(message.contains("not suspended"), "{message}");
    // Busy objects.
    assert_eq!(
        conn.refused("nvme_namespace_destroy", json!({"nqn": NQN, "nsid": 1}))
            .0,
        -16
    );
    assert_eq!(
        conn.refused("nvme_controller_destroy", json!({"ctrl_id": "live"}))
            .0,
        -16
    );
    assert_eq!(
        conn.refused("nvme_subsystem_destroy", json!({"nqn": NQN}))
            .0,
        -16
    );
    assert_eq!(
        conn.refused(
            "nvme_controller_destroy",
            json!({"ctrl_id": "NVMeCtrl99", "force": true})
        ),
        (-19, "Controller NVMeCtrl99 not found".to_owned())
    );
    // The bdev going away leaves the namespace not ready.
    conn.ok("bdev_nvme_detach_controller", json!({"name": "R"}));
    assert_eq!(subsystem(&mut conn)["namespaces"][0]["ready"], "No");
    // Tear down in order.
    conn.ok(
        "nvme_controller_detach_ns",
        json!({"ctrl_id": "live", "nsid": 1}),
    );
    conn.ok("nvme_controller_destroy", json!({"ctrl_id": "live"}));
    assert_eq!(
        conn.refused("nvme_subsystem_destroy", json!({"nqn": NQN}))
            .0,
        -16,
        "namespaces remain"
    );
    conn.ok("nvme_namespace_destroy", json!({"nqn": NQN, "nsid": 1}));
    conn.ok("nvme_subsystem_destroy", json!({"nqn": NQN}));
    let state = snap.state();
    assert!(state.subsystems.is_empty() && state.controllers.is_empty());
}

#[test]
fn snap3_follows_the_snap_rdma_pages() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = fixture(FakeDialect::Snap3);
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    conn.ok("bdev_nvme_attach_controller", attach("S", "192.0.2.11"));
    assert_eq!(
        conn.ok(
            "subsystem_nvme_create",
            json!({"nqn": NQN, "serial_number": "SN1", "model_number": "MN1", "nn": 8,
                   "maximum_namespaces": 8})
        ),
        json!("true")
    );
    assert_eq!(
        conn.refused(
            "subsystem_nvme_create",
            json!({"nqn": "x", "serial_number": "S"})
        ),
        decode_failed(),
        "model_number is required"
    );
    assert_eq!(
        conn.ok("emulation_managers_list", Value::Null),
        json!([{"emulation_manager": "mlx5_0", "hotplug_support": true,
                "supported_types": ["nvme", "virtio_blk"]}])
    );
    let functions = conn.ok("emulation_functions_list", Value::Null);
    assert_eq!(
        functions[0],
        json!({"emulation_manager": "mlx5_0", "emulation_type": "nvme", "pci_index": 0,
               "pci_bdf": "03:00.2", "total_vf": 2,
               "virtual_functions": [{"vf_index": 0, "vf_bdf": "03:0c.0"},
                                     {"vf_index": 1, "vf_bdf": "03:0c.1"}]})
    );
    let create = json!({"emulation_manager": "mlx5_0", "nqn": NQN, "pci_bdf": "03:00.2",
                        "nr_io_queues": 8, "mdts": 4});
    let mut other_manager = create.clone();
    other_manager["emulation_manager"] = json!("mlx5_2");
    assert_eq!(conn.refused("controller_nvme_create", other_manager).0, -19);
    let mut domain = create.clone();
    domain["pci_bdf"] = json!("0000:03:00.2");
    assert_eq!(conn.refused("controller_nvme_create", domain).0, -19);
    let mut snap4_keys = create.clone();
    snap4_keys["num_queues"] = json!(8);
    assert_eq!(
        conn.refused("controller_nvme_create", snap4_keys),
        decode_failed()
    );
    let mut two_ways = create.clone();
    two_ways["pf_id"] = json!(0);
    assert_eq!(conn.refused("controller_nvme_create", two_ways).0, -22);
    assert_eq!(
        conn.ok("controller_nvme_create", create.clone()),
        json!({"name": "NvmeEmu0pf0", "cntlid": 1})
    );
    assert_eq!(conn.refused("controller_nvme_create", create).0, -17);
    let vf = conn.ok(
        "controller_nvme_create",
        json!({"emulation_manager": "mlx5_0", "nqn": NQN, "pf_id": 0, "vf_id": 1}),
    );
    assert_eq!(vf, json!({"name": "NvmeEmu0pf0vf1", "cntlid": 2}));
    let state = snap.state();
    assert_eq!(
        (
            state.controllers["NvmeEmu0pf0"].num_queues,
            state.controllers["NvmeEmu0pf0"].mdts
        ),
        (8, 4)
    );
    // Namespaces: uuid, nguid and eui64 are SNAP 3 keys.
    let ns = json!({"bdev_type": "spdk", "bdev": "Rn1", "nsid": 1, "subnqn": NQN,
                    "cntlid": 1, "uuid": "11111111-2222-3333-4444-555555555555",
                    "nguid": "00112233445566778899aabbccddeeff",
                    "eui64": "0011223344556677"});
    assert_eq!(conn.ok("controller_nvme_namespace_attach", ns), json!(true));
    let mut by_name = json!({"bdev_type": "spdk", "bdev": "Sn1", "nsid": 2,
                             "ctrl": "NvmeEmu0pf0vf1", "eui64": "bad"});
    assert_eq!(
        conn.refused("controller_nvme_namespace_attach", by_name.clone())
            .0,
        -22
    );
    by_name.as_object_mut().map(|m| m.remove("eui64"));
    conn.ok("controller_nvme_namespace_attach", by_name);
    let state = snap.state();
    let ns1 = &state.subsystems[NQN].namespaces[&1];
    assert_eq!(
        ns1.nguid.as_deref(),
        Some("00112233445566778899aabbccddeeff")
    );
    assert_eq!(ns1.eui64.as_deref(), Some("0011223344556677"));
    assert_eq!(
        conn.ok("controller_list", Value::Null)[0],
        json!({"subnqn": NQN, "cntlid": 1, "name": "NvmeEmu0pf0",
               "emulation_manager": "mlx5_0", "type": "nvme", "pci_index": 0,
               "pci_bdf": "03:00.2"})
    );
    assert_eq!(
        conn.ok("subsystem_nvme_list", Value::Null)[0]["controllers"][1],
        json!({"name": "NvmeEmu0pf0vf1", "cntlid": 2, "pci_bdf": "03:0c.1", "pci_index": 0})
    );
    // Delete without force (force is not a key).
    assert_eq!(
        conn.refused(
            "controller_nvme_delete",
            json!({"subnqn": NQN, "cntlid": 1, "force": true})
        ),
        decode_failed()
    );
    conn.ok(
        "controller_nvme_namespace_detach",
        json!({"nsid": 1, "subnqn": NQN, "cntlid": 1}),
    );
    conn.ok(
        "controller_nvme_delete",
        json!({"subnqn": NQN, "cntlid": 1}),
    );
    conn.ok("controller_nvme_delete", json!({"name": "NvmeEmu0pf0vf1"}));
    assert_eq!(
        conn.ok("subsystem_nvme_delete", json!({"nqn": NQN})),
        json!(true)
    );
    let state = snap.state();
    assert!(state.subsystems.is_empty() && state.controllers.is_empty());
    // A configured manager list.
    snap.set_emulation_managers(vec![FakeEmulationManager {
        emulation_manager: "mlx5_2".to_owned(),
        hotplug_support: false,
        supported_types: vec!["nvme".to_owned()],
    }]);
    assert_eq!(
        conn.ok("emulation_managers_list", Value::Null)[0]["emulation_manager"],
        "mlx5_2"
    );
    // SNAP 4 methods are unknown to SNAP 3.
    assert_eq!(
        conn.refused("nvme_subsystem_list", Value::Null),
        (-32601, "Method not found".to_owned())
    );
}

#[test]
fn restart_loses_state_but_keeps_configuration_and_faults_fire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut snap = FakeSnap::start(&dir.path().join("spdk.sock")).expect("start");
    snap.set_version("v26.01");
    snap.refuse_connections_to("192.0.2.99", "4420");
    let mut conn = Conn::open(snap.path());
    conn.ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    snap.cut_next_reply("bdev_get_bdevs");
    conn.send(br#"{"jsonrpc":"2.0","method":"bdev_get_bdevs","id":1}"#);
    let mut rest = Vec::new();
    let _ = conn.stream.read_to_end(&mut rest);
    assert!(
        serde_json::from_slice::<Value>(&rest).is_err(),
        "half a reply"
    );
    let old_host = snap.state().default_hostnqn;
    snap.restart().expect("restart");
    assert!(snap.state().bdevs.is_empty());
    assert_ne!(snap.state().default_hostnqn, old_host);
    let mut conn = Conn::open(snap.path());
    assert_eq!(
        conn.ok("spdk_get_version", Value::Null)["version"],
        "SPDK v26.01"
    );
    assert_eq!(
        conn.refused("bdev_nvme_attach_controller", attach("R", "192.0.2.99"))
            .0,
        -5
    );
    snap.delay_replies(Some(Duration::from_millis(200)));
    let started = std::time::Instant::now();
    conn.ok("bdev_get_bdevs", Value::Null);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

mod virtio_blk;

mod replay;
