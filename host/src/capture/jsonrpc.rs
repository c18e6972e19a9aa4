//! The SNAP/SPDK part of a capture (`dpuctl capture --snap-socket PATH`): the read-only
//! JSON-RPC methods the agent and a bug report need, called through the project's typed
//! client ([`SnapClient`]) with a [`Recorder`] in capture mode, once per reading, and
//! written as `jsonrpc/<socket-name>.jsonl`, one [`Exchange`] per line (docs/hardware.md,
//! "JSON-RPC transcripts").
//!
//! Only [`READ_ONLY_METHODS`] can leave the recorder: anything else is refused before it
//! is sent, so a capture of a production SNAP cannot change it. A method the peer lacks
//! (plain SPDK has none of SNAP's) is recorded as the error it answered, not a failure of
//! the capture: a replay must give that error too. Only a socket that cannot be reached
//! at all fails the capture.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions, Exchange, Recorder};
use dpu_nvmeof::snap::{SnapClient, SnapDialect, SnapError};
use serde::Serialize;

use super::error::CaptureError;
use super::redact::Redactor;

/// The bundle directory the transcripts go to.
pub const TRANSCRIPT_DIR: &str = "jsonrpc";

/// What a capture may call: the listings and counters of SPDK and of both SNAP dialects.
/// None of them changes anything on the peer (SPDK's `bdev_get_iostat` only resets
/// counters when asked to with `reset_mode`, which the typed client never sends).
pub const READ_ONLY_METHODS: [&str; 15] = [
    "spdk_get_version",
    "rpc_get_methods",
    "bdev_get_bdevs",
    "bdev_get_iostat",
    "bdev_nvme_get_controllers",
    "bdev_nvme_get_io_paths",
    "framework_get_subsystems",
    "framework_get_config",
    // SNAP 4 (DOCA SNAP).
    "nvme_subsystem_list",
    "nvme_controller_list",
    "emulation_function_list",
    "virtio_blk_controller_list",
    // SNAP 3 (mlnx_snap).
    "subsystem_nvme_list",
    "controller_list",
    "emulation_managers_list",
];

/// The deadline of one call during a capture: a SNAP that does not answer a listing in
/// this long is noted, not waited for.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The manifest's entry for one transcript.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptEntry {
    /// The socket that was asked.
    pub socket: String,
    /// The transcript, relative to the bundle.
    pub transcript: String,
    /// The dialect detected in the first reading (`snap4`, `snap3`, `plain-spdk`), or
    /// none when `rpc_get_methods` failed.
    pub dialect: Option<&'static str>,
    /// Exchanges recorded, both readings.
    pub exchanges: usize,
    /// Exchanges whose answer was an error (a method the peer lacks, a name it refused):
    /// kept in the transcript as answered.
    pub errors: Vec<String>,
    /// Answers the typed client could not decode (kept raw in the transcript).
    pub undecoded: Vec<String>,
    /// Methods the recorder refused (must stay empty: the capture asks nothing else).
    pub refused: Vec<String>,
}

/// The recording of one socket across both readings.
#[derive(Debug)]
pub(super) struct SnapCapture {
    socket: PathBuf,
    recorder: Recorder,
    dialect: Option<SnapDialect>,
    undecoded: Vec<String>,
}

impl SnapCapture {
    /// A capture of `socket`; nothing is asked until [`read`](Self::read).
    pub(super) fn new(socket: &Path) -> Self {
        Self {
            socket: socket.to_owned(),
            recorder: Recorder::allowing(&READ_ONLY_METHODS),
            dialect: None,
            undecoded: Vec::new(),
        }
    }

    /// Reading `reading` (1 or 2): every listing once, on a thread of its own so the
    /// caller (sync, maybe inside a runtime) need not be async.
    pub(super) fn read(&mut self, reading: u32) -> Result<(), CaptureError> {
        self.recorder.set_reading(reading);
        // A fresh client per reading: its connection lives on this reading's runtime.
        let options = ClientOptions {
            call_timeout: CALL_TIMEOUT,
            ..ClientOptions::v2()
        };
        let client = SnapClient::with_client(Client::recording(
            &self.socket,
            options,
            self.recorder.clone(),
        ));
        let outcome = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|source| CaptureError::Write {
                            path: self.socket.clone(),
                            source,
                        })?;
                    runtime.block_on(read_all(&client))
                })
                .join()
        });
        let found = match outcome {
            Ok(result) => result?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if self.dialect.is_none() {
            self.dialect = found.dialect;
        }
        self.undecoded.extend(found.undecoded);
        Ok(())
    }

    /// Writes the transcript under `out` (redacted when `redactor` is given) and says
    /// what it holds.
    pub(super) fn write(
        self,
        out: &Path,
        redactor: Option<&mut Redactor>,
    ) -> Result<TranscriptEntry, CaptureError> {
        let name = self
            .socket
            .file_name()
            .map_or_else(|| "socket".to_owned(), |n| n.to_string_lossy().into_owned());
        let mut entry = write_transcript(out, &name, &self.socket, &self.recorder, redactor)?;
        entry.dialect = self.dialect.map(dialect_name);
        entry.undecoded = self.undecoded;
        Ok(entry)
    }
}

/// Writes what `recorder` holds as `jsonrpc/<name>.jsonl` under `out` (redacted when
/// `redactor` is given) and says what it holds; `socket` is the peer it was asked of.
pub(super) fn write_transcript(
    out: &Path,
    name: &str,
    socket: &Path,
    recorder: &Recorder,
    redactor: Option<&mut Redactor>,
) -> Result<TranscriptEntry, CaptureError> {
    let relative = format!("{TRANSCRIPT_DIR}/{name}.jsonl");
    let mut exchanges = recorder.exchanges();
    if let Some(redactor) = redactor {
        for exchange in &mut exchanges {
            redact_exchange(redactor, exchange, &relative);
        }
    }
    let dir = out.join(TRANSCRIPT_DIR);
    fs::create_dir_all(&dir).map_err(|source| CaptureError::Write {
        path: dir.clone(),
        source,
    })?;
    let path = out.join(&relative);
    fs::write(&path, dpu_jsonrpc::to_jsonl(&exchanges))
        .map_err(|source| CaptureError::Write { path, source })?;
    Ok(TranscriptEntry {
        socket: socket.display().to_string(),
        transcript: relative,
        dialect: None,
        exchanges: exchanges.len(),
        errors: exchanges
            .iter()
            .filter(|e| e.is_error())
            .map(|e| {
                format!(
                    "reading {}: {} {}: {}",
                    e.reading,
                    e.method,
                    e.params(),
                    e.response["error"]
                )
            })
            .collect(),
        undecoded: Vec::new(),
        refused: recorder.refused(),
    })
}

/// The request's params and the answer with every identifier replaced; the method and
/// the JSON-RPC envelope stay.
pub(super) fn redact_exchange(redactor: &mut Redactor, exchange: &mut Exchange, file: &str) {
    if let Some(params) = exchange.request.get_mut("params") {
        *params = redactor.json(params, file);
    }
    for member in ["result", "error", "failure"] {
        if let Some(value) = exchange.response.get_mut(member) {
            *value = redactor.json(value, file);
        }
    }
}

fn dialect_name(dialect: SnapDialect) -> &'static str {
    match dialect {
        SnapDialect::Snap4 => "snap4",
        SnapDialect::Snap3 => "snap3",
        SnapDialect::PlainSpdk => "plain-spdk",
    }
}

/// What one reading learnt besides the transcript.
#[derive(Debug, Default)]
struct Found {
    dialect: Option<SnapDialect>,
    undecoded: Vec<String>,
}

impl Found {
    /// The value of a typed call, or `None` when it failed: a refusal or an undecodable
    /// answer is in the transcript already (noted here when undecodable); only a peer
    /// that cannot be reached fails the reading.
    fn keep<T>(
        &mut self,
        what: &str,
        result: Result<T, SnapError>,
    ) -> Result<Option<T>, SnapError> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.is_transient() => Err(e),
            Err(e) => {
                if let SnapError::Rpc {
                    source: dpu_jsonrpc::Error::Decode { .. },
                    ..
                } = &e
                {
                    self.undecoded.push(format!("{what}: {e}"));
                }
                tracing::debug!(what, error = %e, "capture: recorded a failed read");
                Ok(None)
            }
        }
    }
}

/// One reading: every read-only listing, names taken from the listings themselves.
async fn read_all(snap: &SnapClient) -> Result<Found, CaptureError> {
    let unreachable = |source: SnapError| CaptureError::Snap {
        socket: snap.socket().to_owned(),
        source: Box::new(source),
    };
    let mut found = Found::default();
    found
        .keep("spdk_get_version", snap.spdk_get_version().await)
        .map_err(unreachable)?;
    found.dialect = found
        .keep("rpc_get_methods", snap.dialect().await)
        .map_err(unreachable)?;

    let bdevs = found
        .keep("bdev_get_bdevs", snap.bdev_get_bdevs(None).execute().await)
        .map_err(unreachable)?
        .unwrap_or_default();
    found
        .keep(
            "bdev_get_iostat",
            snap.bdev_get_iostat(None).execute().await,
        )
        .map_err(unreachable)?;
    for bdev in &bdevs {
        let name = bdev.name.as_str();
        let one = snap.bdev_get_bdevs(Some(name)).execute().await;
        found
            .keep("bdev_get_bdevs NAME", one)
            .map_err(unreachable)?;
        let io = snap.bdev_get_iostat(Some(name)).execute().await;
        found
            .keep("bdev_get_iostat NAME", io)
            .map_err(unreachable)?;
    }

    let controllers = found
        .keep(
            "bdev_nvme_get_controllers",
            snap.bdev_nvme_list_controllers().execute().await,
        )
        .map_err(unreachable)?
        .unwrap_or_default();
    for controller in &controllers {
        let one = snap
            .bdev_nvme_get_controllers(&controller.name)
            .execute()
            .await;
        found
            .keep("bdev_nvme_get_controllers NAME", one)
            .map_err(unreachable)?;
    }
    found
        .keep(
            "bdev_nvme_get_io_paths",
            snap.bdev_nvme_get_io_paths(None).execute().await,
        )
        .map_err(unreachable)?;

    read_dialect_listings(snap, &mut found)
        .await
        .map_err(unreachable)?;

    let subsystems = found
        .keep(
            "framework_get_subsystems",
            snap.framework_get_subsystems().execute().await,
        )
        .map_err(unreachable)?
        .unwrap_or_default();
    for subsystem in &subsystems {
        let config = snap
            .framework_get_config(&subsystem.subsystem)
            .execute()
            .await;
        found
            .keep("framework_get_config", config)
            .map_err(unreachable)?;
    }
    Ok(found)
}

/// The emulation listings of the detected dialect. Plain SPDK (or an unknown dialect) is
/// asked SNAP 4's, as the agent asks them in `auto` mode: the refusals are what a replay
/// must give it.
async fn read_dialect_listings(snap: &SnapClient, found: &mut Found) -> Result<(), SnapError> {
    if found.dialect == Some(SnapDialect::Snap3) {
        found.keep(
            "subsystem_nvme_list",
            snap.subsystem_nvme_list().execute().await,
        )?;
        found.keep(
            "controller_list",
            snap.controller_list_typed().execute().await,
        )?;
        found.keep(
            "emulation_managers_list",
            snap.emulation_managers_list().execute().await,
        )?;
        return Ok(());
    }
    found.keep(
        "nvme_subsystem_list",
        snap.nvme_subsystem_list().execute().await,
    )?;
    found.keep(
        "nvme_controller_list",
        snap.nvme_controller_list().execute().await,
    )?;
    found.keep(
        "emulation_function_list",
        snap.emulation_function_list().execute().await,
    )?;
    found.keep(
        "virtio_blk_controller_list",
        snap.virtio_blk_controller_list().execute().await,
    )?;
    Ok(())
}
