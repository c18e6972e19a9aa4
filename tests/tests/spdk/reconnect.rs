//! The reconnect trio (`ctrl_loss_timeout_sec`, `reconnect_delay_sec`,
//! `fast_io_fail_timeout_sec`): SPDK's own rules (v24.01 `bdev_nvme.c`
//! `bdev_nvme_check_io_error_resiliency_params`) decide, and the agent must accept exactly
//! what SPDK accepts, pass the values on unchanged, and refuse the rest up front with
//! INVALID_ARGUMENT naming the field.

use std::time::Duration;

use dpu_proto::v1;
use dpu_tests::spdk::{rpc_error_reply, REMOTE_NQN};
use serde_json::Value;
use tonic::Code;

use crate::{bench, controller_names, refused, remote_spec, wait_until, Bench};

/// The three fields' names, one of which a refusal must mention.
const FIELDS: [&str; 3] = [
    "ctrl_loss_timeout_sec",
    "reconnect_delay_sec",
    "fast_io_fail_timeout_sec",
];

/// `(ctrl_loss_timeout_sec, reconnect_delay_sec, fast_io_fail_timeout_sec)`: every branch
/// of SPDK's check, accepted and refused, with the edges (equal values).
const ROWS: [(i32, u32, u32); 18] = [
    (0, 0, 0),
    (0, 5, 0),
    (0, 0, 5),
    (-1, 0, 0),
    (-1, 5, 0),
    (-1, 5, 3),
    (-1, 5, 5),
    (-1, 5, 60),
    (-2, 5, 0),
    (30, 0, 0),
    (30, 5, 0),
    (5, 10, 0),
    (10, 10, 0),
    (30, 5, 3),
    (30, 5, 10),
    (30, 5, 30),
    (30, 5, 31),
    (30, 0, 10),
];

/// Asks SPDK itself: `rpc.py bdev_nvme_attach_controller -b NAME ... -l -o -u`, detached
/// again when it succeeded. Ok(()) accepted, Err(SPDK's error reply) refused.
fn spdk_verdict(bench: &Bench, name: &str, row: (i32, u32, u32)) -> Result<(), String> {
    let port = bench.remote.port().to_string();
    let (loss, delay, fast) = (row.0.to_string(), row.1.to_string(), row.2.to_string());
    let result = bench.dpu.rpc(
        "bdev_nvme_attach_controller",
        &[
            "-b",
            name,
            "-t",
            "tcp",
            "-f",
            "ipv4",
            "-a",
            "127.0.0.1",
            "-s",
            &port,
            "-n",
            REMOTE_NQN,
            "-l",
            &loss,
            "-o",
            &delay,
            "-u",
            &fast,
        ],
    );
    match result {
        Ok(_) => {
            bench
                .dpu
                .rpc("bdev_nvme_detach_controller", &[name])
                .unwrap_or_else(|e| panic!("{e}"));
            wait_gone(bench);
            Ok(())
        }
        Err(text) => Err(rpc_error_reply(&text)
            .map(|reply| reply.to_string())
            .unwrap_or(text)),
    }
}

/// Waits until SPDK has no NVMe controller left (a detach finishes asynchronously, and
/// the next attach of the same path under another name is refused -17 until then).
fn wait_gone(bench: &Bench) {
    wait_until(Duration::from_secs(20), || {
        let names = controller_names(&bench.dpu);
        if names.is_empty() {
            Ok(())
        } else {
            Err(format!("SPDK still has {names:?}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
}

/// The reconnect values SPDK holds for controller `name` (`framework_get_config bdev`
/// writes every controller's `bdev_nvme_attach_controller` parameters).
fn spdk_values(bench: &Bench, name: &str) -> (i64, i64, i64) {
    let config = bench
        .dpu
        .rpc("framework_get_config", &["bdev"])
        .unwrap_or_else(|e| panic!("{e}"));
    let params = config
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["method"] == "bdev_nvme_attach_controller" && c["params"]["name"] == name)
        .map(|c| c["params"].clone())
        .unwrap_or_else(|| panic!("no controller {name} in SPDK's config: {config}"));
    let get = |key: &str| {
        params[key]
            .as_i64()
            .unwrap_or_else(|| panic!("{key}: {params}"))
    };
    (
        get("ctrlr_loss_timeout_sec"),
        get("reconnect_delay_sec"),
        get("fast_io_fail_timeout_sec"),
    )
}

#[tokio::test]
async fn reconnect_settings_accepted_exactly_when_spdk_accepts_them() {
    let bench = bench!();
    let mut client = bench.storage().await;
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    let (mut spdk_accepts, mut spdk_refuses) = (0, 0);
    for (i, row) in ROWS.iter().copied().enumerate() {
        let spdk = spdk_verdict(&bench, &format!("s{i}"), row);
        if spdk.is_ok() {
            spdk_accepts += 1;
        } else {
            spdk_refuses += 1;
        }
        let id = format!("r{i}");
        let spec = v1::RemoteControllerSpec {
            ctrl_loss_timeout_sec: row.0,
            reconnect_delay_sec: row.1,
            fast_io_fail_timeout_sec: row.2,
            ..remote_spec(&bench)
        };
        let agent = client
            .create_remote_controller(v1::CreateRemoteControllerRequest {
                remote_controller_id: id.clone(),
                spec: Some(spec),
                options: None,
            })
            .await;
        let agent_text = match &agent {
            Ok(_) => "accepted".to_owned(),
            Err(status) => format!("{:?}: {}", status.code(), status.message()),
        };
        table.push(format!(
            "{row:?}: SPDK {}; agent {agent_text}",
            match &spdk {
                Ok(()) => "accepted".to_owned(),
                Err(e) => format!("refused {e}"),
            }
        ));
        match (&spdk, &agent) {
            (Ok(()), Ok(_)) => {
                let held = spdk_values(&bench, &id);
                let sent = (i64::from(row.0), i64::from(row.1), i64::from(row.2));
                if held != sent {
                    wrong.push(format!("{row:?}: SPDK holds {held:?} for {id}"));
                }
                client
                    .delete_remote_controller(v1::DeleteRemoteControllerRequest {
                        name: format!("remoteControllers/{id}"),
                        allow_missing: false,
                        options: None,
                    })
                    .await
                    .unwrap_or_else(|e| panic!("delete {id}: {e:?}"));
                wait_gone(&bench);
            }
            (Err(_), Err(status)) => {
                if status.code() != Code::InvalidArgument
                    || !FIELDS.iter().any(|f| status.message().contains(f))
                {
                    wrong.push(format!(
                        "{row:?}: refused with {agent_text}, not INVALID_ARGUMENT naming a field"
                    ));
                }
                let names = controller_names(&bench.dpu);
                if !names.is_empty() {
                    wrong.push(format!("{row:?}: refused, but SPDK has {names:?}"));
                }
            }
            (Ok(()), Err(_)) => wrong.push(format!("{row:?}: SPDK accepts, the agent refused")),
            (Err(_), Ok(_)) => {
                wrong.push(format!("{row:?}: SPDK refuses, the agent accepted"));
                let _ = client
                    .delete_remote_controller(v1::DeleteRemoteControllerRequest {
                        name: format!("remoteControllers/{id}"),
                        allow_missing: true,
                        options: None,
                    })
                    .await;
                wait_gone(&bench);
            }
        }
    }
    let table = table.join("\n");
    eprintln!("{table}");
    // The table exercises both verdicts of SPDK's rule.
    assert!(spdk_accepts >= 5 && spdk_refuses >= 5, "{table}");
    assert!(
        wrong.is_empty(),
        "the agent disagrees with SPDK:\n{}\n\nall rows:\n{table}\n{}",
        wrong.join("\n"),
        bench.agent.log()
    );
}

/// dpuctl's flags carry the same values: one accepted combination (reconnect forever) and
/// one refused (a loss timeout without a delay).
#[test]
fn dpuctl_reconnect_flags_reach_spdk() {
    let bench = bench!();
    let port = bench.remote.port();
    let out = bench.attach(
        "r0",
        "127.0.0.1",
        port,
        REMOTE_NQN,
        &[
            "--ctrl-loss-timeout-sec",
            "-1",
            "--reconnect-delay-sec",
            "2",
            "--fast-io-fail-timeout-sec",
            "4",
        ],
    );
    crate::ok(&out);
    assert_eq!(spdk_values(&bench, "r0"), (-1, 2, 4));

    let (code, message) = refused(&bench.attach(
        "r1",
        "127.0.0.1",
        port,
        REMOTE_NQN,
        &["--ctrl-loss-timeout-sec", "30"],
    ));
    assert_eq!(code, "InvalidArgument", "{message}");
    assert!(
        FIELDS.iter().any(|f| message.contains(f)),
        "the refusal should name the field: {message}"
    );
    let names: Vec<Value> = controller_names(&bench.dpu)
        .into_iter()
        .map(Value::from)
        .collect();
    assert_eq!(names, [Value::from("r0")]);
}
