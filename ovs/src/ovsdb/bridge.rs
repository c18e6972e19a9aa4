//! Bridges: list, add (idempotent), delete — the transactions of ovs-vsctl's `list-br`,
//! `add-br` and `del-br` (`utilities/ovs-vsctl.c`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::apply::{Applied, WaitPolicy};
use super::database::not_initialized;
use super::datum::{named_uuid, set, string_map, Uuid};
use super::error::Error;
use super::handle::Ovsdb;
use super::model::{Bridge, Tables, BRIDGE, INTERFACE, OPEN_VSWITCH, PORT};
use super::names::validate_name;
use super::ready::Created;
use super::txn::{Condition, Mutation, Operation};

impl Ovsdb {
    /// Bridges: list, add, delete.
    pub fn bridges(&self) -> BridgeHandle {
        BridgeHandle::new(self.clone())
    }
}

/// Bridge operations on one database.
#[derive(Debug, Clone)]
pub struct BridgeHandle {
    ovsdb: Ovsdb,
}

impl BridgeHandle {
    pub(crate) fn new(ovsdb: Ovsdb) -> Self {
        Self { ovsdb }
    }

    /// Every bridge with its ports and interfaces, sorted by name, from one consistent read.
    pub async fn list(&self) -> Result<Vec<Bridge>, Error> {
        Ok(self.ovsdb.snapshot().await?.bridges())
    }

    /// The bridge called `name`, or [`Error::NotFound`].
    pub async fn get(&self, name: &str) -> Result<Bridge, Error> {
        self.ovsdb
            .snapshot()
            .await?
            .bridge(name)
            .ok_or_else(|| not_found(name))
    }

    /// Adds bridge `name` with its local internal port, like `ovs-vsctl add-br`; adding it
    /// again with the same settings succeeds without a change.
    pub fn add(&self, name: &str) -> AddBridge {
        AddBridge {
            ovsdb: self.ovsdb.clone(),
            name: name.to_owned(),
            datapath_type: String::new(),
            external_ids: BTreeMap::new(),
            policy: WaitPolicy::default(),
        }
    }

    /// Deletes bridge `name` with all its ports, like `ovs-vsctl del-br`.
    pub fn del(&self, name: &str) -> DelBridge {
        DelBridge {
            ovsdb: self.ovsdb.clone(),
            name: name.to_owned(),
            if_exists: false,
            policy: WaitPolicy::default(),
        }
    }
}

/// An `add-br` being built.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct AddBridge {
    ovsdb: Ovsdb,
    name: String,
    datapath_type: String,
    external_ids: BTreeMap<String, String>,
    policy: WaitPolicy,
}

impl AddBridge {
    /// The datapath: `netdev` (userspace, also OVS-DOCA on BlueField) or `system`/empty
    /// (the kernel module, the default).
    pub fn datapath_type(mut self, datapath_type: &str) -> Self {
        datapath_type.clone_into(&mut self.datapath_type);
        self
    }

    /// Sets an `external_ids` key on the bridge (tools use it to mark what they own).
    pub fn external_id(mut self, key: &str, value: &str) -> Self {
        self.external_ids.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Returns once committed, without waiting for ovs-vswitchd to apply it.
    pub fn no_wait(mut self) -> Self {
        self.policy.no_wait = true;
        self
    }

    /// How long to wait for ovs-vswitchd (default: the handle's apply timeout).
    pub fn apply_timeout(mut self, timeout: Duration) -> Self {
        self.policy.timeout = Some(timeout);
        self
    }

    /// Adds the bridge; [`Error::Conflict`] when it exists with other settings or its name
    /// is taken by a port or interface elsewhere, [`Error::NotCreated`] when ovs-vswitchd
    /// applied it but could not create it (removed again when this call added it).
    pub async fn execute(self) -> Result<Applied, Error> {
        validate_name("bridge", &self.name)?;
        let tables = self.ovsdb.snapshot().await?;
        if let Some(existing) = tables.bridge(&self.name) {
            self.compare(&existing)?;
            // Already there: still say whether ovs-vswitchd runs it, but never remove what
            // this request did not add.
            if !self.policy.no_wait {
                self.ovsdb
                    .check_created(self.created(), None, self.policy)
                    .await?;
            }
            return Ok(Applied::UNCHANGED);
        }
        if let Some(owner) = name_owner(&tables, &self.name) {
            return Err(Error::Conflict {
                kind: "bridge",
                name: self.name.clone(),
                detail: format!("a port or interface named {} exists on {owner}", self.name),
            });
        }
        if tables.open_vswitch().is_none() {
            return Err(not_initialized());
        }
        let mut bridge_row = json!({"name": self.name, "ports": named_uuid("port"),
            "datapath_type": self.datapath_type});
        if !self.external_ids.is_empty() {
            bridge_row["external_ids"] = string_map(&self.external_ids);
        }
        let ops = vec![
            Operation::insert(INTERFACE, json!({"name": self.name, "type": "internal"}))
                .uuid_name("iface"),
            Operation::insert(
                PORT,
                json!({"name": self.name, "interfaces": named_uuid("iface")}),
            )
            .uuid_name("port"),
            Operation::insert(BRIDGE, bridge_row).uuid_name("bridge"),
            Operation::mutate(
                OPEN_VSWITCH,
                vec![],
                vec![Mutation::insert("bridges", set([named_uuid("bridge")]))],
            ),
        ];
        let (results, applied) = self.ovsdb.commit_change(ops, self.policy).await?;
        if results.get(3).and_then(|r| r.count()) != Some(1) {
            return Err(not_initialized());
        }
        tracing::info!(bridge = %self.name, datapath_type = %self.datapath_type, "bridge added");
        if applied.confirmed {
            let undo = results
                .get(2)
                .and_then(|r| r.uuid())
                .map(|uuid| del_br_ops(&uuid));
            self.ovsdb
                .check_created(self.created(), undo, self.policy)
                .await?;
        }
        Ok(applied)
    }

    fn created(&self) -> Created<'_> {
        Created {
            kind: "bridge",
            name: &self.name,
            bridge: &self.name,
        }
    }

    fn compare(&self, existing: &Bridge) -> Result<(), Error> {
        let normalize = |dp: &str| {
            if dp == "system" {
                String::new()
            } else {
                dp.to_owned()
            }
        };
        let mut differences = Vec::new();
        if normalize(&existing.datapath_type) != normalize(&self.datapath_type) {
            differences.push(format!(
                "datapath_type is {:?}, requested {:?}",
                existing.datapath_type, self.datapath_type
            ));
        }
        for (key, value) in &self.external_ids {
            let have = existing.external_ids.get(key);
            if have != Some(value) {
                differences.push(format!(
                    "external_ids:{key} is {have:?}, requested {value:?}"
                ));
            }
        }
        if differences.is_empty() {
            return Ok(());
        }
        Err(Error::Conflict {
            kind: "bridge",
            name: self.name.clone(),
            detail: format!("it already exists and {}", differences.join(", ")),
        })
    }
}

/// A `del-br` being built.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct DelBridge {
    ovsdb: Ovsdb,
    name: String,
    if_exists: bool,
    policy: WaitPolicy,
}

impl DelBridge {
    /// A missing bridge is success instead of [`Error::NotFound`] (`--if-exists`).
    pub fn if_exists(mut self) -> Self {
        self.if_exists = true;
        self
    }

    /// Returns once committed, without waiting for ovs-vswitchd to apply it.
    pub fn no_wait(mut self) -> Self {
        self.policy.no_wait = true;
        self
    }

    /// How long to wait for ovs-vswitchd (default: the handle's apply timeout).
    pub fn apply_timeout(mut self, timeout: Duration) -> Self {
        self.policy.timeout = Some(timeout);
        self
    }

    /// Deletes the bridge; its ports and interfaces go with it (OVSDB garbage-collects rows
    /// nothing references).
    pub async fn execute(self) -> Result<Applied, Error> {
        validate_name("bridge", &self.name)?;
        let Some(bridge) = self.ovsdb.snapshot().await?.bridge(&self.name) else {
            if self.if_exists {
                return Ok(Applied::UNCHANGED);
            }
            return Err(not_found(&self.name));
        };
        let (results, applied) = self
            .ovsdb
            .commit_change(del_br_ops(&bridge.uuid), self.policy)
            .await?;
        if results.get(1).and_then(|r| r.count()) != Some(1) && !self.if_exists {
            // Someone else deleted it between our read and our transaction.
            return Err(not_found(&self.name));
        }
        tracing::info!(bridge = %self.name, "bridge deleted");
        Ok(applied)
    }
}

/// The `del-br` transaction of the bridge row `uuid`: its ports and interfaces go with it
/// (OVSDB garbage-collects rows nothing references).
fn del_br_ops(uuid: &Uuid) -> Vec<Operation> {
    vec![
        Operation::mutate(
            OPEN_VSWITCH,
            vec![],
            vec![Mutation::delete("bridges", set([uuid.to_json()]))],
        ),
        Operation::delete(BRIDGE, vec![Condition::uuid(uuid)]),
    ]
}

fn not_found(name: &str) -> Error {
    Error::NotFound {
        kind: "bridge",
        name: name.to_owned(),
        detail: None,
    }
}

/// Where a port or interface called `name` lives (`port P on bridge B`), if anywhere;
/// port and interface names are unique database-wide (their tables index `name`).
pub(crate) fn name_owner(tables: &Tables, name: &str) -> Option<String> {
    let named = |row: &super::datum::Row| row.get("name").and_then(Value::as_str) == Some(name);
    let taken =
        tables.rows(PORT).any(|(_, r)| named(r)) || tables.rows(INTERFACE).any(|(_, r)| named(r));
    if !taken {
        return None;
    }
    let owner = tables.bridges().into_iter().find_map(|b| {
        b.ports
            .iter()
            .find(|p| p.name == name || p.interfaces.iter().any(|i| i.name == name))
            .map(|p| format!("port {} of bridge {}", p.name, b.name))
    });
    Some(owner.unwrap_or_else(|| "a row no bridge references".to_owned()))
}
