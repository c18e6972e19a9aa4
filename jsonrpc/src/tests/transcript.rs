//! The recorder of a recording [`Client`](crate::Client): what a transcript holds, and the
//! capture mode's allow-list with its control (a client without a recorder sends anything).

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::UnixListener;

use super::{client_v2, id_of, join, sock, Peer, LONG};
use crate::{Client, ClientOptions, Error};

#[tokio::test]
async fn recorder_keeps_each_request_as_sent_and_each_answer_errors_included() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let first = peer.recv().await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&first),"result":[{"name":"m0"}]}))
            .await;
        let second = peer.recv().await;
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&second),
            "error":{"code":-32601,"message":"Method not found","data":{"x":1}}}))
            .await;
    });
    let recorder = crate::Recorder::new();
    let client = Client::recording(&path, ClientOptions::v2(), recorder.clone());
    recorder.set_reading(1);
    client
        .request("bdev_get_bdevs")
        .params(json!({"name":"m0"}))
        .execute_value()
        .await
        .expect("answered");
    recorder.set_reading(2);
    let err = client
        .request("nvme_subsystem_list")
        .execute_value()
        .await
        .expect_err("refused by the peer");
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err}");
    join(server).await;

    let exchanges = recorder.exchanges();
    assert_eq!(exchanges.len(), 2, "{exchanges:?}");
    assert_eq!(exchanges[0].reading, 1);
    assert_eq!(exchanges[0].method, "bdev_get_bdevs");
    assert_eq!(exchanges[0].params(), &json!({"name":"m0"}));
    assert_eq!(exchanges[0].request["jsonrpc"], "2.0");
    assert_eq!(exchanges[0].response["result"], json!([{"name":"m0"}]));
    assert!(!exchanges[0].is_error());
    assert_eq!(exchanges[1].reading, 2);
    assert_eq!(exchanges[1].params(), &Value::Null);
    assert!(exchanges[1].is_error());
    assert_eq!(
        exchanges[1].response["error"],
        json!({"code":-32601,"message":"Method not found","data":{"x":1}})
    );
    // The transcript format reads back to the same exchanges.
    let text = crate::to_jsonl(&exchanges);
    assert_eq!(text.lines().count(), 2);
    assert_eq!(crate::from_jsonl(&text).expect("parses"), exchanges);
    let bad = crate::from_jsonl("\n{\"reading\":1}\n").expect_err("not an exchange");
    assert_eq!(bad.line, 2);
}

#[tokio::test]
async fn capture_mode_refuses_a_method_off_the_allow_list_without_sending_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        // The only request to arrive is the allowed one: the refused create never does.
        let only = peer.recv().await;
        assert_eq!(only["method"], "spdk_get_version", "{only}");
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&only),"result":{"version":"v"}}))
            .await;
        let mut rest = [0_u8; 64];
        let n = tokio::time::timeout(LONG, peer.stream.read(&mut rest))
            .await
            .expect("client hangs up in time")
            .expect("read");
        assert_eq!(n, 0, "something more was sent: {:?}", &rest[..n]);
    });
    let recorder = crate::Recorder::allowing(&["spdk_get_version"]);
    let client = Client::recording(&path, ClientOptions::v2(), recorder.clone());
    let refused = client
        .request("bdev_malloc_create")
        .params(json!({"num_blocks":1,"block_size":512}))
        .execute_value()
        .await
        .expect_err("not read-only");
    assert!(
        matches!(&refused, Error::NotAllowed { method } if method == "bdev_malloc_create"),
        "{refused}"
    );
    assert!(refused.to_string().contains("allow-list"), "{refused}");
    assert!(!refused.is_transient());
    client
        .request("spdk_get_version")
        .execute_value()
        .await
        .expect("allowed");
    drop(client);
    join(server).await;
    assert_eq!(recorder.refused(), ["bdev_malloc_create"]);
    let methods: Vec<String> = recorder.exchanges().into_iter().map(|e| e.method).collect();
    assert_eq!(methods, ["spdk_get_version"]);
}

#[tokio::test]
async fn a_client_without_a_recorder_sends_any_method() {
    // Control for the refusal above: the same create is sent when not capturing.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let req = peer.recv().await;
        assert_eq!(req["method"], "bdev_malloc_create");
        peer.send(&json!({"jsonrpc":"2.0","id":id_of(&req),"result":"m0"}))
            .await;
    });
    let got = client_v2(&path)
        .request("bdev_malloc_create")
        .execute_value()
        .await
        .expect("sent");
    assert_eq!(got, json!("m0"));
    join(server).await;
}

#[tokio::test]
async fn a_params_check_refuses_one_call_of_a_method_and_sends_the_other() {
    // The same method twice: the check refuses the params it is told to (nothing of that
    // call reaches the peer) and lets the other through, so the refusal is the check's.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sock(&dir);
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let only = peer.recv().await;
        assert_eq!(only["params"], json!(["read"]), "{only}");
        peer.send(&json!({"id":id_of(&only),"result":"ok","error":null}))
            .await;
        let mut rest = [0_u8; 64];
        let n = tokio::time::timeout(LONG, peer.stream.read(&mut rest))
            .await
            .expect("client hangs up in time")
            .expect("read");
        assert_eq!(n, 0, "something more was sent: {:?}", &rest[..n]);
    });
    let recorder = crate::Recorder::allowing(&["op"]).checking_params(|_, params| {
        if params == &json!(["write"]) {
            Err("a write".to_owned())
        } else {
            Ok(())
        }
    });
    let client = Client::recording(&path, ClientOptions::v1(), recorder.clone());
    let refused = client
        .request("op")
        .params(json!(["write"]))
        .execute_value()
        .await
        .expect_err("refused by the check");
    assert!(
        matches!(&refused, Error::NotReadOnly { method, reason } if method == "op" && reason == "a write"),
        "{refused}"
    );
    let got = client
        .request("op")
        .params(json!(["read"]))
        .execute_value()
        .await
        .expect("allowed");
    assert_eq!(got, json!("ok"));
    drop(client);
    join(server).await;
    assert_eq!(recorder.refused(), ["op: a write"]);
    assert_eq!(recorder.exchanges().len(), 1);
}
