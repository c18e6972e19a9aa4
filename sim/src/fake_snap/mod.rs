//! `FakeSnap`: an in-process stand-in for NVIDIA SNAP's JSON-RPC socket, for tests.
//!
//! **Wire** (SPDK v24.01 `lib/jsonrpc/jsonrpc_server.c`, `jsonrpc_server_tcp.c`): a Unix
//! stream socket, JSON values back to back with no framing, parsed incrementally (a request
//! may arrive in pieces, several in one read), many requests per connection, many
//! connections. Each reply is followed by `\n` (`end_response`). A request object may
//! carry only `jsonrpc` (optional, but `"2.0"` when present), `method` (a string), `params`
//! (an object or array; `null` is no params) and `id` (a string, number or null); anything
//! else is -32600 "Invalid request" with id null. A batch array, or any other top-level
//! value, is -32600 "Invalid request" with id null and the connection stays open
//! ("Got batch array (not currently supported)"; batches arrived in v26.05). Bytes that are
//! not JSON close the connection with no reply (SPDK queues -32700 but closes first). A result for a
//! request without an id (or with id null) is not sent; an error is, with id null. Unknown
//! methods are -32601 "Method not found". SPDK's 32 KiB receive buffer is not modelled.
//!
//! **Methods**: `spdk_get_version` (refusing params, as `lib/rpc/rpc.c` does) reports the
//! configured SPDK release ([`FakeSnap::set_version`], SPDK v24.01 by default);
//! `rpc_get_methods` lists the dialect's methods (SNAP 4 by default, or SNAP 3). The
//! bdev/bdev_nvme methods answer as SPDK v24.01's handlers do (`state/bdev.rs`); SNAP's
//! methods follow NVIDIA's public clients (`state/nvme.rs`, `state/snap3.rs`), with what
//! is guessed marked **UNVERIFIED** at each handler. Params are decoded strictly like
//! `spdk_json_decode_object` (`state/decode.rs`).
//!
//! **Knobs**: the SPDK release, remote targets that refuse connections, the emulation
//! function table (SNAP 4 `emulation_function_list`, and the functions SNAP 3 can use),
//! the SNAP 3 emulation managers; counters ([`FakeSnap::record_io`],
//! [`FakeSnap::reads_between_polls`]); faults (delay every reply, cut a method's next
//! reply, restart losing all state). Every request is recorded ([`FakeSnap::requests`]) so
//! tests can assert what the agent sent.
//!
//! **Replay**: [`FakeSnap::start_replaying`] answers from a captured transcript instead of
//! its own state (`replay.rs`); the knobs above do not apply to it.
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

mod replay;
mod state;
#[cfg(test)]
mod tests;

pub use replay::{Replay, ReplayError, NOT_CAPTURED_CODE};
use state::Config;
pub use state::{
    FakeBdev, FakeController, FakeDialect, FakeEmulationManager, FakeNamespace, FakeNvmeController,
    FakeNvmeCtrlr, FakePf, FakeSnapState, FakeSpdkVersion, FakeSubsystem, FakeTrid, FakeVf,
    FakeVirtioBlk, DECODE_FAILED_CODE, DECODE_FAILED_MESSAGE,
};

/// The version string `spdk_get_version` reports by default (`SPDK_VERSION_STRING` of
/// v24.01, the release DOCA SNAP 4 is built on).
pub const FAKE_SPDK_VERSION: &str = "SPDK v24.01";

/// What `rpc_get_methods` answers for SNAP 4: the DOCA SNAP methods the fake serves plus
/// the standard SPDK ones, so dialect detection picks SNAP 4.
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
    "emulation_function_list",
    "virtio_blk_controller_create",
    "virtio_blk_controller_destroy",
    "virtio_blk_controller_list",
    "bdev_get_iostat",
    "bdev_get_bdevs",
    "bdev_set_qos_limit",
    "bdev_nvme_attach_controller",
    "bdev_nvme_detach_controller",
    "bdev_nvme_get_controllers",
    "bdev_nvme_set_multipath_policy",
    "bdev_nvme_get_io_paths",
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
    "controller_virtio_blk_create",
    "controller_virtio_blk_delete",
    "emulation_managers_list",
    "emulation_functions_list",
    "bdev_get_iostat",
    "bdev_get_bdevs",
    "bdev_set_qos_limit",
    "bdev_nvme_attach_controller",
    "bdev_nvme_detach_controller",
    "bdev_nvme_get_controllers",
    "bdev_nvme_set_multipath_policy",
    "bdev_nvme_get_io_paths",
    "spdk_get_version",
    "rpc_get_methods",
];

/// How much the fake reads at a time (SPDK's receive buffer, 32 KiB in v24.01, is not
/// modelled: requests of any size are taken).
const READ_CHUNK: usize = 64 * 1024;

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
    config: Mutex<Config>,
    requests: Mutex<Vec<(String, Value)>>,
    state: Mutex<FakeSnapState>,
    faults: Mutex<Faults>,
    /// Reads counted on a bdev each time its iostat is asked for (see
    /// [`FakeSnap::reads_between_polls`]).
    reads_per_poll: Mutex<Option<(String, u64)>>,
    /// Polls still to answer without a read first (see [`FakeSnap::reads_after_quiet_polls`]).
    quiet_polls: Mutex<usize>,
    /// Bytes read on a bdev before each of the next polls, in order (see
    /// [`FakeSnap::reads_on_polls`]).
    scripted_reads: Mutex<Option<(String, std::collections::VecDeque<u64>)>>,
    /// Answers come from this transcript instead of `state` (see [`FakeSnap::start_replaying`]).
    replay: Option<Mutex<Replay>>,
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
        Self::start_shared(path, dialect, None)
    }

    /// Binds `path` and answers every request from `replay` (a captured transcript, see
    /// [`Replay::from_jsonl`]): a recorded request gets its recorded answer, anything else
    /// [`NOT_CAPTURED_CODE`]. The request log works as usual.
    pub fn start_replaying(path: &Path, replay: Replay) -> io::Result<Self> {
        Self::start_shared(path, FakeDialect::Snap4, Some(replay))
    }

    /// Holds every replayed answer at reading `reading` (`None`: readings in order, the
    /// last repeating). No effect when not replaying.
    pub fn replay_reading(&self, reading: Option<u32>) {
        if let Some(replay) = &self.shared.replay {
            lock(replay).pin(reading);
        }
    }

    fn start_shared(path: &Path, dialect: FakeDialect, replay: Option<Replay>) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            dialect,
            config: Mutex::default(),
            requests: Mutex::default(),
            state: Mutex::default(),
            faults: Mutex::default(),
            reads_per_poll: Mutex::default(),
            quiet_polls: Mutex::default(),
            scripted_reads: Mutex::default(),
            replay: replay.map(Mutex::new),
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
    /// when the request had none). Requests refused before reaching a method (-32600) are
    /// not recorded.
    pub fn requests(&self) -> Vec<(String, Value)> {
        lock(&self.shared.requests).clone()
    }

    /// The params of every `method` request so far, in order.
    pub fn requests_of(&self, method: &str) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// A copy of the current SNAP state.
    pub fn state(&self) -> FakeSnapState {
        lock(&self.shared.state).clone()
    }

    /// From now on reports SPDK release `version` (`v24.01`, `v26.05`, `24.09`,
    /// `v24.01.1`, `v26.09-pre`) and follows its version-dependent behaviour:
    /// `bdev_get_iostat` takes only `name` below v26.01, `name` and `names` at v26.01, only
    /// `names` from v26.05; a failed connect answers -5 from v24.09; attach defaults to
    /// multipath mode from v25.01.
    ///
    /// # Panics
    ///
    /// If `version` is not a version.
    pub fn set_version(&self, version: &str) {
        let parsed = FakeSpdkVersion::parse(version)
            .unwrap_or_else(|| panic!("FakeSnap::set_version: {version:?} is not a version"));
        lock(&self.shared.config).version = parsed;
    }

    /// The SPDK release it reports.
    pub fn version(&self) -> FakeSpdkVersion {
        lock(&self.shared.config).version.clone()
    }

    /// From now on nothing listens at `traddr`:`trsvcid`: a `bdev_nvme_attach_controller`
    /// there fails to connect as it does on SPDK (v24.01: -19); by default every address
    /// connects.
    pub fn refuse_connections_to(&self, traddr: &str, trsvcid: &str) {
        lock(&self.shared.config)
            .refused
            .insert((traddr.to_owned(), trsvcid.to_owned()));
    }

    /// From now on the target at `traddr`:`trsvcid` serves only `subnqns`: an attach to
    /// another subsystem there is rejected as SPDK's fabric connect rejects it.
    pub fn serve_only(&self, traddr: &str, trsvcid: &str, subnqns: &[&str]) {
        lock(&self.shared.config).serves.insert(
            (traddr.to_owned(), trsvcid.to_owned()),
            subnqns.iter().map(|s| (*s).to_owned()).collect(),
        );
    }

    /// Whether `nvme_subsystem_list` leaves the controllers' run `state` out (a SNAP
    /// release that does not report it).
    pub fn hide_controller_state(&self, hide: bool) {
        lock(&self.shared.config).hide_controller_state = hide;
    }

    /// Undoes [`refuse_connections_to`](Self::refuse_connections_to).
    pub fn accept_connections_to(&self, traddr: &str, trsvcid: &str) {
        lock(&self.shared.config)
            .refused
            .remove(&(traddr.to_owned(), trsvcid.to_owned()));
    }

    /// Replaces the emulation function table ([`FakePf::default_table`] by default): what
    /// SNAP 4 `emulation_function_list` lists and the functions controllers can be created
    /// on in either dialect.
    pub fn set_functions(&self, table: Vec<FakePf>) {
        lock(&self.shared.config).functions = table;
    }

    /// The emulation function table.
    pub fn functions(&self) -> Vec<FakePf> {
        lock(&self.shared.config).functions.clone()
    }

    /// Replaces SNAP 3's emulation managers ([`FakeEmulationManager::default_list`] by
    /// default).
    pub fn set_emulation_managers(&self, managers: Vec<FakeEmulationManager>) {
        lock(&self.shared.config).managers = managers;
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

    /// Counts `reads` read operations of `bytes` in all on `bdev` (the host's reads of its
    /// disk, as the block layer counted them); false if no such bdev.
    pub fn record_reads(&self, bdev: &str, bytes: u64, reads: u64) -> bool {
        let mut state = lock(&self.shared.state);
        let Some(b) = state.bdevs.get_mut(bdev) else {
            return false;
        };
        b.bytes_read += bytes;
        b.num_read_ops += reads;
        true
    }

    /// From now on, `bytes` more are read on `bdev` every time `bdev_get_iostat` is
    /// answered: the host reading through the disk between two polls, deterministically
    /// (`None` stops it).
    pub fn reads_between_polls(&self, per_poll: Option<(&str, u64)>) {
        self.reads_after_quiet_polls(0, per_poll);
    }

    /// As [`FakeSnap::reads_between_polls`], after `quiet` polls answered with nothing read:
    /// a volume no one else reads, then the host reading through it. A reader that counts
    /// on every poll looks, to an idle window, like another tenant reading all the time.
    pub fn reads_after_quiet_polls(&self, quiet: usize, per_poll: Option<(&str, u64)>) {
        *lock(&self.shared.quiet_polls) = quiet;
        *lock(&self.shared.reads_per_poll) = per_poll.map(|(b, n)| (b.to_owned(), n));
    }

    /// The next `bdev_get_iostat` answers each count `per_poll[k]` more bytes read on
    /// `bdev` first (then nothing more): a reader whose reads land in windows the test
    /// chose, e.g. exactly a proof's trials, or its gaps.
    pub fn reads_on_polls(&self, bdev: &str, per_poll: &[u64]) {
        *lock(&self.shared.scripted_reads) =
            Some((bdev.to_owned(), per_poll.iter().copied().collect()));
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
    /// same path. The request log and the configuration (version, refused targets,
    /// function table, emulation managers) are kept.
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
    let mut chunk = vec![0_u8; READ_CHUNK];
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
                    // SPDK v24.01 queues a -32700 reply but closes the connection before
                    // sending it (jsonrpc_parse_request returns -1): the client sees the
                    // connection closed and no reply (seen on spdk_tgt, OBSERVED_V24_01).
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

/// Writes one reply and the `\n` SPDK's `end_response` appends.
async fn write(stream: &mut UnixStream, reply: &Value) -> io::Result<()> {
    let mut bytes = reply.to_string().into_bytes();
    bytes.push(b'\n');
    stream.write_all(&bytes).await
}

/// Answers one top-level JSON value; `None` when nothing is to be sent. Sets `cut` when a
/// cut fault matched the method.
fn handle(request: Value, shared: &Shared, cut: &mut bool) -> Option<Value> {
    match request {
        Value::Object(obj) => handle_object(obj, shared, cut),
        // jsonrpc_parse_request (v24.01): an array is "Got batch array (not currently
        // supported)", anything else "top-level JSON value was not array or object"; both
        // answer SPDK_JSONRPC_ERROR_INVALID_REQUEST with id null.
        _ => Some(invalid_request(Value::Null)),
    }
}

fn invalid_request(id: Value) -> Value {
    error(id, -32600, "Invalid request")
}

/// `parse_single_request` (v24.01), then the method. An invalid request is answered with id
/// null (the id is only taken once the request is valid up to `params`).
fn handle_object(mut obj: Map<String, Value>, shared: &Shared, cut: &mut bool) -> Option<Value> {
    if obj
        .keys()
        .any(|k| !["jsonrpc", "method", "params", "id"].contains(&k.as_str()))
    {
        return Some(invalid_request(Value::Null));
    }
    match obj.remove("jsonrpc") {
        None => {}
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return Some(invalid_request(Value::Null)),
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return Some(invalid_request(Value::Null));
    };
    let id = obj.remove("id");
    if matches!(&id, Some(v) if !(v.is_string() || v.is_number() || v.is_null())) {
        return Some(invalid_request(Value::Null));
    }
    let reply_id = id.clone().unwrap_or(Value::Null);
    let params = match obj.remove("params") {
        None | Some(Value::Null) => None,
        Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
        Some(_) => return Some(invalid_request(reply_id)),
    };
    lock(&shared.requests).push((method.clone(), params.clone().unwrap_or(Value::Null)));
    if let Some(replay) = &shared.replay {
        let answer = lock(replay).answer(&method, params.as_ref());
        return match answer {
            // The recorded reply, under this request's id; none for a notification.
            Ok(response) if reply_id.is_null() && response.get("error").is_none() => None,
            Ok(mut response) => {
                response["id"] = reply_id;
                Some(response)
            }
            Err((code, message)) => Some(error(reply_id, code, &message)),
        };
    }
    let outcome = dispatch(shared, &method, params.as_ref());
    {
        let mut faults = lock(&shared.faults);
        if let Some(at) = faults.cut.iter().position(|m| *m == method) {
            faults.cut.remove(at);
            *cut = true;
        }
    }
    match outcome {
        // spdk_jsonrpc_end_result: no id (or id null), no response.
        Ok(_) if reply_id.is_null() => None,
        Ok(result) => Some(json!({"jsonrpc": "2.0", "id": reply_id, "result": result})),
        // spdk_jsonrpc_send_error_response always answers.
        Err((code, message)) => Some(error(reply_id, code, &message)),
    }
}

fn dispatch(shared: &Shared, method: &str, params: Option<&Value>) -> Result<Value, (i64, String)> {
    let methods = match shared.dialect {
        FakeDialect::Snap4 => SNAP4_METHODS,
        FakeDialect::Snap3 => SNAP3_METHODS,
    };
    let config = lock(&shared.config).clone();
    match method {
        "spdk_get_version" => match params {
            None => Ok(config.version.reply()),
            Some(_) => Err((
                -32602,
                "spdk_get_version method requires no parameters".into(),
            )),
        },
        "rpc_get_methods" => {
            // rpc_get_methods decodes {current?, include_aliases?} and answers a failure
            // with -32602 "Invalid parameters" (unlike the bdev handlers).
            let ok = match params {
                None => true,
                Some(Value::Object(p)) => p.iter().all(|(k, v)| {
                    ["current", "include_aliases"].contains(&k.as_str()) && v.is_boolean()
                }),
                Some(_) => false,
            };
            if ok {
                Ok(json!(methods))
            } else {
                Err((-32602, "Invalid parameters".into()))
            }
        }
        _ => {
            let quiet = method == "bdev_get_iostat" && {
                let mut left = lock(&shared.quiet_polls);
                let quiet = *left > 0;
                *left = left.saturating_sub(1);
                quiet
            };
            if method == "bdev_get_iostat" {
                let scripted = lock(&shared.scripted_reads)
                    .as_mut()
                    .and_then(|(bdev, left)| Some((bdev.clone(), left.pop_front()?)));
                if let Some((bdev, bytes)) = scripted.filter(|(_, bytes)| *bytes > 0) {
                    if let Some(b) = lock(&shared.state).bdevs.get_mut(&bdev) {
                        b.bytes_read += bytes;
                        b.num_read_ops += 1;
                    }
                }
            }
            if method == "bdev_get_iostat" && !quiet {
                if let Some((bdev, bytes)) = lock(&shared.reads_per_poll).clone() {
                    if let Some(b) = lock(&shared.state).bdevs.get_mut(&bdev) {
                        b.bytes_read += bytes;
                        b.num_read_ops += 1;
                    }
                }
            }
            lock(&shared.state)
                .dispatch(&config, shared.dialect, method, params)
                .unwrap_or_else(|| Err((-32601, "Method not found".into())))
        }
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
