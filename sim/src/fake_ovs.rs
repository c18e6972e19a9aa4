//! A replayed Open vSwitch: serves the two transcripts of a capture (`dpuctl capture
//! --ovs-rundir`, the bundle's `jsonrpc/ovsdb-server.jsonl` and
//! `jsonrpc/ovs-vswitchd.jsonl`) on the sockets the agent looks for in an OVS run
//! directory: `db.sock` for ovsdb-server, and `ovs-vswitchd.{pid}.ctl` with the pid in
//! `ovs-vswitchd.pid` (this process's), so an agent or `dpu_ovs` reader given the
//! directory as its `--ovs-rundir` talks to the captured machine.
//!
//! Both speak JSON-RPC 1.0 as the daemons do: a request whose method and params were
//! recorded gets the recorded `result` or `error` (the readings in order, or pinned with
//! [`FakeOvs::replay_reading`]: [`Replay`]'s rules); anything else gets the error string
//! `not captured: METHOD with params P ...` naming the request. Nothing is made up: no
//! OVSDB is kept, no monitor is answered, no `update` is ever sent.
//!
//! It serves from a thread of its own with a current-thread tokio runtime, like
//! [`FakeSnap`](crate::fake_snap::FakeSnap), so plain tests can use it.

use std::io::{self, Write as _};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use crate::fake_snap::Replay;

/// The pid file the agent reads to find ovs-vswitchd's control socket.
pub const VSWITCHD_PID_FILE: &str = "ovs-vswitchd.pid";

/// The read size of a connection.
const READ_CHUNK: usize = 64 * 1024;

/// One daemon's transcript, shared by its connections.
type Shared = Arc<Mutex<Replay>>;

/// ovsdb-server and ovs-vswitchd replayed in one run directory; stops (and removes its
/// sockets and pid file) on drop.
#[derive(Debug)]
pub struct FakeOvs {
    rundir: PathBuf,
    ovsdb: Shared,
    vswitchd: Shared,
    files: Vec<PathBuf>,
    stop: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeOvs {
    /// Binds `rundir/db.sock` (answering from `ovsdb`) and `rundir/ovs-vswitchd.PID.ctl`
    /// (answering from `vswitchd`) and writes `rundir/ovs-vswitchd.pid`. `rundir` must
    /// exist and hold none of them.
    pub fn start_replaying(rundir: &Path, ovsdb: Replay, vswitchd: Replay) -> io::Result<Self> {
        let pid = std::process::id();
        let db = rundir.join("db.sock");
        let ctl = rundir.join(format!("ovs-vswitchd.{pid}.ctl"));
        let pid_file = rundir.join(VSWITCHD_PID_FILE);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut fake = Self {
            rundir: rundir.to_owned(),
            ovsdb: Arc::new(Mutex::new(ovsdb)),
            vswitchd: Arc::new(Mutex::new(vswitchd)),
            files: Vec::new(),
            stop: None,
            thread: None,
        };
        let mut listeners = Vec::new();
        for (path, replay) in [(&db, &fake.ovsdb), (&ctl, &fake.vswitchd)] {
            let listener = StdUnixListener::bind(path)?;
            fake.files.push(path.clone());
            listener.set_nonblocking(true)?;
            let _context = runtime.enter();
            listeners.push((UnixListener::from_std(listener)?, Arc::clone(replay)));
        }
        // create_new: never overwrite a running OVS's pid file.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&pid_file)?;
        fake.files.push(pid_file);
        writeln!(file, "{pid}")?;
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("fake-ovs".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let tasks: Vec<_> = listeners
                        .into_iter()
                        .map(|(listener, replay)| {
                            tokio::spawn(serve(listener, replay, stopped.clone()))
                        })
                        .collect();
                    for task in tasks {
                        let _ = task.await;
                    }
                });
            })?;
        fake.stop = Some(stop);
        fake.thread = Some(thread);
        Ok(fake)
    }

    /// The run directory to point the agent (`--ovs-rundir`) or a reader at.
    pub fn rundir(&self) -> &Path {
        &self.rundir
    }

    /// The OVSDB socket (`rundir/db.sock`).
    pub fn ovsdb_socket(&self) -> PathBuf {
        self.rundir.join("db.sock")
    }

    /// Holds every replayed answer of both daemons at reading `reading` (`None`: the
    /// readings in order, the last repeating).
    pub fn replay_reading(&self, reading: Option<u32>) {
        for replay in [&self.ovsdb, &self.vswitchd] {
            replay
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pin(reading);
        }
    }
}

impl Drop for FakeOvs {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

async fn serve(listener: UnixListener, replay: Shared, mut stopped: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, Arc::clone(&replay)));
                }
                // Out of descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

/// Serves one connection until the client hangs up or sends bytes that are not JSON.
async fn serve_connection(mut stream: UnixStream, replay: Shared) {
    let mut buf = Vec::new();
    let mut chunk = vec![0_u8; READ_CHUNK];
    loop {
        loop {
            let (next, consumed) = {
                let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                (values.next(), values.byte_offset())
            };
            match next {
                None => {
                    buf.clear();
                    break;
                }
                Some(Ok(request)) => {
                    buf.drain(..consumed);
                    if let Some(reply) = answer(&request, &replay) {
                        if stream
                            .write_all(reply.to_string().as_bytes())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
                Some(Err(e)) if e.is_eof() => break,
                Some(Err(_)) => return,
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The JSON-RPC 1.0 reply to `request`; `None` for a notification or a reply (no id, or
/// no method).
fn answer(request: &Value, replay: &Shared) -> Option<Value> {
    let id = request.get("id").filter(|id| !id.is_null())?.clone();
    let method = request.get("method")?.as_str().unwrap_or_default();
    let answered = replay
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .answer(method, request.get("params"));
    Some(match answered {
        Ok(response) => json!({
            "id": id,
            "result": response.get("result").cloned().unwrap_or(Value::Null),
            "error": response.get("error").cloned().unwrap_or(Value::Null),
        }),
        Err((_, message)) => json!({"id": id, "result": null, "error": message}),
    })
}

#[cfg(test)]
mod tests;
