//! Client for the NVIDIA SNAP / SPDK JSON-RPC socket (storage.md §2, §3).
//!
//! SNAP 4 (DOCA SNAP, BlueField-3), SNAP 3 (mlnx_snap, BlueField-2) and plain SPDK share the
//! transport and the standard SPDK methods but name the NVMe emulation methods differently,
//! so the agent asks `rpc_get_methods` which dialect it is talking to before it acts.
//!
//! Every typed operation is a method on [`SnapClient`] returning a [`SnapCall`] (set a
//! `timeout`, then `execute`): standard SPDK bdev methods in `bdev.rs` (QoS limits in `qos.rs`), DOCA SNAP `nvme_*` in
//! `snap4.rs`, mlnx_snap `subsystem_nvme_*`/`controller_nvme_*` in `snap3.rs`, virtio-blk
//! emulation of both in `virtio_blk.rs`, and
//! [`NvmeEmulation`] dispatching between the two. Keys the reference marks UNVERIFIED live in
//! [`unverified`]. Errors keep SNAP's code and message ([`SnapError::kind`] classifies them).

mod bdev;
mod call;
mod client;
mod dialect;
mod emulation;
mod error;
mod iostat;
mod iostat_form;
mod listing;
mod multipath;
mod qos;
mod snap3;
mod snap4;
pub mod unverified;
mod version;
mod virtio_blk;

pub use bdev::{
    AddressFamilyParam, AttachController, BdevInfo, BdevIostat, Iostat, NvmeController,
    NvmeControllerPath, PathHost, TransportId, TransportType,
};
pub use call::SnapCall;
pub use client::SnapClient;
pub use dialect::SnapDialect;
pub use emulation::{
    default_serial, ControllerParams, ControllerRef, EmulatedFunction, NamespaceIds, NvmeEmulation,
    SubsystemParams, DEFAULT_MODEL_NUMBER,
};
pub use error::{SnapError, SnapErrorKind};
pub use iostat::IostatCall;
pub use iostat_form::IostatForm;
pub use listing::FrameworkSubsystem;
pub use multipath::{
    IoPath, IoPathTransport, IoPaths, MultipathMode, MultipathPolicy, NvmeBdevPaths,
    NvmeDriverSpecific, PollGroupPaths,
};
pub use qos::{QosLimitError, QosLimits, SetQosLimit, QOS_MAX_MBYTES_PER_SEC, QOS_MIN_IOS_PER_SEC};
pub use snap3::{
    Snap3ControllerCreate, Snap3ControllerCreated, Snap3ControllerInfo, Snap3EmulationManager,
    Snap3NamespaceAttach, Snap3Subsystem, Snap3SubsystemInfo,
};
pub use snap4::{
    ControllerCreate, ControllerCreated, EmulationFunctionInfo, EmulationVfInfo, Ignored,
    NamespaceCreate, NamespaceInfo, SubsystemController, SubsystemInfo,
};
pub use unverified::{ControllerInfo, SubsystemCreate, STATE_STARTED};
pub use version::{SpdkVersion, SpdkVersionFields};
pub use virtio_blk::{
    Snap3ListedController, Snap3VirtioBlkCreate, VirtioBlkControllerInfo, VirtioBlkCreate,
    VirtioBlkCreated, VirtioBlkParams, VirtioBlkSeen,
};

/// Where SNAP and SPDK listen unless told otherwise (`SPDK_DEFAULT_RPC_ADDR`).
pub const DEFAULT_SNAP_SOCKET: &str = "/var/tmp/spdk.sock";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixListener;

    #[test]
    fn dialect_from_method_list() {
        let snap4 = [
            "rpc_get_methods",
            "nvme_subsystem_create",
            "bdev_get_iostat",
        ];
        assert_eq!(SnapDialect::from_methods(&snap4), SnapDialect::Snap4);
        let snap3 = ["subsystem_nvme_create", "controller_nvme_create"];
        assert_eq!(SnapDialect::from_methods(&snap3), SnapDialect::Snap3);
        let spdk = ["bdev_nvme_attach_controller", "nvmf_create_subsystem"];
        assert_eq!(SnapDialect::from_methods(&spdk), SnapDialect::PlainSpdk);
        assert_eq!(
            SnapDialect::from_methods::<&str>(&[]),
            SnapDialect::PlainSpdk
        );
    }

    /// Answers each request on one connection from `answer`, after checking it has the
    /// JSON-RPC 2.0 shape with no params (both methods take none).
    async fn serve(listener: UnixListener, answer: fn(&str) -> Value, calls: usize) {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buf = Vec::new();
        for _ in 0..calls {
            let request = loop {
                let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                if let Some(Ok(v)) = values.next() {
                    let end = values.byte_offset();
                    buf.drain(..end);
                    break v;
                }
                let mut chunk = [0_u8; 1024];
                let n = stream.read(&mut chunk).await.expect("read");
                assert_ne!(n, 0, "client hung up");
                buf.extend_from_slice(&chunk[..n]);
            };
            assert_eq!(request["jsonrpc"], "2.0");
            assert!(request.get("params").is_none(), "{request}");
            let method = request["method"].as_str().expect("method");
            let reply = json!({"jsonrpc":"2.0","id":request["id"],"result":answer(method)});
            stream
                .write_all(reply.to_string().as_bytes())
                .await
                .expect("write");
        }
    }

    #[tokio::test]
    async fn version_methods_and_dialect_over_the_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let server = tokio::spawn(serve(
            listener,
            |method| match method {
                "spdk_get_version" => json!({"version":"SPDK v23.01","fields":{"major":23}}),
                _ => json!([
                    "spdk_get_version",
                    "rpc_get_methods",
                    "nvme_subsystem_create"
                ]),
            },
            3,
        ));
        let snap = SnapClient::new(&path);
        let version = snap.spdk_get_version().await.expect("version");
        assert_eq!(version.version, "SPDK v23.01");
        let methods = snap.rpc_get_methods().await.expect("methods");
        assert_eq!(methods.len(), 3);
        assert_eq!(snap.dialect().await.expect("dialect"), SnapDialect::Snap4);
        server.await.expect("server passes");
    }

    #[test]
    fn releases_from_fields_or_text_choose_the_iostat_form() {
        let version = |text: &str| SpdkVersion {
            version: text.to_owned(),
            fields: None,
        };
        assert_eq!(version("SPDK v24.01").release(), Some((24, 1)));
        assert_eq!(
            version("SPDK v24.01.1-pre git sha1 3a2b1c").release(),
            Some((24, 1))
        );
        assert_eq!(version("SNAP").release(), None);
        let with_fields = SpdkVersion {
            version: "custom".to_owned(),
            fields: Some(SpdkVersionFields {
                major: 26,
                minor: 5,
            }),
        };
        assert_eq!(with_fields.release(), Some((26, 5)));
        assert_eq!(IostatForm::for_release(Some((24, 1))), IostatForm::Name);
        assert_eq!(IostatForm::for_release(Some((26, 1))), IostatForm::Name);
        assert_eq!(IostatForm::for_release(Some((26, 5))), IostatForm::Names);
        assert_eq!(IostatForm::for_release(None), IostatForm::Name);
    }

    /// A peer that answers `spdk_get_version` with `version` and accepts only the
    /// `bdev_get_iostat` form `accepts`, refusing the other as SPDK does (-32603). Returns
    /// the methods and params it saw.
    async fn iostat_peer(
        listener: UnixListener,
        version: &'static str,
        accepts: &'static str,
        calls: usize,
    ) -> Vec<Value> {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..calls {
            let request = loop {
                let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                if let Some(Ok(v)) = values.next() {
                    let end = values.byte_offset();
                    buf.drain(..end);
                    break v;
                }
                let mut chunk = [0_u8; 1024];
                let n = stream.read(&mut chunk).await.expect("read");
                assert_ne!(n, 0, "client hung up");
                buf.extend_from_slice(&chunk[..n]);
            };
            seen.push(request.clone());
            let reply = match request["method"].as_str() {
                Some("spdk_get_version") => {
                    json!({"jsonrpc":"2.0","id":request["id"],"result":{"version":version}})
                }
                _ if request["params"].get(accepts).is_some() => json!({
                    "jsonrpc":"2.0","id":request["id"],
                    "result":{"tick_rate":1000,"ticks":5,"bdevs":[{"name":"r0n1","bytes_read":4096,
                        "num_read_ops":1,"bytes_written":0,"num_write_ops":0}]}
                }),
                _ => json!({"jsonrpc":"2.0","id":request["id"],
                    "error":{"code":-32603,"message":"spdk_json_decode_object failed"}}),
            };
            stream
                .write_all(reply.to_string().as_bytes())
                .await
                .expect("write");
        }
        seen
    }

    #[tokio::test]
    async fn iostat_sends_name_to_spdk_24_01_and_remembers_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v24.01", "name", 3));
        let snap = SnapClient::new(&path);
        for _ in 0..2 {
            let stats = snap
                .bdev_get_iostat(Some("r0n1"))
                .execute()
                .await
                .expect("iostat");
            assert_eq!(stats.bdevs[0].bytes_read, 4096);
        }
        let seen = peer.await.expect("peer");
        // One version query, then `name` each time: never the `names` that v24.01 refuses.
        assert_eq!(seen[0]["method"], "spdk_get_version");
        assert_eq!(seen[1]["params"], json!({"name":"r0n1"}));
        assert_eq!(seen[2]["params"], json!({"name":"r0n1"}));
        assert_eq!(snap.iostat_form(), Some(IostatForm::Name));
    }

    #[tokio::test]
    async fn iostat_falls_back_on_a_decode_failure_and_keeps_the_working_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        // A peer claiming v24.01 that takes only `names` (a vendor backport): the first
        // form is refused with -32603, the other is tried once and then kept.
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v24.01", "names", 4));
        let snap = SnapClient::new(&path);
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("after fallback");
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("remembered");
        let seen = peer.await.expect("peer");
        assert_eq!(seen[1]["params"], json!({"name":"r0n1"}));
        assert_eq!(seen[2]["params"], json!({"names":["r0n1"]}));
        assert_eq!(seen[3]["params"], json!({"names":["r0n1"]}));
        assert_eq!(snap.iostat_form(), Some(IostatForm::Names));
    }

    #[tokio::test]
    async fn iostat_sends_names_to_spdk_26_05() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v26.05", "names", 2));
        let snap = SnapClient::new(&path);
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("iostat");
        let seen = peer.await.expect("peer");
        assert_eq!(seen[1]["params"], json!({"names":["r0n1"]}));
    }

    #[tokio::test]
    async fn missing_socket_is_transient_and_names_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("absent.sock");
        let err = SnapClient::new(&path)
            .spdk_get_version()
            .await
            .expect_err("no SNAP");
        assert!(err.is_transient());
        assert!(err.to_string().contains("absent.sock"), "{err}");
    }
}
