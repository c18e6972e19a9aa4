//! End-to-end tests of [`Client`] against scripted servers on a temporary Unix socket.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;

use crate::framing::FrameDecoder;
use crate::{Client, ClientOptions, Error};

/// Generous bound so a broken test fails instead of hanging.
const LONG: Duration = Duration::from_secs(10);

/// One accepted connection of a scripted server, with the server's own framing.
struct Peer {
    stream: UnixStream,
    decoder: FrameDecoder,
}

impl Peer {
    async fn accept(listener: &UnixListener) -> Self {
        let (stream, _) = tokio::time::timeout(LONG, listener.accept())
            .await
            .expect("client connects in time")
            .expect("accept");
        Self {
            stream,
            decoder: FrameDecoder::new(1 << 20),
        }
    }

    /// Reads the next message the client sent.
    async fn recv(&mut self) -> Value {
        let mut buf = [0_u8; 4096];
        loop {
            if let Some(v) = self.decoder.next_frame().expect("client sends valid JSON") {
                return v;
            }
            let n = tokio::time::timeout(LONG, self.stream.read(&mut buf))
                .await
                .expect("client sends in time")
                .expect("read");
            assert_ne!(n, 0, "client closed the connection");
            self.decoder.extend(&buf[..n]);
        }
    }

    async fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes()).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }
}

fn id_of(request: &Value) -> Value {
    request.get("id").cloned().expect("request has an id")
}

fn sock(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("rpc.sock")
}

fn client_v2(path: &Path) -> Client {
    Client::new(path, ClientOptions::v2())
}

async fn join(server: JoinHandle<()>) {
    tokio::time::timeout(LONG, server)
        .await
        .expect("server script finishes")
        .expect("server script passes");
}

#[tokio::test]
async fn reply_split_into_one_byte_chunks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        assert_eq!(req["jsonrpc"], "2.0");
        assert_eq!(req["method"], "spdk_get_version");
        assert!(req.get("params").is_none(), "params omitted: {req}");
        let reply = json!({"jsonrpc":"2.0","id":id_of(&req),
            "result":{"version":"SPDK v23.01 {x} \"q\"","fields":{"major":23}}});
        for b in reply.to_string().as_bytes() {
            peer.send_raw(&[*b]).await;
            peer.stream.flush().await.expect("flush");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let client = client_v2(&sock(&dir));
    let v = client
        .request("spdk_get_version")
        .execute_value()
        .await
        .expect("reply");
    assert_eq!(v["version"], "SPDK v23.01 {x} \"q\"");
    join(server).await;
}

#[tokio::test]
async fn concurrent_calls_answered_in_reverse_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let first = peer.recv().await;
        let second = peer.recv().await;
        assert_ne!(id_of(&first), id_of(&second));
        for req in [second, first] {
            let answer = json!(format!("answer to {}", req["params"]["n"]));
            peer.send(&json!({"jsonrpc":"2.0","id":id_of(&req),"result":answer}))
                .await;
        }
    });
    let client = client_v2(&sock(&dir));
    let (a, b) = tokio::join!(
        client
            .request("m")
            .params(json!({"n":1}))
            .execute::<String>(),
        client
            .clone()
            .request("m")
            .params(json!({"n":2}))
            .execute::<String>(),
    );
    assert_eq!(a.expect("first call"), "answer to 1");
    assert_eq!(b.expect("second call"), "answer to 2");
    join(server).await;
}

#[tokio::test]
async fn v2_error_reply_is_rpc_error_with_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&req),
            "error":{"code":-32601,"message":"Method not found","data":{"m":"nope"}}}))
            .await;
    });
    let err = client_v2(&sock(&dir))
        .request("nope")
        .execute_value()
        .await
        .expect_err("server refuses");
    match &err {
        Error::Rpc {
            method,
            code,
            message,
            data,
        } => {
            assert_eq!((method.as_str(), *code), ("nope", -32601));
            assert_eq!(message, "Method not found");
            assert_eq!(data, &Some(json!({"m":"nope"})));
        }
        other => panic!("expected Rpc, got {other:?}"),
    }
    assert!(!err.is_transient());
    join(server).await;
}

#[tokio::test]
async fn timed_out_call_is_removed_and_a_later_call_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let slow = peer.recv().await;
        let next = peer.recv().await;
        // The late reply must be dropped, not handed to the next call.
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&slow),"result":"late"}))
            .await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&next),"result":"on time"}))
            .await;
    });
    let client = client_v2(&sock(&dir));
    let err = client
        .request("slow")
        .timeout(Duration::from_millis(50))
        .execute_value()
        .await
        .expect_err("no reply in time");
    assert!(
        matches!(&err, Error::Timeout { method, after } if method == "slow" && *after == Duration::from_millis(50)),
        "{err:?}"
    );
    assert!(err.is_transient());
    assert_eq!(client.pending_calls().await, 0, "timed-out slot removed");
    let v = client
        .request("next")
        .execute::<String>()
        .await
        .expect("later call");
    assert_eq!(v, "on time");
    join(server).await;
}

#[tokio::test]
async fn server_closing_mid_reply_fails_the_call_then_a_restarted_server_is_reached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        let reply = json!({"jsonrpc":"2.0","id":id_of(&req),"result":"never whole"}).to_string();
        peer.send_raw(&reply.as_bytes()[..reply.len() / 2]).await;
        // Dropping the peer and the listener is the server process going away.
    });
    let client = client_v2(&path);
    let err = client
        .request("first")
        .execute_value()
        .await
        .expect_err("connection dies");
    assert!(
        matches!(&err, Error::ConnectionClosed { method, .. } if method == "first"),
        "{err:?}"
    );
    assert!(err.is_transient());
    join(server).await;

    // Nobody listening: a clear, transient connect error.
    std::fs::remove_file(&path).expect("remove stale socket");
    let err = client
        .request("down")
        .execute_value()
        .await
        .expect_err("no server");
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(err.is_transient());

    // The server restarts on the same path; the same client reconnects by itself.
    let listener = UnixListener::bind(&path).expect("rebind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&req),"result":"back"}))
            .await;
    });
    let v = client
        .request("second")
        .execute::<String>()
        .await
        .expect("reconnected");
    assert_eq!(v, "back");
    join(server).await;
}

#[tokio::test]
async fn v1_echo_is_answered_and_notifications_are_delivered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        assert_eq!(
            req,
            json!({"method":"list_dbs","params":[],"id":id_of(&req)})
        );
        peer.send(&json!({"method":"echo","params":["ping", 1],"id":"echo"}))
            .await;
        let answer = peer.recv().await;
        assert_eq!(
            answer,
            json!({"result":["ping", 1],"error":null,"id":"echo"})
        );
        peer.send(&json!({"method":"update","params":["mon",{"Bridge":{}}],"id":null}))
            .await;
        peer.send(&json!({"result":["Open_vSwitch","_Server"],"error":null,"id":id_of(&req)}))
            .await;
        let failing = peer.recv().await;
        peer.send(
            &json!({"result":null,"error":{"error":"unknown database"},"id":id_of(&failing)}),
        )
        .await;
    });
    let client = Client::new(sock(&dir), ClientOptions::v1());
    let mut notifications = client.notifications();
    let dbs: Vec<String> = client
        .request("list_dbs")
        .execute()
        .await
        .expect("list_dbs");
    assert_eq!(dbs, ["Open_vSwitch", "_Server"]);
    let n = tokio::time::timeout(LONG, notifications.recv())
        .await
        .expect("notification in time")
        .expect("notification");
    assert_eq!(n.method, "update");
    assert_eq!(n.params, json!(["mon", {"Bridge":{}}]));
    let err = client
        .request("get_schema")
        .params(json!(["nope"]))
        .execute_value()
        .await
        .expect_err("error reply");
    assert!(
        matches!(&err, Error::RpcV1 { error, .. } if error["error"] == "unknown database"),
        "{err:?}"
    );
    join(server).await;
}

#[tokio::test]
async fn frame_larger_than_max_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        let big = "x".repeat(4096);
        // Errors are fine here: the client may hang up before the whole reply is written.
        let reply = json!({"jsonrpc":"2.0","id":id_of(&req),"result":big}).to_string();
        let _ = peer.stream.write_all(reply.as_bytes()).await;
    });
    let options = ClientOptions {
        max_frame: 1024,
        ..ClientOptions::v2()
    };
    let err = Client::new(sock(&dir), options)
        .request("big")
        .execute_value()
        .await
        .expect_err("frame too large");
    assert!(
        matches!(err, Error::FrameTooLarge { limit: 1024 }),
        "{err:?}"
    );
    join(server).await;
}

#[tokio::test]
async fn wrong_jsonrpc_version_is_a_protocol_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        peer.send(&json!({"jsonrpc":"1.0","id":id_of(&req),"result":true}))
            .await;
    });
    let err = client_v2(&sock(&dir))
        .request("m")
        .execute_value()
        .await
        .expect_err("wrong version");
    assert!(
        matches!(&err, Error::Protocol { detail } if detail.contains("2.0")),
        "{err:?}"
    );
    assert!(!err.is_transient());
    join(server).await;
}

#[tokio::test]
async fn result_of_the_wrong_type_is_a_decode_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(sock(&dir)).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&req),"result":"text"}))
            .await;
    });
    let err = client_v2(&sock(&dir))
        .request("m")
        .execute::<u64>()
        .await
        .expect_err("not a number");
    assert!(
        matches!(&err, Error::Decode { method, .. } if method == "m"),
        "{err:?}"
    );
    join(server).await;
}

#[tokio::test]
async fn connection_status_reports_loss_and_each_new_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let client = Client::new(&path, ClientOptions::v1());
    let mut status = client.connection_status();
    assert_eq!(
        (status.borrow().generation, status.borrow().connected),
        (0, false),
        "nothing connected before the first call"
    );

    let server = tokio::spawn(async move {
        let peer = Peer::accept(&listener).await;
        // The server goes away with the connection idle: no call fails, only the status
        // tells the client.
        drop(peer);
        listener
    });
    client.connect().await.expect("connect");
    assert_eq!(*status.borrow_and_update(), connected(1));
    let listener = tokio::time::timeout(LONG, server)
        .await
        .expect("server script finishes")
        .expect("server script passes");
    tokio::time::timeout(LONG, status.wait_for(|s| !s.connected))
        .await
        .expect("loss published in time")
        .expect("client alive");
    assert_eq!(status.borrow().generation, 1);

    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        peer.send(&json!({"result":"again","error":null,"id":id_of(&req)}))
            .await;
        // Keep the connection open until the client has seen the reply.
        let _ = peer.stream.read(&mut [0_u8; 1]).await;
    });
    let (v, generation) = client
        .request("echo-me")
        .execute_on_connection()
        .await
        .expect("reconnected");
    assert_eq!((v, generation), (json!("again"), 2));
    assert_eq!(*status.borrow_and_update(), connected(2));
    drop(client);
    join(server).await;
}

fn connected(generation: u64) -> crate::ConnectionStatus {
    crate::ConnectionStatus {
        generation,
        connected: true,
    }
}

mod transcript;
