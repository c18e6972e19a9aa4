//! Remote controllers through the agent onto real SPDK: attach, list with SPDK's own
//! geometry, detach; a conflicting re-attach under the same id; a target that is down.

use std::time::Duration;

use dpu_proto::v1;
use dpu_tests::harness::free_tcp_port;
use dpu_tests::spdk::{REMOTE_BDEV_MIB, REMOTE_BLOCK_SIZE, REMOTE_NQN};
use serde_json::Value;
use tonic::Code;

use crate::{
    bdev, bench, controller_names, controller_paths, json_u64, ok, refused, remote_spec, tcp_spec,
    wait_until, Bench,
};

/// A second subsystem on the remote target, behind the same address and port.
const SECOND_NQN: &str = "nqn.2016-06.io.spdk:cnode2";

/// `remoteControllers/{id}` in `dpuctl -o json storage list`.
fn listed_remote(bench: &Bench, id: &str) -> Option<Value> {
    let listing = bench.ctl_json(&["storage", "list"]);
    listing["remoteControllers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == format!("remoteControllers/{id}"))
        .cloned()
}

/// The one path of SPDK controller r0: asserts there is exactly one (one `ctrlrs` entry
/// and no `alternate_trids`, where SPDK's failover mode lists added paths) and returns it.
fn single_path(bench: &Bench) -> Value {
    let paths = controller_paths(&bench.dpu, "r0");
    let alternates = paths
        .iter()
        .filter_map(|p| p["alternate_trids"].as_array())
        .map(Vec::len)
        .sum::<usize>();
    assert!(
        paths.len() == 1 && alternates == 0,
        "SPDK controller r0 should have exactly one path: {paths:?}"
    );
    paths[0].clone()
}

#[test]
fn attach_list_and_detach_through_dpuctl() {
    let bench = bench!();
    let port = bench.remote.port();
    let out = bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &[]);
    let text = ok(&out);
    assert!(text.contains("attached remoteControllers/r0"), "{text}");
    assert!(text.contains("volumes/r0n1"), "{text}");

    // SPDK's own view: one TCP path to the target, and bdev r0n1 of the malloc's size.
    let path = single_path(&bench);
    assert_eq!(path["trid"]["trtype"], "TCP", "{path}");
    assert_eq!(path["trid"]["traddr"], "127.0.0.1", "{path}");
    assert_eq!(path["trid"]["trsvcid"], port.to_string(), "{path}");
    assert_eq!(path["trid"]["subnqn"], REMOTE_NQN, "{path}");
    let spdk = bdev(&bench.dpu, "r0n1").expect("SPDK has bdev r0n1");
    let block_size = spdk["block_size"].as_u64().expect("block_size");
    let num_blocks = spdk["num_blocks"].as_u64().expect("num_blocks");
    assert_eq!(block_size, REMOTE_BLOCK_SIZE, "{spdk}");
    assert_eq!(num_blocks * block_size, REMOTE_BDEV_MIB << 20, "{spdk}");

    // The agent lists exactly what SPDK has.
    let remote = listed_remote(&bench, "r0")
        .unwrap_or_else(|| panic!("r0 not listed: {}", bench.ctl_json(&["storage", "list"])));
    assert_eq!(remote["spec"]["traddr"], "127.0.0.1", "{remote}");
    assert_eq!(remote["spec"]["subnqn"], REMOTE_NQN, "{remote}");
    assert_eq!(
        json_u64(&remote["spec"]["trsvcid"]),
        u64::from(port),
        "{remote}"
    );
    let volumes = remote["status"]["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 1, "{remote}");
    let volume = &volumes[0];
    assert_eq!(volume["name"], "volumes/r0n1", "{remote}");
    assert_eq!(json_u64(&volume["blockSize"]), block_size, "{remote}");
    assert_eq!(json_u64(&volume["numBlocks"]), num_blocks, "{remote}");
    assert_eq!(volume["uuid"], spdk["uuid"], "{remote}");
    assert_eq!(
        remote["status"]["state"], "REMOTE_CONTROLLER_STATE_ENABLED",
        "{remote}"
    );
    let table = ok(&bench.ctl(&["storage", "list"]));
    assert!(
        table.contains("volumes/r0n1") && table.contains(&format!("127.0.0.1:{port}")),
        "{table}"
    );

    // Detach: gone from SPDK and from the listing.
    let gone = ok(&bench.ctl(&["storage", "detach", "remoteControllers/r0"]));
    assert!(gone.contains("deleted"), "{gone}");
    wait_until(Duration::from_secs(20), || {
        let names = controller_names(&bench.dpu);
        if names.is_empty() && bdev(&bench.dpu, "r0n1").is_none() {
            Ok(())
        } else {
            Err(format!("SPDK still has controllers {names:?} or bdev r0n1"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
    assert!(listed_remote(&bench, "r0").is_none());
}

#[test]
fn conflicting_reattach_is_refused_and_changes_nothing_in_spdk() {
    let bench = bench!();
    let port = bench.remote.port();
    ok(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &[]));
    // The target gets a second subsystem on the same address and port, a second listener
    // of the first subsystem on another port, and one on another address: every
    // conflicting attach below would succeed in SPDK if the agent sent it (a different
    // subnqn on the same path is answered -114 "already exists", which looks like done).
    bench
        .remote
        .add_subsystem(SECOND_NQN, "SPDK00000000000002", "Malloc1")
        .unwrap_or_else(|e| panic!("{e}"));
    let port2 = free_tcp_port();
    bench
        .remote
        .add_listener(REMOTE_NQN, "127.0.0.1", port2)
        .unwrap_or_else(|e| panic!("{e}"));
    bench
        .remote
        .add_listener(REMOTE_NQN, "127.0.0.2", port)
        .unwrap_or_else(|e| panic!("{e}"));

    // The code and SPDK's state are checked at once; a message that does not name the
    // conflicting field is collected and reported at the end, after every check ran.
    let mut unnamed = Vec::new();
    let mut names_conflict = |message: &str, field: &str, value: &str| {
        if !(message.contains("r0") && (message.contains(field) || message.contains(value))) {
            unnamed.push(format!(
                "should name r0 and the conflicting {field} ({value}): {message:?}"
            ));
        }
    };

    // Same id, different subnqn.
    let (code, message) = refused(&bench.attach("r0", "127.0.0.1", port, SECOND_NQN, &[]));
    assert_eq!(code, "AlreadyExists", "{message}");
    names_conflict(&message, "subnqn", SECOND_NQN);
    let path = single_path(&bench);
    assert_eq!(path["trid"]["subnqn"], REMOTE_NQN, "{path}");

    // Same id, another port of the same subsystem: no second path.
    let (code, message) = refused(&bench.attach("r0", "127.0.0.1", port2, REMOTE_NQN, &[]));
    assert_eq!(code, "AlreadyExists", "{message}");
    names_conflict(&message, "trsvcid", &port2.to_string());
    let path = single_path(&bench);
    assert_eq!(path["trid"]["trsvcid"], port.to_string(), "{path}");

    // Same id, another address.
    let (code, message) = refused(&bench.attach("r0", "127.0.0.2", port, REMOTE_NQN, &[]));
    assert_eq!(code, "AlreadyExists", "{message}");
    names_conflict(&message, "traddr", "127.0.0.2");
    let path = single_path(&bench);
    assert_eq!(path["trid"]["traddr"], "127.0.0.1", "{path}");
    assert_eq!(controller_names(&bench.dpu), ["r0"]);

    // The agent kept the original spec.
    let remote = listed_remote(&bench, "r0").expect("r0 listed");
    assert_eq!(remote["spec"]["subnqn"], REMOTE_NQN, "{remote}");
    assert_eq!(remote["spec"]["traddr"], "127.0.0.1", "{remote}");
    assert_eq!(
        json_u64(&remote["spec"]["trsvcid"]),
        u64::from(port),
        "{remote}"
    );

    // Same id, same spec: idempotent success, still one path.
    let text = ok(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &[]));
    assert!(text.contains("remoteControllers/r0"), "{text}");
    let path = single_path(&bench);
    assert_eq!(path["trid"]["trsvcid"], port.to_string(), "{path}");
    assert!(bdev(&bench.dpu, "r0n1").is_some());
    assert!(
        unnamed.is_empty(),
        "ALREADY_EXISTS refusals that do not name the conflict:\n{}",
        unnamed.join("\n")
    );
}

/// Asserts a refused create left nothing behind: no SPDK controller or bdev, nothing in
/// the agent's listing.
async fn assert_nothing_left(bench: &Bench, id: &str) {
    let names = controller_names(&bench.dpu);
    assert!(names.is_empty(), "SPDK kept controllers {names:?}");
    assert!(bdev(&bench.dpu, &format!("{id}n1")).is_none());
    let listed = bench
        .storage()
        .await
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .expect("list")
        .into_inner()
        .remote_controllers;
    assert!(listed.is_empty(), "the agent still lists {listed:?}");
    let get = bench
        .storage()
        .await
        .get_remote_controller(v1::GetRemoteControllerRequest {
            name: format!("remoteControllers/{id}"),
        })
        .await
        .expect_err("no such remote controller");
    assert_eq!(get.code(), Code::NotFound, "{get:?}");
}

/// Creates remote controller `id` with `spec` and returns the refusal.
async fn create_refused(bench: &Bench, id: &str, spec: v1::RemoteControllerSpec) -> tonic::Status {
    match bench
        .storage()
        .await
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: id.to_owned(),
            spec: Some(spec),
            options: None,
        })
        .await
    {
        Ok(reply) => panic!(
            "attaching a target that is down succeeded: {:?}\n{}",
            reply.into_inner(),
            bench.logs()
        ),
        Err(status) => status,
    }
}

/// Whether `status` is UNAVAILABLE naming `127.0.0.1:{port}`; the problem if not.
fn unavailable_naming(status: &tonic::Status, port: u16) -> Result<(), String> {
    let address = format!("127.0.0.1:{port}");
    if status.code() == Code::Unavailable && status.message().contains(&address) {
        Ok(())
    } else {
        Err(format!(
            "expected UNAVAILABLE naming {address}, got {:?}: {}",
            status.code(),
            status.message()
        ))
    }
}

#[tokio::test]
async fn target_that_is_down_is_unavailable_and_leaves_nothing() {
    let mut bench = bench!();
    // The code and message are collected and reported at the end, after the checks that
    // nothing was left behind ran for every case.
    let mut wrong = Vec::new();
    let port = bench.remote.port();

    // A port nothing ever listened on.
    let down = free_tcp_port();
    let status = create_refused(&bench, "r0", tcp_spec(down, REMOTE_NQN)).await;
    wrong.extend(unavailable_naming(&status, down).err());
    assert_nothing_left(&bench, "r0").await;

    // The target's process runs but its listener is gone.
    bench
        .remote
        .stop_listener()
        .unwrap_or_else(|e| panic!("{e}"));
    let status = create_refused(&bench, "r0", remote_spec(&bench)).await;
    wrong.extend(unavailable_naming(&status, port).err());
    assert_nothing_left(&bench, "r0").await;
    bench
        .remote
        .start_listener()
        .unwrap_or_else(|e| panic!("{e}"));

    // The target's process is gone (killed like a crash).
    bench.remote.stop();
    let status = create_refused(&bench, "r0", remote_spec(&bench)).await;
    wrong.extend(unavailable_naming(&status, port).err());
    assert_nothing_left(&bench, "r0").await;

    // Once the target is back, the same request works: the refusals left no residue.
    bench.remote.start().unwrap_or_else(|e| panic!("{e}"));
    let created = bench
        .storage()
        .await
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec(&bench)),
            options: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{e:?}\n{}", bench.logs()))
        .into_inner();
    let volumes: Vec<_> = created
        .status
        .iter()
        .flat_map(|s| s.volumes.iter().map(|v| v.name.clone()))
        .collect();
    assert_eq!(volumes, ["volumes/r0n1"], "{created:?}");
    assert_eq!(controller_paths(&bench.dpu, "r0").len(), 1);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
