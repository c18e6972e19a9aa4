//! `FakeSnap`: an in-process stand-in for NVIDIA SNAP's JSON-RPC socket, for tests.
//!
//! It is faithful to the wire protocol in storage.md §2.2 and §3.1: a Unix stream socket,
//! JSON-RPC 2.0 objects written back to back with no length prefix and no delimiter, parsed
//! incrementally (a request may arrive in pieces, several may arrive in one read), many
//! requests per connection, many connections, batch arrays, notifications (no `id`) answered
//! with nothing, and SPDK's error codes (-32700 parse error then hang up, -32600 invalid
//! request, -32601 method not found, -32602 invalid params). Answers follow §3.2:
//! `spdk_get_version` (refusing params, as SPDK does) and `rpc_get_methods` with the method
//! list of the chosen dialect (SNAP 4 by default, or SNAP 3). Every request is recorded so
//! tests can assert what the agent actually sent.
//!
//! State ([`FakeSnapState`], in `state.rs`): bdevs from `bdev_nvme_attach_controller`,
//! subsystems, namespaces and controllers (with a suspended flag), driven by the SNAP 4 or
//! SNAP 3 methods and refused the way SNAP refuses (unknown bdev, duplicate names, namespace
//! already attached, resume/attach of a controller that is not suspended). Faults: delay
//! every reply, cut the connection in the middle of a method's next reply, and restart
//! losing all state.
//!
//! It serves from its own thread with a current-thread tokio runtime, so plain `#[test]`
//! functions that run the agent as a child process can use it as well as async tests.

use std::io;
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::oneshot;

mod state;

pub use state::{
    FakeBdev, FakeController, FakeDialect, FakeNamespace, FakeSnapState, FakeSubsystem, IostatForm,
};

/// The version string `spdk_get_version` reports.
pub const FAKE_SPDK_VERSION: &str = "SPDK v23.01 (fake)";

/// What `rpc_get_methods` answers for SNAP 4: the DOCA SNAP methods plus the standard SPDK
/// ones, so dialect detection picks SNAP 4.
pub const SNAP4_METHODS: &[&str] = &[
    "nvme_subsystem_create",
    "nvme_subsystem_destroy",
    "nvme_subsystem_list",
    "nvme_namespace_create",
    "nvme_namespace_destroy",
    "nvme_controller_create",
    "nvme_controller_destroy",
    "nvme_controller_list",
    "nvme_controller_attach_ns",
    "nvme_controller_detach_ns",
    "nvme_controller_suspend",
    "nvme_controller_resume",
    "bdev_get_iostat",
    "bdev_get_bdevs",
    "bdev_nvme_attach_controller",
    "bdev_nvme_detach_controller",
    "spdk_get_version",
    "rpc_get_methods",
];

/// What `rpc_get_methods` answers for SNAP 3 (mlnx_snap).
pub const SNAP3_METHODS: &[&str] = &[
    "subsystem_nvme_create",
    "subsystem_nvme_delete",
    "subsystem_nvme_list",
    "controller_nvme_create",
    "controller_nvme_delete",
    "controller_list",
    "controller_nvme_namespace_attach",
    "controller_nvme_namespace_detach",
    "bdev_get_iostat",
    "bdev_get_bdevs",
    "bdev_nvme_attach_controller",
    "bdev_nvme_detach_controller",
    "spdk_get_version",
    "rpc_get_methods",
];

/// SPDK's receive buffer size (`lib/jsonrpc/jsonrpc_server_tcp.c`).
const RECV_CHUNK: usize = 256 * 1024;

/// Injected faults.
#[derive(Debug, Default)]
struct Faults {
    delay: Option<Duration>,
    cut: Vec<String>,
}

/// Everything the serving thread shares with the handle.
#[derive(Debug)]
struct Shared {
    dialect: FakeDialect,
    iostat: Mutex<IostatForm>,
    requests: Mutex<Vec<(String, Value)>>,
    state: Mutex<FakeSnapState>,
    faults: Mutex<Faults>,
    /// Reads counted on a bdev each time its iostat is asked for (see
    /// [`FakeSnap::reads_between_polls`]).
    reads_per_poll: Mutex<Option<(String, u64)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running fake SNAP server; dropping it stops the server, closes its connections and
/// removes the socket file.
#[derive(Debug)]
pub struct FakeSnap {
    path: PathBuf,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeSnap {
    /// Binds `path` and starts serving SNAP 4; the socket accepts connections when this
    /// returns. Fails if the path is taken (e.g. a server is already running there).
    pub fn start(path: &Path) -> io::Result<Self> {
        Self::start_with(path, FakeDialect::Snap4)
    }

    /// Like [`start`](Self::start), speaking `dialect`.
    pub fn start_with(path: &Path, dialect: FakeDialect) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            dialect,
            iostat: Mutex::new(IostatForm::default()),
            requests: Mutex::default(),
            state: Mutex::default(),
            faults: Mutex::default(),
            reads_per_poll: Mutex::default(),
        });
        let mut snap = Self {
            path: path.to_owned(),
            shared,
            stop: None,
            thread: None,
        };
        snap.spawn()?;
        Ok(snap)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let std_listener = StdUnixListener::bind(&self.path)?;
        std_listener.set_nonblocking(true)?;
        let listener = {
            let _context = runtime.enter();
            UnixListener::from_std(std_listener)?
        };
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::clone(&self.shared);
        let thread = std::thread::Builder::new()
            .name("fake-snap".to_owned())
            .spawn(move || runtime.block_on(serve(listener, shared, stopped)))?;
        self.stop = Some(stop);
        self.thread = Some(thread);
        Ok(())
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }

    /// The socket path to point the agent at (`--snap-socket`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The dialect it speaks.
    pub fn dialect(&self) -> FakeDialect {
        self.shared.dialect
    }

    /// Every request received so far, in arrival order: method and params (`Value::Null`
    /// when the request had none).
    pub fn requests(&self) -> Vec<(String, Value)> {
        lock(&self.shared.requests).clone()
    }

    /// A copy of the current SNAP state.
    pub fn state(&self) -> FakeSnapState {
        lock(&self.shared.state).clone()
    }

    /// Counts I/O on `bdev` (as if the host read and wrote through it); false if no such bdev.
    pub fn record_io(&self, bdev: &str, bytes_read: u64, bytes_written: u64) -> bool {
        let mut state = lock(&self.shared.state);
        let Some(b) = state.bdevs.get_mut(bdev) else {
            return false;
        };
        b.bytes_read += bytes_read;
        b.num_read_ops += u64::from(bytes_read > 0);
        b.bytes_written += bytes_written;
        b.num_write_ops += u64::from(bytes_written > 0);
        true
    }

    /// From now on, `bytes` more are read on `bdev` every time `bdev_get_iostat` is
    /// answered: the host reading through the disk between two polls, deterministically
    /// (`None` stops it).
    pub fn reads_between_polls(&self, per_poll: Option<(&str, u64)>) {
        *lock(&self.shared.reads_per_poll) = per_poll.map(|(b, n)| (b.to_owned(), n));
    }

    /// Which `bdev_get_iostat` request form to accept from now on.
    pub fn set_iostat_form(&self, form: IostatForm) {
        *lock(&self.shared.iostat) = form;
    }

    /// Delays every reply by `delay` (`None`: answer at once).
    pub fn delay_replies(&self, delay: Option<Duration>) {
        lock(&self.shared.faults).delay = delay;
    }

    /// The next reply to `method` is cut: half of it is written, then the connection closed
    /// (the request still takes effect, as when SNAP dies mid-write).
    pub fn cut_next_reply(&self, method: &str) {
        lock(&self.shared.faults).cut.push(method.to_owned());
    }

    /// Simulates SNAP restarting: every connection is closed, all state is lost (SNAP keeps
    /// no runtime config across restarts), faults are cleared, and it serves again on the
    /// same path. The request log is kept.
    pub fn restart(&mut self) -> io::Result<()> {
        self.halt();
        *lock(&self.shared.state) = FakeSnapState::default();
        *lock(&self.shared.faults) = Faults::default();
        self.spawn()
    }

    /// Stops the server now (same as dropping it), e.g. to simulate SNAP going away.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for FakeSnap {
    fn drop(&mut self) {
        self.halt();
    }
}

async fn serve(listener: UnixListener, shared: Arc<Shared>, mut stopped: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                // Out of descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
    // Returning drops the runtime's tasks, which closes every open connection.
}

/// Serves one connection until the client hangs up or sends bytes that are not JSON.
async fn serve_connection(mut stream: UnixStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    let mut chunk = vec![0_u8; RECV_CHUNK];
    loop {
        loop {
            let (next, consumed) = {
                let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                let next = values.next();
                (next, values.byte_offset())
            };
            match next {
                None => {
                    buf.clear();
                    break;
                }
                Some(Ok(request)) => {
                    buf.drain(..consumed);
                    let mut cut = false;
                    if let Some(reply) = handle(request, &shared, &mut cut) {
                        let delay = lock(&shared.faults).delay;
                        if let Some(delay) = delay {
                            tokio::time::sleep(delay).await;
                        }
                        if cut {
                            let bytes = reply.to_string();
                            let half = &bytes.as_bytes()[..bytes.len() / 2];
                            let _ = stream.write_all(half).await;
                            return;
                        }
                        if write(&mut stream, &reply).await.is_err() {
                            return;
                        }
                    }
                }
                Some(Err(e)) if e.is_eof() => break,
                Some(Err(_)) => {
                    // SPDK answers a parse error with id null, then closes the connection.
                    let _ = write(&mut stream, &error(Value::Null, -32700, "Parse error")).await;
                    return;
                }
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn write(stream: &mut UnixStream, reply: &Value) -> io::Result<()> {
    stream.write_all(reply.to_string().as_bytes()).await
}

/// Answers one request or batch; `None` when nothing is to be sent (notifications). Sets
/// `cut` when a cut fault matched one of the methods.
fn handle(request: Value, shared: &Shared, cut: &mut bool) -> Option<Value> {
    match request {
        Value::Array(batch) if !batch.is_empty() => {
            let replies: Vec<Value> = batch
                .into_iter()
                .filter_map(|r| handle(r, shared, cut))
                .collect();
            (!replies.is_empty()).then_some(Value::Array(replies))
        }
        Value::Object(obj) => handle_object(obj, shared, cut),
        _ => Some(error(Value::Null, -32600, "Invalid Request")),
    }
}

fn handle_object(mut obj: Map<String, Value>, shared: &Shared, cut: &mut bool) -> Option<Value> {
    let id = obj.remove("id");
    let reply_id = id.clone().unwrap_or(Value::Null);
    let method = match (obj.remove("jsonrpc"), obj.remove("method")) {
        (Some(Value::String(v)), Some(Value::String(method))) if v == "2.0" => method,
        _ => return Some(error(reply_id, -32600, "Invalid Request")),
    };
    let params = obj.remove("params");
    if matches!(&params, Some(p) if !p.is_object() && !p.is_array()) {
        return Some(error(reply_id, -32600, "Invalid Request"));
    }
    lock(&shared.requests).push((method.clone(), params.clone().unwrap_or(Value::Null)));
    let outcome = dispatch(shared, &method, params.as_ref());
    {
        let mut faults = lock(&shared.faults);
        if let Some(at) = faults.cut.iter().position(|m| *m == method) {
            faults.cut.remove(at);
            *cut = true;
        }
    }
    // A request without an id is a notification: SPDK runs it and sends nothing back.
    let id = id?;
    Some(match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(id, code, &message),
    })
}

fn dispatch(shared: &Shared, method: &str, params: Option<&Value>) -> Result<Value, (i64, String)> {
    let methods = match shared.dialect {
        FakeDialect::Snap4 => SNAP4_METHODS,
        FakeDialect::Snap3 => SNAP3_METHODS,
    };
    match method {
        "spdk_get_version" => match params {
            None => Ok(json!({
                "version": FAKE_SPDK_VERSION,
                "fields": {"major": 23, "minor": 1, "patch": 0, "suffix": " (fake)"},
            })),
            Some(_) => Err((
                -32602,
                "spdk_get_version method requires no parameters".into(),
            )),
        },
        "rpc_get_methods" => {
            // SPDK decodes strictly: only these optional keys are accepted.
            let known = ["current", "include_aliases"];
            match params {
                None => Ok(json!(methods)),
                Some(Value::Object(p)) if p.keys().all(|k| known.contains(&k.as_str())) => {
                    Ok(json!(methods))
                }
                Some(_) => Err((-32602, "Invalid parameters".into())),
            }
        }
        _ => {
            if method == "bdev_get_iostat" {
                if let Some((bdev, bytes)) = lock(&shared.reads_per_poll).clone() {
                    if let Some(b) = lock(&shared.state).bdevs.get_mut(&bdev) {
                        b.bytes_read += bytes;
                        b.num_read_ops += 1;
                    }
                }
            }
            let iostat = *lock(&shared.iostat);
            lock(&shared.state)
                .dispatch(shared.dialect, iostat, method, params)
                .unwrap_or_else(|| Err((-32601, "Method not found".into())))
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream as StdUnixStream;

    /// A blocking client that reads back-to-back JSON values like the real ones do.
    struct Conn {
        stream: StdUnixStream,
        buf: Vec<u8>,
    }

    impl Conn {
        fn open(path: &Path) -> Self {
            let stream = StdUnixStream::connect(path).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            Self {
                stream,
                buf: Vec::new(),
            }
        }

        fn send(&mut self, bytes: &[u8]) {
            self.stream.write_all(bytes).expect("write");
        }

        fn recv(&mut self) -> Value {
            loop {
                let (next, consumed) = {
                    let mut values =
                        serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
                    (values.next(), values.byte_offset())
                };
                if let Some(Ok(v)) = next {
                    self.buf.drain(..consumed);
                    return v;
                }
                let mut chunk = [0_u8; 4096];
                let n = self.stream.read(&mut chunk).expect("read");
                assert_ne!(n, 0, "server hung up");
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }

    #[test]
    fn answers_back_to_back_and_split_requests_and_records_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let snap = FakeSnap::start(&path).expect("start");
        let mut conn = Conn::open(snap.path());
        // Two requests in one write, no delimiter.
        conn.send(
            br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":1}{"jsonrpc":"2.0","method":"rpc_get_methods","id":2,"params":{"current":true}}"#,
        );
        let version = conn.recv();
        assert_eq!(version["id"], 1);
        assert_eq!(version["result"]["version"], FAKE_SPDK_VERSION);
        assert_eq!(version["result"]["fields"]["suffix"], " (fake)");
        let methods = conn.recv();
        assert_eq!(methods["id"], 2);
        assert!(methods["result"]
            .as_array()
            .expect("list")
            .contains(&json!("nvme_subsystem_create")));
        // One request split across writes.
        conn.send(br#"{"jsonrpc":"2.0","meth"#);
        std::thread::sleep(Duration::from_millis(20));
        conn.send(br#"od":"bdev_nope","id":"x","params":{"a":1}}"#);
        let unknown = conn.recv();
        assert_eq!(
            unknown,
            json!({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}})
        );
        assert_eq!(
            snap.requests(),
            vec![
                ("spdk_get_version".to_owned(), Value::Null),
                ("rpc_get_methods".to_owned(), json!({"current": true})),
                ("bdev_nope".to_owned(), json!({"a": 1})),
            ]
        );
    }

    #[test]
    fn many_connections_strict_params_and_cleanup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let snap = FakeSnap::start(&path).expect("start");
        let mut a = Conn::open(&path);
        let mut b = Conn::open(&path);
        b.send(br#"{"jsonrpc":"2.0","method":"spdk_get_version","id":7,"params":{}}"#);
        assert_eq!(b.recv()["error"]["code"], -32602);
        a.send(br#"{"jsonrpc":"1.0","method":"spdk_get_version","id":8}"#);
        assert_eq!(a.recv()["error"]["code"], -32600);
        a.send(b"{not json");
        assert_eq!(a.recv()["error"]["code"], -32700);
        assert!(FakeSnap::start(&path).is_err(), "path already served");
        drop(snap);
        assert!(!path.exists(), "socket removed");
        let restarted = FakeSnap::start(&path).expect("restart on the same path");
        let mut c = Conn::open(restarted.path());
        c.send(br#"[{"jsonrpc":"2.0","method":"spdk_get_version","id":1},{"jsonrpc":"2.0","method":"spdk_get_version"}]"#);
        let batch = c.recv();
        assert_eq!(batch.as_array().map(Vec::len), Some(1), "{batch}");
    }
}
