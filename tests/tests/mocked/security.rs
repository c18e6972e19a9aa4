//! Authentication and authorization end to end, with certificates made by the openssl
//! recipe of docs/security.md: mutual TLS on TCP (operator, viewer, an unlisted client, a
//! client of another CA, a plaintext client), plaintext TCP only with --insecure-listen and
//! then as a viewer, and the audit log of operator calls.

use std::path::Path;
use std::process::{Command, Output};

use dpu_tests::harness::{dpuctl, free_tcp_port};

use super::Lab;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a certificate it signs for `name` with `usage` (serverAuth or clientAuth).
pub(crate) fn ca(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{ca}.key"),
            "-out",
            &format!("{ca}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN={ca}"),
        ],
    );
}

pub(crate) fn issue(dir: &Path, ca: &str, name: &str, usage: &str) {
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        format!("subjectAltName=DNS:{name}\nextendedKeyUsage={usage}\n"),
    )
    .expect("ext file");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-extfile",
            &ext,
        ],
    );
}

fn as_client(endpoint: &str, dir: &Path, ca: &str, client: &str, args: &[&str]) -> Output {
    let path = |f: String| dir.join(f).display().to_string();
    let mut all = vec![
        "--agent".to_owned(),
        endpoint.to_owned(),
        "--ca".to_owned(),
        path(format!("{ca}.crt")),
        "--cert".to_owned(),
        path(format!("{client}.crt")),
        "--key".to_owned(),
        path(format!("{client}.key")),
        "--tls-name".to_owned(),
        "localhost".to_owned(),
        "--timeout".to_owned(),
        "5".to_owned(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    dpuctl(&refs)
}

const ATTACH: &[&str] = &[
    "storage",
    "attach",
    "--id",
    "r0",
    "--traddr",
    "192.0.2.10",
    "--subnqn",
    "nqn.2016-06.io.spdk:cnode1",
];

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn mutual_tls_roles_and_the_audit_log() {
    let certs = tempfile::tempdir().expect("tempdir");
    let dir = certs.path();
    ca(dir, "fleet-ca");
    issue(dir, "fleet-ca", "localhost", "serverAuth");
    for client in ["fleet-admin", "dashboard", "stranger"] {
        issue(dir, "fleet-ca", client, "clientAuth");
    }
    ca(dir, "rogue-ca");
    issue(dir, "rogue-ca", "impostor", "clientAuth");

    let port = free_tcp_port();
    let endpoint = format!("tcp:127.0.0.1:{port}");
    let file = |f: &str| dir.join(f).display().to_string();
    let config = format!(
        "[security]\ntls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"\n\
         operators = [\"fleet-admin\"]\nviewers = [\"dashboard\"]\n",
        file("localhost.crt"),
        file("localhost.key"),
        file("fleet-ca.crt")
    );
    let lab = Lab::start_with(|o| {
        o.extra_listen.push(endpoint.clone());
        o.config_toml = config;
    });

    // The operator changes storage; the viewer reads but may not change; a verified
    // client nobody listed may not even read.
    let out = as_client(&endpoint, dir, "fleet-ca", "fleet-admin", ATTACH);
    assert!(out.status.success(), "operator attach: {}", stderr(&out));
    let out = as_client(&endpoint, dir, "fleet-ca", "dashboard", &["dpu", "info"]);
    assert!(out.status.success(), "viewer read: {}", stderr(&out));
    let out = as_client(&endpoint, dir, "fleet-ca", "dashboard", ATTACH);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("PermissionDenied") && stderr(&out).contains("operator role"),
        "{}",
        stderr(&out)
    );
    let out = as_client(&endpoint, dir, "fleet-ca", "stranger", &["dpu", "info"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("PermissionDenied"),
        "{}",
        stderr(&out)
    );

    // TLS 1.3 only: the same client offering TLS 1.2 alone is refused.
    let handshake = |version: &str| {
        Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &format!("127.0.0.1:{port}"),
                version,
            ])
            .args([
                "-cert",
                &file("fleet-admin.crt"),
                "-key",
                &file("fleet-admin.key"),
            ])
            .args(["-CAfile", &file("fleet-ca.crt"), "-alpn", "h2"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run openssl s_client")
    };
    let v13 = handshake("-tls1_3");
    assert!(
        String::from_utf8_lossy(&v13.stdout).contains("TLSv1.3"),
        "TLS 1.3 handshake: {}",
        String::from_utf8_lossy(&v13.stdout)
    );
    let v12 = handshake("-tls1_2");
    assert!(
        !v12.status.success() || !String::from_utf8_lossy(&v12.stdout).contains("TLSv1.2"),
        "a TLS 1.2 handshake succeeded: {}",
        String::from_utf8_lossy(&v12.stdout)
    );

    // A certificate of another CA, and a client without TLS, do not get in at all.
    let out = as_client(&endpoint, dir, "fleet-ca", "impostor", &["dpu", "info"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a foreign client certificate must fail"
    );
    let out = dpuctl(&["--agent", &endpoint, "--timeout", "5", "dpu", "info"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "plaintext against a TLS listener must fail"
    );

    // Operator calls are audited with the caller and the outcome, denials too.
    let log = lab.agent.log();
    assert!(
        log.lines().any(|l| l.contains("audit")
            && l.contains("CreateRemoteController")
            && l.contains("fleet-admin")
            && l.contains("OK")),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains("audit")
            && l.contains("CreateRemoteController")
            && l.contains("dashboard")
            && l.contains("PermissionDenied")),
        "{log}"
    );
    // The request itself, in full, for the call that was allowed.
    assert!(
        log.lines()
            .any(|l| l.contains("operator request") && l.contains("192.0.2.10")),
        "{log}"
    );
}

/// A TLS key file other users can read is refused at start, naming the file and its mode
/// (issue 23): the key is the agent's identity to the whole fleet.
#[test]
fn a_tls_key_others_can_read_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let certs = tempfile::tempdir().expect("tempdir");
    let dir = certs.path();
    ca(dir, "fleet-ca");
    issue(dir, "fleet-ca", "localhost", "serverAuth");
    let key = dir.join("localhost.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    let (state, root) = dpu_tests::fixture::bluefield3_tempdir();
    let mut options = dpu_tests::harness::AgentOptions::new(state.path(), &root);
    options
        .extra_listen
        .push(format!("tcp:127.0.0.1:{}", free_tcp_port()));
    options.config_toml = format!(
        "[security]\ntls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"\n",
        dir.join("localhost.crt").display(),
        key.display(),
        dir.join("fleet-ca.crt").display()
    );
    let mut agent = dpu_tests::harness::AgentProcess::spawn(&options).expect("spawn");
    let status = agent
        .wait_exit(std::time::Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the agent serves with a 0644 key:\n{}", agent.log()));
    let log = agent.log();
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains(&key.display().to_string()) && log.contains("0644"),
        "the refusal names the file and its mode: {log}"
    );
}

#[test]
fn plaintext_tcp_is_a_viewer_and_the_unix_socket_root_an_operator() {
    let port = free_tcp_port();
    let tcp = format!("tcp:127.0.0.1:{port}");
    // The harness passes --insecure-listen for a plaintext TCP listener.
    let lab = Lab::start_with(|o| o.extra_listen.push(tcp.clone()));
    let mut args = vec!["--agent", tcp.as_str()];
    args.extend(ATTACH);
    let out = dpuctl(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("plaintext tcp"), "{}", stderr(&out));
    assert!(dpuctl(&["--agent", &tcp, "dpu", "info"]).status.success());
    assert!(lab
        .agent
        .log()
        .contains("serving plaintext TCP without authentication"));
    // The tests run as root: on the Unix socket that is the operator role.
    if dpu_tests::running_as_root() {
        let endpoint = lab.agent.endpoint();
        let mut args = vec!["--agent", endpoint.as_str()];
        args.extend(ATTACH);
        let out = dpuctl(&args);
        assert!(
            out.status.success(),
            "root on the Unix socket: {}",
            stderr(&out)
        );
    }
}

#[tokio::test]
async fn an_oversized_request_is_refused_before_any_handler() {
    use dpu_proto::v1;
    let lab = Lab::start();
    let mut storage = v1::storage_client::StorageClient::new(lab.agent.channel().await);
    let err = storage
        .create_subsystem(v1::CreateSubsystemRequest {
            subsystem: Some(v1::Subsystem {
                nqn: "nqn.2022-10.io.nvda.nvme:0".to_owned(),
                model_number: "x".repeat(2 << 20),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect_err("2 MiB request");
    assert!(
        matches!(
            err.code(),
            tonic::Code::OutOfRange | tonic::Code::ResourceExhausted
        ),
        "{err:?}"
    );
    assert!(
        !lab.snap
            .requests()
            .iter()
            .any(|(m, _)| m.contains("create")),
        "an oversized request reached SNAP"
    );
}
