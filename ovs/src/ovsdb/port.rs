//! Ports with one interface each: add (idempotent) and delete — the transactions of
//! ovs-vsctl's `add-port ... -- set Interface ... type=T options:K=V` and `del-port`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::json;

use super::apply::{Applied, WaitPolicy};
use super::bridge::name_owner;
use super::datum::{named_uuid, set, string_map, Uuid};
use super::error::Error;
use super::handle::Ovsdb;
use super::model::{Bridge, INTERFACE, PORT};
use super::names::validate_name;
use super::ready::Created;
use super::txn::{Condition, Mutation, Operation};

/// An interface's `type` column. The common ones are named; anything else ovs-vswitchd
/// lists in `Open_vSwitch.iface_types` goes through [`InterfaceType::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum InterfaceType {
    /// `""`: an existing kernel network device (a representor such as `pf0hpf`, the uplink
    /// `p0`, a veth).
    #[default]
    System,
    /// `internal`: a device OVS creates (a tap with the userspace datapath).
    Internal,
    /// `patch`: one end of a patch cable to another bridge; needs the `peer` option.
    Patch,
    /// `dpdk`: a DPDK-managed NIC port (OVS-DOCA); needs the `dpdk-devargs` option.
    Dpdk,
    /// `vxlan` tunnel port (`remote_ip`, `key` options).
    Vxlan,
    /// `geneve` tunnel port.
    Geneve,
    /// `gre` tunnel port.
    Gre,
    /// Any other type, sent as given.
    Other(String),
}

impl InterfaceType {
    /// The value stored in the `type` column.
    pub fn as_str(&self) -> &str {
        match self {
            Self::System => "",
            Self::Internal => "internal",
            Self::Patch => "patch",
            Self::Dpdk => "dpdk",
            Self::Vxlan => "vxlan",
            Self::Geneve => "geneve",
            Self::Gre => "gre",
            Self::Other(kind) => kind,
        }
    }

    /// The type for a `type` column value (`system` and `""` are the same).
    pub fn from_column(kind: &str) -> Self {
        match kind {
            "" | "system" => Self::System,
            "internal" => Self::Internal,
            "patch" => Self::Patch,
            "dpdk" => Self::Dpdk,
            "vxlan" => Self::Vxlan,
            "geneve" => Self::Geneve,
            "gre" => Self::Gre,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for InterfaceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if *self == Self::System {
            "system"
        } else {
            self.as_str()
        })
    }
}

impl Ovsdb {
    /// Ports and their interfaces: add, delete.
    pub fn ports(&self) -> PortHandle {
        PortHandle::new(self.clone())
    }
}

/// Port operations on one database.
#[derive(Debug, Clone)]
pub struct PortHandle {
    ovsdb: Ovsdb,
}

impl PortHandle {
    pub(crate) fn new(ovsdb: Ovsdb) -> Self {
        Self { ovsdb }
    }

    /// Adds port `port` (with one interface of the same name) to `bridge`; adding it again
    /// with the same settings succeeds without a change.
    pub fn add(&self, bridge: &str, port: &str) -> AddPort {
        AddPort {
            ovsdb: self.ovsdb.clone(),
            bridge: bridge.to_owned(),
            name: port.to_owned(),
            kind: InterfaceType::System,
            options: BTreeMap::new(),
            tag: None,
            policy: WaitPolicy::default(),
        }
    }

    /// Deletes port `port` from `bridge`.
    pub fn del(&self, bridge: &str, port: &str) -> DelPort {
        DelPort {
            ovsdb: self.ovsdb.clone(),
            bridge: bridge.to_owned(),
            name: port.to_owned(),
            if_exists: false,
            policy: WaitPolicy::default(),
        }
    }
}

/// An `add-port` being built.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct AddPort {
    ovsdb: Ovsdb,
    bridge: String,
    name: String,
    kind: InterfaceType,
    options: BTreeMap<String, String>,
    tag: Option<u16>,
    policy: WaitPolicy,
}

impl AddPort {
    /// The interface type (default: an existing system device).
    pub fn interface_type(mut self, kind: InterfaceType) -> Self {
        self.kind = kind;
        self
    }

    /// Sets one interface option (`options:KEY=VALUE`).
    pub fn option(mut self, key: &str, value: &str) -> Self {
        self.options.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Makes this a patch port whose other end is the interface `peer` (on another bridge).
    pub fn patch_peer(self, peer: &str) -> Self {
        self.interface_type(InterfaceType::Patch)
            .option("peer", peer)
    }

    /// Makes this an access port of VLAN `tag` (0..=4095).
    pub fn tag(mut self, tag: u16) -> Self {
        self.tag = Some(tag);
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

    /// Adds the port; names are checked before anything is sent. [`Error::NotCreated`] when
    /// ovs-vswitchd applied it but could not open its interface (removed again when this
    /// call added it).
    pub async fn execute(self) -> Result<Applied, Error> {
        self.validate()?;
        let tables = self.ovsdb.snapshot().await?;
        let bridge = tables
            .bridge(&self.bridge)
            .ok_or_else(|| bridge_not_found(&self.bridge))?;
        if bridge.port(&self.name).is_some() {
            self.compare(&bridge)?;
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
                kind: "port",
                name: self.name.clone(),
                detail: format!("the name is already used by {owner}"),
            });
        }
        let mut port_row = json!({"name": self.name, "interfaces": named_uuid("iface")});
        if let Some(tag) = self.tag {
            port_row["tag"] = json!(tag);
        }
        let ops = vec![
            Operation::insert(
                INTERFACE,
                json!({"name": self.name, "type": self.kind.as_str(),
                    "options": string_map(&self.options)}),
            )
            .uuid_name("iface"),
            Operation::insert(PORT, port_row).uuid_name("port"),
            Operation::mutate(
                super::model::BRIDGE,
                vec![Condition::uuid(&bridge.uuid)],
                vec![Mutation::insert("ports", set([named_uuid("port")]))],
            ),
        ];
        let (results, applied) = self.ovsdb.commit_change(ops, self.policy).await?;
        if results.get(2).and_then(|r| r.count()) != Some(1) {
            // The bridge vanished between our read and our transaction; the new rows were
            // unreferenced and garbage-collected with the commit.
            return Err(bridge_not_found(&self.bridge));
        }
        tracing::info!(bridge = %self.bridge, port = %self.name, kind = %self.kind, "port added");
        if applied.confirmed {
            let undo = results
                .get(1)
                .and_then(|r| r.uuid())
                .map(|port| del_port_ops(&bridge.uuid, &port));
            self.ovsdb
                .check_created(self.created(), undo, self.policy)
                .await?;
        }
        Ok(applied)
    }

    fn created(&self) -> Created<'_> {
        Created {
            kind: "port",
            name: &self.name,
            bridge: &self.bridge,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        validate_name("bridge", &self.bridge)?;
        validate_name("port", &self.name)?;
        if let Some(tag) = self.tag.filter(|t| *t > 4095) {
            return Err(Error::InvalidValue {
                key: "tag".to_owned(),
                value: tag.to_string(),
                reason: "a VLAN id is 0..=4095".to_owned(),
            });
        }
        if self.kind == InterfaceType::Patch {
            let Some(peer) = self.options.get("peer") else {
                return Err(Error::InvalidValue {
                    key: "options:peer".to_owned(),
                    value: String::new(),
                    reason: "a patch port needs the name of its peer".to_owned(),
                });
            };
            validate_name("patch peer", peer)?;
            if *peer == self.name {
                return Err(Error::InvalidValue {
                    key: "options:peer".to_owned(),
                    value: peer.clone(),
                    reason: "a patch port cannot be its own peer".to_owned(),
                });
            }
        }
        Ok(())
    }

    fn compare(&self, bridge: &Bridge) -> Result<(), Error> {
        let existing = bridge.port(&self.name).map(|p| {
            let iface = p.interfaces.iter().find(|i| i.name == self.name);
            (
                iface.map(|i| InterfaceType::from_column(&i.kind)),
                iface.map(|i| i.options.clone()),
                p.tag,
            )
        });
        let wanted = (
            Some(self.kind.clone()),
            Some(self.options.clone()),
            self.tag.map(i64::from),
        );
        match existing {
            Some(found) if found == wanted => Ok(()),
            Some((kind, options, tag)) => Err(Error::Conflict {
                kind: "port",
                name: self.name.clone(),
                detail: format!(
                    "it exists on bridge {} with type {}, options {:?}, tag {tag:?}; requested \
                     type {}, options {:?}, tag {:?}",
                    bridge.name,
                    kind.map_or_else(|| "?".to_owned(), |k| k.to_string()),
                    options.unwrap_or_default(),
                    self.kind,
                    self.options,
                    self.tag
                ),
            }),
            None => Ok(()),
        }
    }
}

/// A `del-port` being built.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct DelPort {
    ovsdb: Ovsdb,
    bridge: String,
    name: String,
    if_exists: bool,
    policy: WaitPolicy,
}

impl DelPort {
    /// A missing port is success instead of [`Error::NotFound`] (`--if-exists`).
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

    /// Deletes the port; its interfaces go with it.
    pub async fn execute(self) -> Result<Applied, Error> {
        validate_name("bridge", &self.bridge)?;
        validate_name("port", &self.name)?;
        if self.name == self.bridge {
            return Err(Error::InvalidValue {
                key: "port".to_owned(),
                value: self.name.clone(),
                reason: format!(
                    "it is the local port of bridge {}; delete the bridge instead",
                    self.bridge
                ),
            });
        }
        let tables = self.ovsdb.snapshot().await?;
        let bridge = tables
            .bridge(&self.bridge)
            .ok_or_else(|| bridge_not_found(&self.bridge))?;
        let Some(port) = bridge.port(&self.name) else {
            if self.if_exists {
                return Ok(Applied::UNCHANGED);
            }
            return Err(Error::NotFound {
                kind: "port",
                name: self.name.clone(),
                detail: Some(match name_owner(&tables, &self.name) {
                    Some(owner) => format!("not on bridge {}; it is {owner}", self.bridge),
                    None => format!("not on bridge {}", self.bridge),
                }),
            });
        };
        let (results, applied) = self
            .ovsdb
            .commit_change(del_port_ops(&bridge.uuid, &port.uuid), self.policy)
            .await?;
        if results.get(1).and_then(|r| r.count()) != Some(1) && !self.if_exists {
            return Err(Error::NotFound {
                kind: "port",
                name: self.name.clone(),
                detail: Some("deleted concurrently".to_owned()),
            });
        }
        tracing::info!(bridge = %self.bridge, port = %self.name, "port deleted");
        Ok(applied)
    }
}

/// The `del-port` transaction of port row `port` on bridge row `bridge`; its interfaces go
/// with it.
fn del_port_ops(bridge: &Uuid, port: &Uuid) -> Vec<Operation> {
    vec![
        Operation::mutate(
            super::model::BRIDGE,
            vec![Condition::uuid(bridge)],
            vec![Mutation::delete("ports", set([port.to_json()]))],
        ),
        Operation::delete(PORT, vec![Condition::uuid(port)]),
    ]
}

fn bridge_not_found(name: &str) -> Error {
    Error::NotFound {
        kind: "bridge",
        name: name.to_owned(),
        detail: None,
    }
}
