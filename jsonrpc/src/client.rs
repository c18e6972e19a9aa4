//! The public handle and request builder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, watch, Mutex};

use crate::connection::{Connection, ConnectionStatus};
use crate::message::{encode_request, Notification, Version};
use crate::transcript::Recorder;
use crate::Error;

/// How a [`Client`] talks to its socket. The defaults suit SPDK/SNAP; OVSDB and unixctl need
/// [`ClientOptions::v1`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The JSON-RPC dialect.
    pub version: Version,
    /// How long to wait for the socket to accept a connection.
    pub connect_timeout: Duration,
    /// The deadline of a call that does not set its own with [`Request::timeout`]; covers
    /// connecting, sending and waiting for the reply.
    pub call_timeout: Duration,
    /// The largest single incoming message accepted, in bytes; a bigger one drops the
    /// connection instead of growing memory without bound.
    pub max_frame: usize,
    /// Notifications buffered per subscriber before a slow one starts missing them.
    pub notification_capacity: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            version: Version::V2,
            connect_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(30),
            max_frame: 64 * 1024 * 1024,
            notification_capacity: 1024,
        }
    }
}

impl ClientOptions {
    /// Defaults for a JSON-RPC 2.0 peer (SPDK, SNAP).
    pub fn v2() -> Self {
        Self::default()
    }

    /// Defaults for a JSON-RPC 1.0 peer (ovsdb-server, ovs-vswitchd unixctl).
    pub fn v1() -> Self {
        Self {
            version: Version::V1,
            ..Self::default()
        }
    }
}

/// A cheap-to-clone handle to one JSON-RPC server socket. All clones share one persistent
/// connection, opened on the first call and reopened by the first call after it breaks, so a
/// restarted SNAP or ovsdb-server needs no restart of the caller.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    options: ClientOptions,
    next_id: AtomicU64,
    connection: Mutex<Option<Arc<Connection>>>,
    notifications: broadcast::Sender<Notification>,
    status: watch::Sender<ConnectionStatus>,
    /// Where every call is recorded, when recording ([`Client::recording`]).
    recorder: Option<Recorder>,
}

impl Client {
    /// A client for the socket at `path`; nothing is connected until the first call.
    pub fn new(path: impl Into<PathBuf>, options: ClientOptions) -> Self {
        Self::build(path.into(), options, None)
    }

    /// A client that records every call and its answer into `recorder` (and, in capture
    /// mode, refuses methods not on its allow-list): the transcript of a capture is what
    /// this client asked, not what a proxy saw.
    pub fn recording(path: impl Into<PathBuf>, options: ClientOptions, recorder: Recorder) -> Self {
        Self::build(path.into(), options, Some(recorder))
    }

    fn build(path: PathBuf, options: ClientOptions, recorder: Option<Recorder>) -> Self {
        let (notifications, _) = broadcast::channel(options.notification_capacity.max(1));
        Self {
            inner: Arc::new(Inner {
                path,
                options,
                next_id: AtomicU64::new(1),
                connection: Mutex::new(None),
                notifications,
                status: watch::Sender::new(ConnectionStatus::default()),
                recorder,
            }),
        }
    }

    /// The socket this client talks to (for error messages and health reports).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The options the client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Starts building a call of `method`.
    pub fn request(&self, method: impl Into<String>) -> Request {
        Request {
            client: self.clone(),
            method: method.into(),
            params: None,
            timeout: None,
        }
    }

    /// Subscribes to server-initiated messages without an id (e.g. OVSDB `update`). Only
    /// messages arriving after this call are received; the subscription survives reconnects.
    pub fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.inner.notifications.subscribe()
    }

    /// Watches the connection: every new connection bumps
    /// [`generation`](ConnectionStatus::generation), and `connected` drops to false as soon as
    /// the peer or a socket error ends it. The client never reconnects on its own, so a caller
    /// that must restore server-side state calls again (e.g. re-sends its monitor) when it
    /// sees `connected == false` or a generation other than the one it set the state up on.
    pub fn connection_status(&self) -> watch::Receiver<ConnectionStatus> {
        self.inner.status.subscribe()
    }

    /// Connects now instead of on the first call, to learn early whether the peer is there.
    pub async fn connect(&self) -> Result<(), Error> {
        self.connection().await.map(drop)
    }

    /// The live connection, opening a new one if there is none or the last one broke.
    async fn connection(&self) -> Result<Arc<Connection>, Error> {
        let mut slot = self.inner.connection.lock().await;
        if let Some(conn) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(conn));
        }
        let opts = &self.inner.options;
        // Only this function (under the slot lock) opens connections, so the next
        // generation cannot be taken by anyone else meanwhile.
        let generation = self.inner.status.borrow().generation + 1;
        let conn = Arc::new(
            Connection::open(
                &self.inner.path,
                opts.version,
                opts.connect_timeout,
                opts.max_frame,
                self.inner.notifications.clone(),
                (self.inner.status.clone(), generation),
            )
            .await?,
        );
        *slot = Some(Arc::clone(&conn));
        // If the connection already died, its close published {generation, false}; never
        // overwrite that with "connected".
        self.inner.status.send_if_modified(|status| {
            if status.generation >= generation {
                return false;
            }
            *status = ConnectionStatus {
                generation,
                connected: true,
            };
            true
        });
        Ok(conn)
    }

    /// One call; returns the result and the generation of the connection that carried it.
    async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        deadline: Duration,
    ) -> Result<(Value, u64), Error> {
        if let Some(recorder) = &self.inner.recorder {
            recorder.admit(method, params.as_ref().unwrap_or(&Value::Null))?;
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = encode_request(self.inner.options.version, method, params.as_ref(), id)?;
        let sent = self.inner.recorder.is_some().then(|| bytes.clone());
        let started = Instant::now();
        tracing::debug!(method, id, bytes = bytes.len(), "JSON-RPC request");
        let result = match tokio::time::timeout(deadline, self.round_trip(method, id, bytes)).await
        {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                method: method.to_owned(),
                after: deadline,
            }),
        };
        tracing::debug!(
            method,
            id,
            elapsed_ms = started.elapsed().as_millis(),
            ok = result.is_ok(),
            "JSON-RPC call finished"
        );
        if let (Some(recorder), Some(sent)) = (&self.inner.recorder, sent) {
            // The generation is this client's business, not the transcript's.
            let outcome = result.as_ref().map(|(value, _)| value);
            recorder.record(method, &sent, outcome);
        }
        result
    }

    async fn round_trip(
        &self,
        method: &str,
        id: u64,
        bytes: Vec<u8>,
    ) -> Result<(Value, u64), Error> {
        let conn = self.connection().await?;
        // The guard removes the pending slot however this future ends, timeouts included.
        let (_guard, reply) = conn.register(id, method)?;
        conn.send(method, bytes).await?;
        let value = reply.await.unwrap_or_else(|_| {
            Err(Error::ConnectionClosed {
                method: method.to_owned(),
                reason: "the connection was dropped".to_owned(),
            })
        })?;
        Ok((value, conn.generation()))
    }

    /// Calls still waiting for a reply on the current connection.
    #[cfg(test)]
    pub(crate) async fn pending_calls(&self) -> usize {
        self.inner
            .connection
            .lock()
            .await
            .as_ref()
            .map_or(0, |c| c.pending_len())
    }
}

/// One call being built: set params and a deadline, then `execute`. Owns a clone of the
/// [`Client`] so it can be moved into a task.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct Request {
    client: Client,
    method: String,
    params: Option<Result<Value, serde_json::Error>>,
    timeout: Option<Duration>,
}

impl Request {
    /// Sets the params; without this, 2.0 requests omit `params` and 1.0 requests send `[]`.
    pub fn params(mut self, params: impl Serialize) -> Self {
        self.params = Some(serde_json::to_value(params));
        self
    }

    /// Overrides the client's default deadline for this call.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Sends the call and returns the raw `result`.
    pub async fn execute_value(self) -> Result<Value, Error> {
        self.execute_on_connection().await.map(|(value, _)| value)
    }

    /// Sends the call and returns the raw `result` with the
    /// [`generation`](ConnectionStatus::generation) of the connection that carried it, for
    /// calls that set up per-connection server state (an OVSDB `monitor`): that state lives
    /// exactly as long as this generation, whatever other callers did meanwhile.
    pub async fn execute_on_connection(self) -> Result<(Value, u64), Error> {
        let params = match self.params {
            None => None,
            Some(Ok(params)) => Some(params),
            Some(Err(source)) => {
                return Err(Error::Encode {
                    method: self.method,
                    source,
                })
            }
        };
        let deadline = self
            .timeout
            .unwrap_or(self.client.inner.options.call_timeout);
        self.client.call(&self.method, params, deadline).await
    }

    /// Sends the call and deserializes the `result` into `T`.
    pub async fn execute<T: DeserializeOwned>(self) -> Result<T, Error> {
        let method = self.method.clone();
        let value = self.execute_value().await?;
        serde_json::from_value(value).map_err(|source| Error::Decode { method, source })
    }
}
