//! [`Ovsdb`], the cheap-to-clone handle on one ovsdb-server, with its options, the address
//! parsing and the calls that are not transactions (`list_dbs`, `get_schema`, `echo`). The
//! per-area entry points (`transact`, `bridges`, `ports`, `other_config`, `monitor`,
//! `snapshot`) are `impl Ovsdb` blocks in the files of the types they return, so that those
//! files can hold an `Ovsdb` without this one importing them back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions, Recorder};
use serde_json::{json, Value};

use super::database::DATABASE;
use super::error::Error;
use super::schema::Schema;

/// Tunables of an [`Ovsdb`] handle.
#[derive(Debug, Clone)]
pub struct OvsdbOptions {
    /// The JSON-RPC transport's options (connect timeout, default call deadline, ...).
    pub rpc: ClientOptions,
    /// How long a change waits for ovs-vswitchd to apply it (`cur_cfg >= next_cfg`) before
    /// failing with [`Error::NotApplied`]; ovs-vsctl waits forever by default, which an
    /// agent serving calls cannot.
    pub apply_timeout: Duration,
}

impl Default for OvsdbOptions {
    fn default() -> Self {
        Self {
            rpc: ClientOptions::v1(),
            apply_timeout: Duration::from_secs(30),
        }
    }
}

/// A cheap-to-clone handle to one ovsdb-server. Nothing is connected until the first call;
/// the connection is reopened by the first call after ovsdb-server restarts.
#[derive(Debug, Clone)]
pub struct Ovsdb {
    client: Client,
    pub(super) apply_timeout: Duration,
}

impl Ovsdb {
    /// A handle for `address` (`unix:PATH`, as the agent's `--ovsdb` and ovs-vsctl's `--db`
    /// take it, or a bare socket path) with default options.
    pub fn new(address: &str) -> Result<Self, Error> {
        Self::with_options(address, OvsdbOptions::default())
    }

    /// A handle with explicit options; the JSON-RPC version is forced to 1.0.
    pub fn with_options(address: &str, options: OvsdbOptions) -> Result<Self, Error> {
        Self::build(address, options, None)
    }

    /// A handle whose every call is recorded into `recorder` (and refused before it is
    /// sent when the recorder's capture rules say so: see `dpu_ovs::capture`), so a
    /// capture's transcript is what these readers asked.
    pub fn recording(
        address: &str,
        options: OvsdbOptions,
        recorder: Recorder,
    ) -> Result<Self, Error> {
        Self::build(address, options, Some(recorder))
    }

    fn build(
        address: &str,
        options: OvsdbOptions,
        recorder: Option<Recorder>,
    ) -> Result<Self, Error> {
        let path = socket_path(address)?;
        let rpc = ClientOptions {
            version: dpu_jsonrpc::Version::V1,
            ..options.rpc
        };
        let client = match recorder {
            Some(recorder) => Client::recording(path, rpc, recorder),
            None => Client::new(path, rpc),
        };
        Ok(Self {
            client,
            apply_timeout: options.apply_timeout,
        })
    }

    /// Connects and checks the schema, to fail at start-up rather than on the first change.
    pub async fn connect(address: &str) -> Result<Self, Error> {
        let ovsdb = Self::new(address)?;
        ovsdb.check_schema().await?;
        Ok(ovsdb)
    }

    /// The socket path this handle talks to.
    pub fn socket(&self) -> &Path {
        self.client.path()
    }

    /// The JSON-RPC client underneath (shared by all clones), for calls not wrapped here.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The database name sent in every request.
    pub fn database(&self) -> &'static str {
        DATABASE
    }

    /// How long changes wait for ovs-vswitchd by default.
    pub fn apply_timeout(&self) -> Duration {
        self.apply_timeout
    }

    /// `list_dbs`: the databases the server holds (`Open_vSwitch`, `_Server`).
    pub async fn list_dbs(&self) -> Result<Vec<String>, Error> {
        let reply = self.call("list_dbs", json!([])).await?;
        serde_json::from_value(reply.clone())
            .map_err(|_| Error::malformed("list_dbs", format!("not a list of names: {reply}")))
    }

    /// `get_schema` of database `db`.
    pub async fn get_schema(&self, db: &str) -> Result<Schema, Error> {
        let reply = self.call("get_schema", json!([db])).await?;
        Schema::from_json(&reply)
    }

    /// Fetches the Open_vSwitch schema and checks it has everything this client uses.
    pub async fn check_schema(&self) -> Result<Schema, Error> {
        let schema = self.get_schema(DATABASE).await?;
        schema.check_open_vswitch()?;
        Ok(schema)
    }

    /// `echo`: a round trip that proves ovsdb-server is alive and answering.
    pub async fn echo(&self) -> Result<(), Error> {
        let reply = self.call("echo", json!(["dpu-ovs"])).await?;
        if reply == json!(["dpu-ovs"]) {
            Ok(())
        } else {
            Err(Error::malformed("echo", format!("echoed {reply}")))
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.client
            .request(method)
            .params(params)
            .execute_value()
            .await
            .map_err(|e| Error::rpc(method, e))
    }
}

/// `unix:PATH` or a bare path → the socket path.
fn socket_path(address: &str) -> Result<PathBuf, Error> {
    let refuse = |reason: &str| Error::Address {
        address: address.to_owned(),
        reason: reason.to_owned(),
    };
    let path = match address.split_once(':') {
        Some(("unix", path)) => path,
        Some(("tcp" | "ssl" | "punix" | "ptcp" | "pssl", _)) => {
            return Err(refuse(
                "only unix:PATH is supported (the agent runs next to ovsdb-server)",
            ))
        }
        _ => address,
    };
    if path.is_empty() {
        return Err(refuse("the socket path is empty"));
    }
    Ok(PathBuf::from(path))
}
