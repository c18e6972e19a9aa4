//! The listeners under fd exhaustion and misuse (issue 23, item 2 and two minor items):
//! with `ulimit -n 128` and 200 idle TCP connections, root's Unix socket still answers, the
//! agent stays quiet and nearly idle (the old agent spun at 157 % CPU, logged every failed
//! accept and let root's calls time out); a connection that never sends the HTTP/2
//! preface is closed; a request that is not gRPC gets HTTP 415; an open Watch does not
//! hold SIGTERM for the whole grace period. All on loopback and Unix sockets; every bound
//! is generous and none is a timing.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_proto::v1::inventory_client::InventoryClient;
use dpu_tests::fixture;
use dpu_tests::harness::{free_tcp_port, AgentOptions, AgentProcess};
use tonic::codegen::http;
use tonic::transport::{Channel, Endpoint};
use tower::ServiceExt as _;

/// How long root's call may take while TCP is at the fd limit (it answers in milliseconds
/// when the listeners keep their budgets apart).
const ROOT_CALL_BOUND: Duration = Duration::from_secs(10);

/// CPU seconds (user + system) the agent used so far, from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read stat");
    // Fields after the command name (which may hold spaces) start at field 3.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let hz = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(100);
    ticks as f64 / hz as f64
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Root's call, on a new connection to the Unix socket: `Inventory.GetSystem`.
async fn root_call(agent: &AgentProcess) -> Result<Duration, String> {
    let started = Instant::now();
    let call = async {
        let channel = agent.channel().await;
        InventoryClient::new(channel)
            .get_system(v1::GetSystemRequest::default())
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(ROOT_CALL_BOUND, call).await {
        Ok(Ok(())) => Ok(started.elapsed()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {ROOT_CALL_BOUND:?}")),
    }
}

async fn tcp_channel(port: u16) -> Channel {
    Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("connect over TCP")
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
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

/// `[security]` for a TLS listener: a CA and a server certificate for localhost it
/// signed, made in `dir`. No client ever gets as far as presenting a certificate here.
fn tls_config(dir: &Path) -> String {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=test-ca",
    ]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(dir, &csr);
    std::fs::write(dir.join("server.ext"), "subjectAltName=DNS:localhost\n").expect("ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    std::fs::set_permissions(
        dir.join("server.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod key");
    let file = |f: &str| dir.join(f).display().to_string();
    format!(
        "[security]\ntls_cert = \"{}\"\ntls_key = \"{}\"\nclient_ca = \"{}\"\n",
        file("server.crt"),
        file("server.key"),
        file("ca.crt")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_fd_limit_roots_unix_socket_answers_and_the_agent_stays_quiet() {
    fd_limit_case(false).await;
}

/// The same on a TLS listener: the connections never start their handshake (the old agent
/// logged "TCP accept failed … Too many open files" 836,870 times in 10 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_fd_limit_with_tls_roots_unix_socket_answers_and_the_agent_stays_quiet() {
    fd_limit_case(true).await;
}

async fn fd_limit_case(tls: bool) {
    const IDLE: usize = 200;
    let (dir, root) = fixture::bluefield3_tempdir();
    let port = free_tcp_port();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.extra_listen = vec![format!("tcp:127.0.0.1:{port}")];
    if tls {
        let certs = dir.path().join("certs");
        std::fs::create_dir(&certs).expect("certs dir");
        options.config_toml = tls_config(&certs);
    }
    let kind = if tls { "TLS" } else { "plaintext TCP" };
    // `ulimit -n 128`, then the agent itself (the wrapper must exec it).
    options.wrapper = ["sh", "-c", "ulimit -n 128 && exec \"$0\" \"$@\""]
        .map(Into::into)
        .to_vec();
    let agent = AgentProcess::start(&options);
    let pid = agent.pid();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.split_whitespace().nth(3) == Some("128")),
        "the agent runs with ulimit -n 128:\n{limits}"
    );
    let before = root_call(&agent)
        .await
        .unwrap_or_else(|e| panic!("root call before: {e}\n{}", agent.log()));

    // 200 TCP connections that never send a byte: more than the agent has descriptors.
    // Those past its budget and the kernel's backlog (128) wait in connect, as an
    // attacker's would; they are held all the same.
    let mut idle = tokio::task::JoinSet::new();
    for _ in 0..IDLE {
        idle.spawn(tokio::net::TcpStream::connect(("127.0.0.1", port)));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let fds = open_fds(pid);

    // Three seconds with the idle connections held: the agent must not spin.
    let cpu_before = cpu_seconds(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let cpu = cpu_seconds(pid) - cpu_before;

    let during = root_call(&agent).await;
    let log = agent.log();
    let accept_lines = log.lines().filter(|l| l.contains("accept")).count();
    eprintln!(
        "fd limit 128, {IDLE} idle {kind} connections: agent holds {fds} fds, used {cpu:.2} s CPU \
         in 3 s, logged {accept_lines} lines about accept; root call {before:?} before, \
         {during:?} during"
    );
    let during =
        during.unwrap_or_else(|e| panic!("root's Unix call while TCP is full: {e}\n{log}"));
    assert!(during < ROOT_CALL_BOUND);
    assert!(
        cpu < 1.0,
        "the agent used {cpu:.2} s of CPU in 3 s with idle connections held (spinning?)"
    );
    assert!(
        accept_lines < 100,
        "{accept_lines} log lines about accept: the log must be rate-limited"
    );
    assert!(fds < 128, "the agent stays under its fd limit: {fds}");

    // The idle connections go away: TCP serves again.
    idle.abort_all();
    while idle.join_next().await.is_some() {}
    if tls {
        return;
    }
    let call = async {
        InventoryClient::new(tcp_channel(port).await)
            .get_system(v1::GetSystemRequest::default())
            .await
    };
    tokio::time::timeout(ROOT_CALL_BOUND, call)
        .await
        .unwrap_or_else(|_| panic!("TCP still not serving:\n{}", agent.log()))
        .unwrap_or_else(|e| panic!("TCP call after the idle connections closed: {e}"));
}

/// Reads until the agent closes the connection; how long that took, or `None` past `bound`.
fn wait_closed(mut stream: impl std::io::Read, bound: Duration) -> Option<Duration> {
    use std::io::ErrorKind;
    let started = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        // The server's own SETTINGS frame arrives first; then EOF or a reset.
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            // The read timeout: still open.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        if started.elapsed() > bound {
            return None;
        }
    }
    let took = started.elapsed();
    (took <= bound).then_some(took)
}

#[test]
fn a_connection_that_never_sends_the_http2_preface_is_closed() {
    const PREFACE_TIMEOUT: u64 = 2;
    let bound = Duration::from_secs(PREFACE_TIMEOUT + 5);
    let (dir, root) = fixture::bluefield3_tempdir();
    let port = free_tcp_port();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.extra_listen = vec![format!("tcp:127.0.0.1:{port}")];
    options.config_toml = format!("[limits]\npreface_timeout = {PREFACE_TIMEOUT}\n");
    let agent = AgentProcess::start(&options);

    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect TCP");
    tcp.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    let unix = std::os::unix::net::UnixStream::connect(agent.socket()).expect("connect Unix");
    unix.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("read timeout");
    let tcp_closed = std::thread::spawn(move || wait_closed(tcp, bound));
    let unix_closed = wait_closed(unix, bound);
    let tcp_closed = tcp_closed.join().expect("join");
    eprintln!("preface timeout {PREFACE_TIMEOUT} s: TCP closed after {tcp_closed:?}, Unix after {unix_closed:?}");
    assert!(
        tcp_closed.is_some(),
        "a silent TCP connection stays open past {bound:?}:\n{}",
        agent.log()
    );
    assert!(
        unix_closed.is_some(),
        "a silent Unix connection stays open past {bound:?}"
    );
}

#[tokio::test]
async fn a_request_that_is_not_grpc_gets_http_415() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    let agent = AgentProcess::start(&options);
    let channel = agent.channel().await;
    let request = |content_type: &str| {
        http::Request::builder()
            .method("POST")
            .uri("http://agent.invalid/dpu.v1.Inventory/GetSystem")
            .header("content-type", content_type)
            .header("te", "trailers")
            .body(tonic::body::Body::empty())
            .expect("request")
    };
    let response = channel
        .clone()
        .oneshot(request("text/plain"))
        .await
        .expect("an HTTP answer");
    assert_eq!(
        response.status(),
        http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "text/plain must not be served as gRPC: {:?}",
        response.headers()
    );
    // The same request as gRPC is served (HTTP 200; the missing message is a gRPC error).
    let response = channel
        .oneshot(request("application/grpc"))
        .await
        .expect("an HTTP answer");
    assert_eq!(response.status(), http::StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_watch_ends_with_unavailable_and_does_not_hold_sigterm() {
    const GRACE_S: u64 = 30;
    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.config_toml = format!("shutdown_grace = {GRACE_S}\n");
    let mut agent = AgentProcess::start(&options);
    let mut stream = v1::counters_client::CountersClient::new(agent.channel().await)
        .watch(v1::WatchRequest {
            selectors: vec![v1::CounterSelector {
                selector: Some(v1::counter_selector::Selector::Rdma(v1::RdmaSelector {
                    device: "mlx5_0".to_owned(),
                    port: 1,
                })),
            }],
            interval: Some(dpu_proto::pbjson_types::Duration {
                seconds: 1,
                nanos: 0,
            }),
            max_snapshots: 0,
        })
        .await
        .expect("Watch")
        .into_inner();
    stream.message().await.expect("first").expect("a snapshot");

    let started = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &agent.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the Watch is still open 10 s after SIGTERM:\n{}",
            agent.log()
        )
    });
    let err = ended.expect_err("the stream ends with a status");
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert_eq!(err.message(), "shutting down");
    let exit = agent
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("agent still running 10 s after SIGTERM:\n{}", agent.log()));
    let took = started.elapsed();
    eprintln!("SIGTERM with an open Watch: stream ended and agent exited ({exit}) after {took:?}");
    assert!(exit.success(), "{exit}\n{}", agent.log());
    assert!(took < Duration::from_secs(GRACE_S));
}
