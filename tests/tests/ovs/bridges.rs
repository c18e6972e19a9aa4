//! Bridges and ports written by our client, read back with the real `ovs-vsctl`.

use std::time::Duration;

use dpu_ovs::ovsdb::{Error, InterfaceType, Ovsdb};

use crate::{client, daemons, unquote};

const APPLY: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_with_netdev_datapath_is_created_idempotently_and_deleted() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    let schema = ovs.check_schema().await.expect("schema");
    assert_eq!(schema.name, "Open_vSwitch");
    let dbs = ovs.list_dbs().await.expect("list_dbs");
    assert!(dbs.iter().any(|d| d == "Open_vSwitch"), "{dbs:?}");
    ovs.echo().await.expect("echo");

    let applied = ovs
        .bridges()
        .add("br0")
        .datapath_type("netdev")
        .external_id("owner", "dpu-ovs-test")
        .execute()
        .await
        .expect("add-br");
    assert!(applied.changed && applied.confirmed, "{applied:?}");
    assert_eq!(daemons.vsctl(&["list-br"]).expect("list-br").trim(), "br0");
    let dp = daemons.vsctl(&["get", "Bridge", "br0", "datapath_type"]);
    assert_eq!(unquote(&dp.expect("get")), "netdev");
    let cur_cfg = daemons.vsctl(&["get", "Open_vSwitch", ".", "cur_cfg"]);
    let cur_cfg: i64 = cur_cfg.expect("get cur_cfg").trim().parse().expect("int");
    assert!(
        Some(cur_cfg) >= applied.next_cfg,
        "ovs-vswitchd applied it: {cur_cfg} vs {applied:?}"
    );

    // Our listing sees ovs-vswitchd's state: the local port got its OpenFlow number.
    let br = ovs.bridges().get("br0").await.expect("get bridge");
    assert_eq!(br.datapath_type, "netdev");
    let local = &br.port("br0").expect("local port").interfaces[0];
    assert_eq!(
        (local.kind.as_str(), local.ofport),
        ("internal", Some(65534))
    );

    // Same settings again: no transaction, no error.
    let again = ovs
        .bridges()
        .add("br0")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("idempotent add-br");
    assert!(!again.changed);
    let err = ovs
        .bridges()
        .add("br0")
        .datapath_type("system")
        .execute()
        .await
        .expect_err("conflicting add-br");
    assert!(
        matches!(&err, Error::Conflict { kind: "bridge", name, .. } if name == "br0"),
        "{err:?}"
    );
    assert!(err.to_string().contains("datapath_type"), "{err}");

    ovs.bridges().del("br0").execute().await.expect("del-br");
    assert_eq!(daemons.vsctl(&["list-br"]).expect("list-br").trim(), "");
    assert!(ovs.bridges().list().await.expect("list").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_and_patch_ports_are_added_and_deleted() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    for br in ["bra", "brb"] {
        ovs.bridges()
            .add(br)
            .datapath_type("netdev")
            .execute()
            .await
            .expect("add-br");
    }
    ovs.ports()
        .add("bra", "int0")
        .interface_type(InterfaceType::Internal)
        .execute()
        .await
        .expect("internal port");
    ovs.ports()
        .add("bra", "pa")
        .patch_peer("pb")
        .execute()
        .await
        .expect("patch a");
    ovs.ports()
        .add("brb", "pb")
        .patch_peer("pa")
        .execute()
        .await
        .expect("patch b");

    let ports = daemons.vsctl(&["list-ports", "bra"]).expect("list-ports");
    assert_eq!(ports.split_whitespace().collect::<Vec<_>>(), ["int0", "pa"]);
    let get = |args: &[&str]| unquote(&daemons.vsctl(args).expect("ovs-vsctl get"));
    assert_eq!(get(&["get", "Interface", "int0", "type"]), "internal");
    assert_eq!(get(&["get", "Interface", "pa", "type"]), "patch");
    assert_eq!(get(&["get", "Interface", "pa", "options:peer"]), "pb");
    assert_eq!(get(&["port-to-br", "pb"]), "brb");
    // ovs-vswitchd opened them: an OpenFlow number each, no error.
    let br = ovs.bridges().get("bra").await.expect("bridge");
    for name in ["int0", "pa"] {
        let iface = &br.port(name).expect("port").interfaces[0];
        assert!(iface.ofport.is_some_and(|n| n > 0), "{iface:?}");
        assert_eq!(iface.error, None, "{iface:?}");
    }
    // The internal port is a real device in ovs-vswitchd's namespace.
    let links = daemons
        .netns()
        .ip(&["-o", "link", "show"])
        .expect("ip link");
    assert!(links.contains("int0"), "{links}");

    // Idempotent repeat, and a conflicting one naming what exists.
    let again = ovs
        .ports()
        .add("bra", "pa")
        .patch_peer("pb")
        .execute()
        .await;
    assert!(!again.expect("same settings").changed);
    let err = ovs
        .ports()
        .add("brb", "int0")
        .execute()
        .await
        .expect_err("name taken on another bridge");
    assert!(err.to_string().contains("bra"), "{err}");

    ovs.ports()
        .del("bra", "int0")
        .execute()
        .await
        .expect("del-port");
    let ports = daemons.vsctl(&["list-ports", "bra"]).expect("list-ports");
    assert_eq!(ports.trim(), "pa");
    let err = ovs
        .ports()
        .del("brb", "pa")
        .execute()
        .await
        .expect_err("pa is on bra");
    assert!(
        matches!(&err, Error::NotFound { kind: "port", .. }) && err.to_string().contains("bra"),
        "{err}"
    );
    let err = ovs.ports().del("bra", "bra").execute().await;
    assert!(matches!(err, Err(Error::InvalidValue { .. })), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_missing_bridge_is_not_found() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    let err = ovs
        .bridges()
        .del("nosuchbr")
        .execute()
        .await
        .expect_err("missing bridge");
    assert!(
        matches!(&err, Error::NotFound { kind: "bridge", name, .. } if name == "nosuchbr"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "bridge nosuchbr not found");
    let quiet = ovs.bridges().del("nosuchbr").if_exists().execute().await;
    assert!(!quiet.expect("--if-exists").changed);
    let err = ovs
        .ports()
        .add("nosuchbr", "p1")
        .execute()
        .await
        .expect_err("no bridge");
    assert!(
        matches!(err, Error::NotFound { kind: "bridge", .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn bad_names_are_rejected_before_any_transaction() {
    // No server behind this socket: any I/O would be an Rpc error, so an InvalidName
    // proves nothing was sent. Needs no daemons.
    let dir = tempfile::tempdir().expect("tempdir");
    let address = format!("unix:{}", dir.path().join("absent.sock").display());
    let ovs = Ovsdb::new(&address).expect("address");
    for name in ["", "sixteen-bytes-xx", "a/b", "with space", ".."] {
        let err = ovs
            .ports()
            .add("br0", name)
            .execute()
            .await
            .expect_err(name);
        assert!(
            matches!(&err, Error::InvalidName { kind: "port", .. }),
            "{name:?}: {err:?}"
        );
        let err = ovs.bridges().add(name).execute().await.expect_err(name);
        assert!(
            matches!(&err, Error::InvalidName { kind: "bridge", .. }),
            "{err:?}"
        );
    }
    let err = ovs
        .ports()
        .add("br0", "pa")
        .patch_peer("bad peer")
        .execute()
        .await
        .expect_err("bad peer");
    assert!(
        matches!(
            err,
            Error::InvalidName {
                kind: "patch peer",
                ..
            }
        ),
        "{err:?}"
    );
    let err = ovs
        .ports()
        .add("br0", "pa")
        .interface_type(InterfaceType::Patch)
        .execute()
        .await
        .expect_err("patch without peer");
    assert!(matches!(err, Error::InvalidValue { .. }), "{err:?}");
    // And the same client reports the absent server as a transport error.
    let err = ovs.bridges().list().await.expect_err("no server");
    assert!(
        matches!(err, Error::Rpc { .. }) && err.is_transient(),
        "{err:?}"
    );
}

/// Without the kernel module ovs-vswitchd cannot open the `system` datapath: it applies the
/// change (`cur_cfg` catches up) but never creates the bridge, and OVSDB shows it only as
/// a local interface without an `ofport`. Our client must call that a failure and take
/// the bridge out again; `netdev` on the same daemons is the positive control.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_whose_datapath_cannot_be_opened_is_refused_and_removed() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    match ovs.bridges().add("brsys").execute().await {
        Ok(applied) => {
            // This kernel has the openvswitch module: the refusal cannot be shown here,
            // but what was created must then really run.
            let br = ovs.bridges().get("brsys").await.expect("bridge");
            let local = br.local_interface().expect("local interface");
            assert_eq!(local.ofport, Some(65534), "{applied:?} {local:?}");
            dpu_tests::skip_kernel_feature!(
                "the kernel datapath works here, so ovs-vswitchd does not refuse it"
            );
        }
        Err(err) => {
            assert!(
                matches!(&err, Error::NotCreated { kind: "bridge", name, removed: true,
                    removal: None, error: None, datapath_type, .. }
                    if name == "brsys" && datapath_type.is_empty()),
                "{err:?}"
            );
            assert!(!err.is_transient(), "{err}");
            let text = err.to_string();
            assert!(text.contains("datapath type system"), "{text}");
        }
    }
    // Nothing half-applied: no bridge, no port, no interface row left behind.
    assert_eq!(daemons.vsctl(&["list-br"]).expect("list-br").trim(), "");
    let ifaces = daemons
        .vsctl(&["--columns=name", "list", "Interface"])
        .expect("list Interface");
    assert!(!ifaces.contains("brsys"), "{ifaces}");
    assert!(
        daemons
            .vswitchd_log()
            .contains("failed to create bridge brsys"),
        "the refusal is real: {}",
        daemons.vswitchd_log()
    );

    // Positive control: the userspace datapath on the same daemons runs the bridge.
    let applied = ovs
        .bridges()
        .add("brsys")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("netdev bridge");
    assert!(applied.changed && applied.confirmed, "{applied:?}");
    let br = ovs.bridges().get("brsys").await.expect("bridge");
    let local = br.local_interface().expect("local interface");
    assert_eq!((local.ofport, local.error.as_deref()), (Some(65534), None));
}

/// A port whose device does not exist in ovs-vswitchd's namespace gets `ofport` -1 and
/// OVS's reason in `error`; a bridge named like an existing device (`lo`) the same for its
/// local port. Both are refused with OVS's text and removed again; the bridge a refused
/// port was added to stays, with its other ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_or_bridge_vswitchd_cannot_open_is_refused_with_its_text_and_removed() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    ovs.bridges()
        .add("brp")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br");
    ovs.ports()
        .add("brp", "okint")
        .interface_type(InterfaceType::Internal)
        .execute()
        .await
        .expect("internal port");
    let err = ovs
        .ports()
        .add("brp", "nodev0")
        .execute()
        .await
        .expect_err("no such device");
    assert!(
        matches!(&err, Error::NotCreated { kind: "port", name, bridge, removed: true,
            error: Some(text), datapath_type, .. }
            if name == "nodev0" && bridge == "brp" && datapath_type == "netdev"
                && text == "could not open network device nodev0 (No such device)"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("port nodev0 to bridge brp (datapath type netdev)"),
        "{text}"
    );
    let ports = daemons.vsctl(&["list-ports", "brp"]).expect("list-ports");
    assert_eq!(ports.split_whitespace().collect::<Vec<_>>(), ["okint"]);
    let ifaces = daemons
        .vsctl(&["--columns=name", "list", "Interface"])
        .expect("list Interface");
    assert!(!ifaces.contains("nodev0"), "{ifaces}");

    let err = ovs
        .bridges()
        .add("lo")
        .datapath_type("netdev")
        .execute()
        .await
        .expect_err("lo exists and is no tap");
    assert!(
        matches!(&err, Error::NotCreated { kind: "bridge", removed: true,
            error: Some(text), .. } if text.starts_with("could not open network device lo")),
        "{err:?}"
    );
    let bridges = daemons.vsctl(&["list-br"]).expect("list-br");
    assert_eq!(bridges.split_whitespace().collect::<Vec<_>>(), ["brp"]);
}

/// A patch port whose peer does not exist yet gets an OpenFlow port and a warning in
/// `error`: that is not a refusal (the peer is added next), so it stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_port_waiting_for_its_peer_is_kept_with_the_warning() {
    let daemons = daemons!();
    let ovs = client(&daemons, APPLY);
    ovs.bridges()
        .add("brw")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br");
    ovs.ports()
        .add("brw", "pw")
        .patch_peer("nopeer")
        .execute()
        .await
        .expect("kept");
    let br = ovs.bridges().get("brw").await.expect("bridge");
    let iface = &br.port("pw").expect("port").interfaces[0];
    let state = iface.state(true);
    assert!(!state.is_failed(), "{state:?}");
    assert!(
        state.error().is_some_and(|e| e.contains("nopeer")),
        "{state:?}"
    );
}
