//! Start and stop: graceful shutdown removes the socket, a stale socket from a crash is
//! replaced, a live one is never stolen, and a bad config stops the start with a clear
//! message.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dpu_tests::fixture;
use dpu_tests::harness::{bin_dir, AgentOptions, AgentProcess};

#[test]
fn sigterm_and_sigint_stop_cleanly_and_remove_the_socket() {
    for signal in ["TERM", "INT"] {
        let (dir, root) = fixture::bluefield3_tempdir();
        let mut agent = AgentProcess::start(&AgentOptions::new(dir.path(), &root));
        let socket = agent.socket().to_owned();
        assert!(socket.exists());
        let status = agent.signal_and_wait(signal, Duration::from_secs(15));
        assert!(
            status.success(),
            "SIG{signal}: exit {status}\n{}",
            agent.log()
        );
        assert!(!socket.exists(), "SIG{signal}: socket file left behind");
        assert!(agent.log().contains("shutting down"), "{}", agent.log());
    }
}

#[test]
fn a_stale_socket_from_a_crash_is_replaced() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    let mut crashed = AgentProcess::start(&options);
    let status = crashed.signal_and_wait("KILL", Duration::from_secs(10));
    assert!(!status.success());
    assert!(options.socket().exists(), "SIGKILL leaves the socket file");
    let restarted = AgentProcess::start(&options);
    assert!(
        restarted.log().contains("stale socket"),
        "{}",
        restarted.log()
    );
}

#[test]
fn a_live_socket_is_not_stolen() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    let first = AgentProcess::start(&options);
    // A second agent with a state directory of its own (one agent per state directory is
    // refused earlier, tests/tests/hardening) that also listens on the first one's socket.
    let other = tempfile::tempdir().expect("tempdir");
    let mut second_options = options.clone();
    second_options.dir = other.path().to_owned();
    second_options
        .extra_listen
        .push(format!("unix:{}", options.socket().display()));
    let mut second = AgentProcess::spawn(&second_options).expect("spawn second agent");
    let status = second
        .wait_exit(Duration::from_secs(15))
        .expect("second agent must refuse to start, not serve");
    assert_eq!(status.code(), Some(2), "{}", second.log());
    assert!(second.log().contains("already serving"), "{}", second.log());
    assert!(
        options.socket().exists(),
        "first agent's socket must survive"
    );
    // And the first agent still answers on it.
    assert!(std::os::unix::net::UnixStream::connect(first.socket()).is_ok());
}

#[test]
fn unknown_config_keys_stop_the_start_with_the_key_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("agent.toml");
    std::fs::write(&config, "[snap]\nsocket_path = \"/var/tmp/spdk.sock\"\n").expect("write");
    let out = Command::new(bin_dir().join("dpu-agent"))
        .arg("--config")
        .arg(&config)
        .arg("--check-config")
        .output()
        .expect("run dpu-agent");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("socket_path"), "{stderr}");

    // The positive control: the packaged config validates and prints the effective config.
    let packaged = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../agent-arm/config/config.toml"
    );
    let out = Command::new(bin_dir().join("dpu-agent"))
        .args([
            "--config",
            packaged,
            "--check-config",
            "--listen",
            "tcp:127.0.0.1:7",
        ])
        .output()
        .expect("run dpu-agent");
    // Plaintext TCP is refused unless asked for, naming the way out.
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs TLS") && stderr.contains("--insecure-listen"),
        "{stderr}"
    );
    let out = Command::new(bin_dir().join("dpu-agent"))
        .args([
            "--config",
            packaged,
            "--check-config",
            "--listen",
            "tcp:127.0.0.1:7",
            "--insecure-listen",
        ])
        .output()
        .expect("run dpu-agent");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tcp:127.0.0.1:7"),
        "flag must override the file: {stdout}"
    );
}

/// `--check-config` reads the files the config names as the start does: TLS files that
/// are missing fail the check (exit 2, naming the file), so "check before restart"
/// protects; the same config without them passes (the control).
#[test]
fn check_config_fails_on_tls_files_that_do_not_exist() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("agent.toml");
    let missing = dir.path().join("tls/agent.crt");
    let body = format!(
        "listen = [\"unix:{sock}\"]\n[security]\ntls_cert = \"{cert}\"\n\
         tls_key = \"{dir}/tls/agent.key\"\nclient_ca = \"{dir}/tls/ca.crt\"\n",
        sock = dir.path().join("a.sock").display(),
        cert = missing.display(),
        dir = dir.path().display(),
    );
    std::fs::write(&config, &body).expect("write");
    let check = |config: &Path| {
        Command::new(bin_dir().join("dpu-agent"))
            .arg("--config")
            .arg(config)
            .arg("--check-config")
            .output()
            .expect("run dpu-agent")
    };
    let out = check(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot load the TLS files")
            && stderr.contains(&missing.display().to_string()),
        "{stderr}"
    );
    // Asked to check the config alone (a ConfigMap checked where the Secret is not
    // mounted), the same config passes.
    let out = Command::new(bin_dir().join("dpu-agent"))
        .arg("--config")
        .arg(&config)
        .args(["--check-config", "--skip-file-checks"])
        .output()
        .expect("run dpu-agent");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let without_tls = dir.path().join("plain.toml");
    std::fs::write(
        &without_tls,
        format!(
            "listen = [\"unix:{}\"]\n",
            dir.path().join("a.sock").display()
        ),
    )
    .expect("write");
    let out = check(&without_tls);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An in-flight call finishes after SIGTERM: a SNAP socket that accepts but never answers
/// makes `GetSystem` take its full backend-check deadline (1 s); the signal arrives in the
/// middle and the call must still complete with a real answer.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_in_flight_calls_finish() {
    use dpu_proto::v1::{inventory_client::InventoryClient, GetSystemRequest};

    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.snap_socket = dir.path().join("silent-snap.sock");
    // Connections are queued by the kernel but never read or answered.
    let _silent = std::os::unix::net::UnixListener::bind(&options.snap_socket).expect("bind");
    let mut agent = AgentProcess::start(&options);
    let mut client = InventoryClient::new(agent.channel().await);

    let call = tokio::spawn(async move { client.get_system(GetSystemRequest {}).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !call.is_finished(),
        "the call should still be waiting on SNAP"
    );
    let status = tokio::task::spawn_blocking(move || {
        let status = agent.signal_and_wait("TERM", Duration::from_secs(15));
        (status, agent.log())
    });
    let reply = call
        .await
        .expect("join")
        .expect("in-flight call must complete");
    let (status, log) = status.await.expect("join");
    assert!(status.success(), "{log}");
    let system = reply.into_inner();
    assert_eq!(system.hostname, "dpu-bf3-lab");
    let snap = system
        .backends
        .iter()
        .find(|b| b.backend == "snap")
        .expect("snap backend");
    assert!(snap.detail.contains("no answer"), "{snap:?}");
}
