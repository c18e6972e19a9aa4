//! [`Unixctl`], the handle on one daemon's control socket (found through its pid file on
//! every call), and [`Command`], one call made through it. The two are one unit: a handle
//! builds commands and a command executes through its handle's client. The typed helpers
//! (`dump_flows`, `list_commands`) are `impl Unixctl` blocks in `commands.rs`, next to the
//! types they return, so that file can name [`Command`] without this one importing it back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions, Recorder, Version};
use serde_json::Value;

use super::error::Error;

/// The daemon that owns the datapath and answers `dpctl/*`, `dpif/*`, `upcall/*`.
pub const VSWITCHD: &str = "ovs-vswitchd";

/// A cheap-to-clone handle to one daemon's control socket.
#[derive(Debug, Clone)]
pub struct Unixctl {
    target: Target,
    options: ClientOptions,
    /// The client for the socket last resolved; replaced when the pid changes.
    client: Arc<Mutex<Option<Client>>>,
    /// Where every command is recorded, when recording ([`Unixctl::recording`]).
    recorder: Option<Recorder>,
}

#[derive(Debug, Clone)]
enum Target {
    Daemon { rundir: PathBuf, program: String },
    Socket(PathBuf),
}

impl Unixctl {
    /// ovs-vswitchd in `rundir` (`/var/run/openvswitch`, or the agent's `--ovs-rundir`).
    pub fn vswitchd(rundir: impl Into<PathBuf>) -> Self {
        Self::daemon(rundir, VSWITCHD)
    }

    /// Any OVS daemon (`ovsdb-server`, `ovs-vswitchd`) found through its pid file in
    /// `rundir`.
    pub fn daemon(rundir: impl Into<PathBuf>, program: &str) -> Self {
        Self::with_target(Target::Daemon {
            rundir: rundir.into(),
            program: program.to_owned(),
        })
    }

    /// A daemon started with an explicit `--unixctl=PATH`.
    pub fn at_socket(path: impl Into<PathBuf>) -> Self {
        Self::with_target(Target::Socket(path.into()))
    }

    fn with_target(target: Target) -> Self {
        Self {
            target,
            options: ClientOptions::v1(),
            client: Arc::new(Mutex::new(None)),
            recorder: None,
        }
    }

    /// Records every command from now on into `recorder` (and refuses, before sending,
    /// what the recorder's capture rules refuse: see `dpu_ovs::capture`), so a capture's
    /// transcript is what these readers asked.
    pub fn recording(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self.client = Arc::new(Mutex::new(None));
        self
    }

    /// Replaces the transport options (deadlines, frame limit); the version stays 1.0.
    pub fn with_options(mut self, options: ClientOptions) -> Self {
        self.options = ClientOptions {
            version: Version::V1,
            ..options
        };
        self
    }

    /// The control socket path: the explicit one, or `{rundir}/{program}.{pid}.ctl` with the
    /// pid read now from `{rundir}/{program}.pid`.
    pub fn socket_path(&self) -> Result<PathBuf, Error> {
        match &self.target {
            Target::Socket(path) => Ok(path.clone()),
            Target::Daemon { rundir, program } => {
                let pid = read_pid(&rundir.join(format!("{program}.pid")))?;
                Ok(rundir.join(format!("{program}.{pid}.ctl")))
            }
        }
    }

    /// Starts building a call of `command`.
    pub fn command(&self, command: &str) -> Command {
        Command {
            unixctl: self.clone(),
            name: command.to_owned(),
            args: Vec::new(),
            timeout: None,
        }
    }

    /// `version`: the daemon's version line, e.g. `ovs-vswitchd (Open vSwitch) 3.1.0`.
    pub async fn version(&self) -> Result<String, Error> {
        Ok(self
            .command("version")
            .execute()
            .await?
            .trim_end()
            .to_owned())
    }

    /// `dpif/show`: datapaths with lookup counters and each port's datapath number.
    pub async fn dpif_show(&self) -> Result<String, Error> {
        self.command("dpif/show").execute().await
    }

    /// The client for the current socket, reusing the previous one while the pid holds.
    fn client(&self) -> Result<Client, Error> {
        let path = self.socket_path()?;
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = slot.as_ref().filter(|c| c.path() == path) {
            return Ok(client.clone());
        }
        let client = match &self.recorder {
            Some(recorder) => Client::recording(path, self.options.clone(), recorder.clone()),
            None => Client::new(path, self.options.clone()),
        };
        *slot = Some(client.clone());
        Ok(client)
    }
}

/// One command being built: arguments and a deadline, then `execute`.
#[derive(Debug)]
#[must_use = "a command does nothing until it is executed"]
pub struct Command {
    unixctl: Unixctl,
    name: String,
    args: Vec<String>,
    timeout: Option<Duration>,
}

impl Command {
    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Overrides the default call deadline.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Runs the command; returns its text output.
    pub async fn execute(self) -> Result<String, Error> {
        let client = self.unixctl.client()?;
        let mut request = client.request(self.name.as_str()).params(&self.args);
        if let Some(deadline) = self.timeout {
            request = request.timeout(deadline);
        }
        tracing::debug!(command = %self.name, args = ?self.args, "unixctl call");
        match request.execute_value().await {
            Ok(Value::String(text)) => Ok(text),
            Ok(other) => Err(Error::Malformed {
                command: self.name,
                detail: other.to_string(),
            }),
            Err(dpu_jsonrpc::Error::RpcV1 { error, .. }) => Err(Error::Command {
                command: self.name,
                message: error
                    .as_str()
                    .map_or_else(|| error.to_string(), |s| s.trim_end().to_owned()),
            }),
            Err(source) => Err(Error::Rpc {
                command: self.name,
                socket: client.path().to_owned(),
                source: Box::new(source),
            }),
        }
    }
}

fn read_pid(path: &Path) -> Result<u32, Error> {
    let content = std::fs::read_to_string(path).map_err(|source| Error::PidFile {
        path: path.to_owned(),
        source,
    })?;
    content
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|pid| *pid > 0)
        .ok_or_else(|| Error::BadPidFile {
            path: path.to_owned(),
            content: content.clone(),
        })
}
