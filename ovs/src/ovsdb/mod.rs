//! OVSDB client (RFC 7047) for the Open_vSwitch database, over `dpu-jsonrpc` (JSON-RPC 1.0
//! on ovsdb-server's Unix socket). ovs-vsctl is never run: every change is a transaction we
//! build, with the same shape ovs-vsctl's IDL sends (ovs-netlink.md §2.2–2.3).
//!
//! Shape (after rtnetlink): a cheap-to-clone [`Ovsdb`] handle, per-area handles
//! ([`Ovsdb::bridges`], [`Ovsdb::ports`], [`Ovsdb::other_config`]) and request builders
//! finished by `execute()`:
//!
//! ```no_run
//! # async fn demo() -> Result<(), dpu_ovs::ovsdb::Error> {
//! use dpu_ovs::ovsdb::{InterfaceType, Ovsdb};
//!
//! let ovs = Ovsdb::connect("unix:/var/run/openvswitch/db.sock").await?;
//! ovs.bridges().add("ovsbr1").datapath_type("netdev").execute().await?;
//! ovs.ports().add("ovsbr1", "pf0hpf").execute().await?;
//! ovs.ports().add("ovsbr1", "vm1").interface_type(InterfaceType::Internal).execute().await?;
//! let change = ovs.other_config().set("hw-offload", "true").execute().await?;
//! if change.restart_required {
//!     // hw-offload is read once: ovs-vswitchd must be restarted for it to take effect.
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Every change increments `next_cfg` in the same transaction and then waits until
//! ovs-vswitchd reports `cur_cfg` at least that high, so success means "applied", not just
//! "stored" (skip with `no_wait()`). [`Ovsdb::monitor`] keeps a cache that follows the
//! database through `monitor` notifications and re-monitors after ovsdb-server restarts.

mod apply;
mod bridge;
mod config;
mod datum;
mod error;
mod model;
mod monitor;
mod names;
mod port;
mod schema;
mod txn;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions};
use serde_json::{json, Value};

pub use apply::Applied;
pub use bridge::{AddBridge, BridgeHandle, DelBridge};
pub use config::{
    restart_note, ConfigChange, OtherConfigHandle, SetOtherConfig, UpdateOtherConfig,
};
pub use datum::{named_uuid, set, string_map, Row, Uuid};
pub use error::Error;
pub use model::{Bridge, Interface, OpenVswitch, Port, Tables, COLUMNS};
pub use monitor::{CachedView, OvsdbCache};
pub use names::{validate_name, MAX_NAME_LEN};
pub use port::{AddPort, DelPort, InterfaceType, PortHandle};
pub use schema::{Schema, SchemaVersion, MIN_SCHEMA};
pub use txn::{Condition, Mutation, OpResult, Operation, Transaction};

/// The database this client manages.
pub const DATABASE: &str = "Open_vSwitch";

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
    apply_timeout: Duration,
}

impl Ovsdb {
    /// A handle for `address` (`unix:PATH`, as the agent's `--ovsdb` and ovs-vsctl's `--db`
    /// take it, or a bare socket path) with default options.
    pub fn new(address: &str) -> Result<Self, Error> {
        Self::with_options(address, OvsdbOptions::default())
    }

    /// A handle with explicit options; the JSON-RPC version is forced to 1.0.
    pub fn with_options(address: &str, options: OvsdbOptions) -> Result<Self, Error> {
        let path = socket_path(address)?;
        let rpc = ClientOptions {
            version: dpu_jsonrpc::Version::V1,
            ..options.rpc
        };
        Ok(Self {
            client: Client::new(path, rpc),
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

    /// Starts a raw transaction on the Open_vSwitch database.
    pub fn transact(&self) -> Transaction {
        Transaction::new(self.clone())
    }

    /// Bridges: list, add, delete.
    pub fn bridges(&self) -> BridgeHandle {
        BridgeHandle::new(self.clone())
    }

    /// Ports and their interfaces: add, delete.
    pub fn ports(&self) -> PortHandle {
        PortHandle::new(self.clone())
    }

    /// Global knobs in `Open_vSwitch.other_config` (`hw-offload`, `tc-policy`, ...).
    pub fn other_config(&self) -> OtherConfigHandle {
        OtherConfigHandle::new(self.clone())
    }

    /// Reads the four tables in one transaction: a consistent snapshot.
    pub async fn snapshot(&self) -> Result<Tables, Error> {
        let ops: Vec<Operation> = COLUMNS
            .iter()
            .map(|(table, columns)| {
                let mut columns = columns.to_vec();
                columns.push("_uuid");
                Operation::select(table, vec![], &columns)
            })
            .collect();
        let results = self.transact().ops(ops).execute().await?;
        let mut tables = Tables::default();
        for ((table, _), result) in COLUMNS.iter().zip(results) {
            tables.insert_selected(table, result.rows());
        }
        Ok(tables)
    }

    /// The root row (`ovs_version`, `other_config`, `next_cfg`/`cur_cfg`, ...).
    pub async fn open_vswitch(&self) -> Result<OpenVswitch, Error> {
        self.snapshot()
            .await?
            .open_vswitch()
            .ok_or_else(not_initialized)
    }

    /// Starts a cache that follows the database (see [`OvsdbCache`]); must be called inside
    /// a Tokio runtime. It keeps retrying while ovsdb-server is away.
    pub fn monitor(&self) -> OvsdbCache {
        OvsdbCache::spawn(self.clone())
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

/// The error for a database without its root row (`ovs-vsctl init` never ran).
fn not_initialized() -> Error {
    Error::NotFound {
        kind: "Open_vSwitch row",
        name: DATABASE.to_owned(),
        detail: Some("the database is not initialised (ovs-vsctl init)".to_owned()),
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
