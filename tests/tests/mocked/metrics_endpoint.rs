//! The agent's `/metrics` endpoint under faults and bad input: a backend outage during a
//! scrape, scrapers that stall, TLS clients with and without a role, and configurations
//! the agent must refuse. (Values and units against a real Prometheus are the prometheus
//! tier's; the dashboard's names are `dashboard.rs`'s.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use dpu_tests::harness::{dpuctl, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::prometheus::get_metrics;

use crate::security::{ca, issue};
use crate::Lab;

/// A client deadline that only keeps a broken agent from hanging the test; nothing is
/// asserted about time.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// `GET /metrics` over plain TCP: (status, body).
fn scrape(port: u16) -> (u16, String) {
    let answer = get_metrics(&format!("127.0.0.1:{port}"), None).expect("scrape");
    (answer.status, answer.body)
}

fn metrics_config(port: u16, extra: &str) -> String {
    format!(
        "[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n{extra}"
    )
}

#[test]
fn a_scrape_during_a_snap_outage_serves_what_it_reads_and_marks_the_volumes_unread() {
    let port = free_tcp_port();
    let lab = Lab::start_with(|o| o.config_toml = metrics_config(port, "read_timeout = 1\n"));

    // Control: SNAP answers, so the volume source is up.
    let (status, body) = scrape(port);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("dpu_counters_source_up{source=\"volume\"} 1"),
        "{body}"
    );

    // SNAP stops answering: the scrape still answers, with every sysfs counter, and marks
    // the volumes unread instead of reporting none (or zeros).
    lab.snap.delay_replies(Some(Duration::from_secs(60)));
    let (status, body) = scrape(port);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("dpu_counters_source_up{source=\"volume\"} 0"),
        "{body}"
    );
    assert!(
        body.contains("dpu_counters_source_up{source=\"rdma\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("dpu_rdma_port_rcv_data_bytes_total{"),
        "{body}"
    );
    assert!(
        !body.contains("dpu_volume_"),
        "no volume series while SNAP is silent: {body}"
    );
    let errors = body
        .lines()
        .find(|l| l.starts_with("dpu_counters_read_errors_total{source=\"volume\"}"))
        .unwrap_or_else(|| panic!("no volume read errors counted:\n{body}"));
    assert!(!errors.ends_with(" 0"), "{errors}");

    // A gRPC call that needs no SNAP is not held up by the scrape's wait on it.
    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "--timeout",
        "10",
        "dpu",
        "info",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lab.snap.delay_replies(None);
}

#[test]
fn scrapers_that_stall_are_disconnected_and_cannot_hold_every_slot() {
    let port = free_tcp_port();
    let _lab = Lab::start_with(|o| {
        o.config_toml = metrics_config(port, "max_connections = 2\nrequest_timeout = 1\n");
    });
    // Two connections that never send a request take both slots.
    let stalled: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    // A real scrape waits in the backlog until the agent closes a stalled one, then is
    // answered.
    let (status, body) = scrape(port);
    assert_eq!(status, 200, "{body}");
    for mut conn in stalled {
        conn.set_read_timeout(Some(CLIENT_TIMEOUT))
            .expect("timeout");
        let mut rest = Vec::new();
        // The agent closed it (EOF, or a reset on some kernels): either way, not held.
        let closed = match conn.read_to_end(&mut rest) {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(closed, "a stalled scraper's connection was left open");
    }
}

/// How long a scraper in the starvation tests waits for its answer: a quarter of the
/// agent's `request_timeout` there, so an answer that had to wait for a stalled
/// connection's deadline is a failure, not a slow pass.
const SCRAPER_PATIENCE: Duration = Duration::from_secs(15);

/// `GET /metrics` over a raw TCP connection that gives up after `patience`: the status
/// line, or why there was none.
fn patient_scrape(port: u16, patience: Duration) -> Result<String, String> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(patience))
        .map_err(|e| e.to_string())?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer)
        .map_err(|e| format!("no answer within {patience:?}: {e}"))?;
    let text = String::from_utf8_lossy(&answer);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

#[test]
fn clients_that_never_send_a_request_cannot_keep_a_scraper_waiting() {
    let port = free_tcp_port();
    let lab = Lab::start_with(|o| {
        o.config_toml = metrics_config(port, "max_connections = 4\nrequest_timeout = 60\n");
    });
    // Twice max_connections connections that send nothing (a slowloris that reconnects).
    // Before, each took a slot until its 60 s deadline, and a scraper waited behind them.
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    for _ in 0..3 {
        let status = patient_scrape(port, SCRAPER_PATIENCE);
        assert!(
            status.as_deref().is_ok_and(|s| s.contains(" 200 ")),
            "a scraper was kept waiting by clients that sent nothing: {status:?}\n{}",
            lab.agent.log()
        );
    }
    drop(stalled);
}

#[test]
fn over_mtls_clients_without_a_handshake_cannot_keep_a_verified_scraper_waiting() {
    let certs = tempfile::tempdir().expect("tempdir");
    let dir = certs.path().to_owned();
    ca(&dir, "fleet-ca");
    issue(&dir, "fleet-ca", "localhost", "serverAuth");
    issue(&dir, "fleet-ca", "prometheus", "clientAuth");
    let port = free_tcp_port();
    let file = |f: &str| dir.join(f).display().to_string();
    let config = format!(
        "[security]\ntls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"\n\
         viewers = [\"prometheus\"]\n[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n\
         max_connections = 4\nrequest_timeout = 60\n",
        file("localhost.crt"),
        file("localhost.key"),
        file("fleet-ca.crt")
    );
    let _lab = Lab::start_with(|o| o.config_toml = config);
    // Eight connections that never start the handshake: none has a certificate, and before
    // each held a slot until its deadline.
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    let (sender, answers) = std::sync::mpsc::channel();
    let scrape_dir = dir.clone();
    std::thread::spawn(move || {
        let _ = sender.send(tls_scrape(&scrape_dir, port, Some("prometheus")));
    });
    let answer = answers
        .recv_timeout(SCRAPER_PATIENCE)
        .expect("the verified scraper was kept waiting by connections without a handshake");
    assert!(answer.contains("200 OK"), "{answer}");
    drop(stalled);
}

/// `GET /metrics` through `openssl s_client` with the given client certificate (or none).
fn tls_scrape(dir: &Path, port: u16, client: Option<&str>) -> String {
    let file = |f: String| dir.join(f).display().to_string();
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-quiet",
        "-connect",
        &format!("127.0.0.1:{port}"),
    ])
    .args(["-CAfile", &file("fleet-ca.crt".to_owned())])
    // Prometheus offers h2 first: the agent must still pick HTTP/1.1.
    .args(["-alpn", "h2,http/1.1"]);
    if let Some(client) = client {
        cmd.args(["-cert", &file(format!("{client}.crt"))])
            .args(["-key", &file(format!("{client}.key"))]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl s_client");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("send request");
    let out = child.wait_with_output().expect("openssl s_client");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn over_tls_metrics_need_a_verified_client_with_a_role() {
    let certs = tempfile::tempdir().expect("tempdir");
    let dir = certs.path();
    ca(dir, "fleet-ca");
    issue(dir, "fleet-ca", "localhost", "serverAuth");
    for client in ["prometheus", "stranger"] {
        issue(dir, "fleet-ca", client, "clientAuth");
    }
    let port = free_tcp_port();
    let file = |f: &str| dir.join(f).display().to_string();
    let config = format!(
        "[security]\ntls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"\n\
         viewers = [\"prometheus\"]\n[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n",
        file("localhost.crt"),
        file("localhost.key"),
        file("fleet-ca.crt")
    );
    let _lab = Lab::start_with(|o| o.config_toml = config);

    let viewer = tls_scrape(dir, port, Some("prometheus"));
    assert!(viewer.starts_with("HTTP/1.1 200"), "{viewer}");
    assert!(viewer.contains("dpu_agent_build_info"), "{viewer}");
    let stranger = tls_scrape(dir, port, Some("stranger"));
    assert!(stranger.starts_with("HTTP/1.1 403"), "{stranger}");
    assert!(stranger.contains("viewer role"), "{stranger}");
    assert!(!stranger.contains("dpu_agent_build_info"), "{stranger}");
    let anonymous = tls_scrape(dir, port, None);
    assert!(!anonymous.contains("dpu_agent_build_info"), "{anonymous}");
}

#[test]
fn configurations_that_would_expose_or_clash_are_refused_at_start() {
    let (dir, root) = dpu_tests::fixture::bluefield3_tempdir();
    let port = free_tcp_port();
    for (config, expected) in [
        (
            format!("[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n"),
            "metrics.listen = tcp:127.0.0.1",
        ),
        (
            "[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:127.0.0.1:9\"\nread_timeout = 0\n"
                .to_owned(),
            "metrics.read_timeout must be greater than 0",
        ),
    ] {
        let mut options = AgentOptions::new(dir.path(), &root);
        options.config_toml = config;
        let mut agent = AgentProcess::spawn(&options).expect("spawn");
        let status = agent.wait_exit(CLIENT_TIMEOUT).expect("the agent must refuse to start");
        assert_eq!(status.code(), Some(2), "{}", agent.log());
        assert!(agent.log().contains(expected), "{expected}: {}", agent.log());
    }
    // The gRPC listener itself as the metrics endpoint.
    let mut options = AgentOptions::new(dir.path(), &root);
    options.config_toml = format!(
        "[metrics]\nlisten = \"unix:{}\"\n",
        options.socket().display()
    );
    let mut agent = AgentProcess::spawn(&options).expect("spawn");
    let status = agent
        .wait_exit(CLIENT_TIMEOUT)
        .expect("the agent must refuse to start");
    assert_eq!(status.code(), Some(2), "{}", agent.log());
    assert!(
        agent.log().contains("also a gRPC listener"),
        "{}",
        agent.log()
    );
}
