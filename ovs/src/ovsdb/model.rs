//! Typed views of the Open_vSwitch tables we use (ovs-netlink.md §2.3), built from raw rows
//! so the one-shot listing (a `select` transaction) and the monitor cache give the same types.

use std::collections::BTreeMap;

use serde_json::Value;

use super::datum::{opt_int, opt_string, str_map, string_set, uuid_set, Row, Uuid};

/// The root table's name.
pub(crate) const OPEN_VSWITCH: &str = "Open_vSwitch";
/// The bridge table's name.
pub(crate) const BRIDGE: &str = "Bridge";
/// The port table's name.
pub(crate) const PORT: &str = "Port";
/// The interface table's name.
pub(crate) const INTERFACE: &str = "Interface";

/// The columns read from each table: only configuration and state, never the ephemeral
/// `statistics`, so a monitor is not woken every `stats-update-interval`.
pub const COLUMNS: [(&str, &[&str]); 4] = [
    (
        OPEN_VSWITCH,
        &[
            "bridges",
            "other_config",
            "external_ids",
            "next_cfg",
            "cur_cfg",
            "ovs_version",
            "db_version",
            "datapath_types",
            "iface_types",
        ],
    ),
    (
        BRIDGE,
        &[
            "name",
            "ports",
            "datapath_type",
            "fail_mode",
            "other_config",
            "external_ids",
        ],
    ),
    (
        PORT,
        &["name", "interfaces", "tag", "other_config", "external_ids"],
    ),
    (
        INTERFACE,
        &[
            "name",
            "type",
            "options",
            "ofport",
            "ifindex",
            "mtu",
            "mac_in_use",
            "admin_state",
            "link_state",
            "error",
            "other_config",
            "external_ids",
        ],
    ),
];

/// The root row: global settings and the configuration sequence numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenVswitch {
    /// The row's UUID.
    pub uuid: Uuid,
    /// Global knobs (`hw-offload`, `tc-policy`, `max-idle`, ...).
    pub other_config: BTreeMap<String, String>,
    /// Keys for external tools (`hostname`, `system-id`, ...).
    pub external_ids: BTreeMap<String, String>,
    /// The configuration generation clients asked for.
    pub next_cfg: i64,
    /// The configuration generation ovs-vswitchd has applied.
    pub cur_cfg: i64,
    /// ovs-vswitchd's version, once it has started (`3.1.0`).
    pub ovs_version: Option<String>,
    /// The schema version ovs-vswitchd was built against.
    pub db_version: Option<String>,
    /// Datapath types ovs-vswitchd supports (`netdev`, `system`).
    pub datapath_types: Vec<String>,
    /// Interface types ovs-vswitchd supports (`internal`, `patch`, `dpdk`, ...).
    pub iface_types: Vec<String>,
}

/// A bridge with its ports and their interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bridge {
    /// The row's UUID.
    pub uuid: Uuid,
    /// The bridge name (also the name of its local port and interface).
    pub name: String,
    /// `""` or `system` (kernel datapath), `netdev` (userspace, also OVS-DOCA).
    pub datapath_type: String,
    /// `standalone` or `secure`, when set.
    pub fail_mode: Option<String>,
    /// The bridge's ports, sorted by name.
    pub ports: Vec<Port>,
    /// Bridge knobs.
    pub other_config: BTreeMap<String, String>,
    /// Keys for external tools.
    pub external_ids: BTreeMap<String, String>,
}

impl Bridge {
    /// The port called `name`.
    pub fn port(&self, name: &str) -> Option<&Port> {
        self.ports.iter().find(|p| p.name == name)
    }
}

/// A port and its interfaces (one, or several for a bond).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// The row's UUID.
    pub uuid: Uuid,
    /// The port name.
    pub name: String,
    /// The port's interfaces, sorted by name.
    pub interfaces: Vec<Interface>,
    /// The access VLAN, when set.
    pub tag: Option<i64>,
    /// Port knobs.
    pub other_config: BTreeMap<String, String>,
    /// Keys for external tools.
    pub external_ids: BTreeMap<String, String>,
}

/// An interface: configuration plus the state ovs-vswitchd reports back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The row's UUID.
    pub uuid: Uuid,
    /// The interface name.
    pub name: String,
    /// The `type` column: `""` (a system device), `internal`, `patch`, `dpdk`, `vxlan`...
    pub kind: String,
    /// Type-specific options (`peer` for patch, `dpdk-devargs`, `remote_ip`...).
    pub options: BTreeMap<String, String>,
    /// The OpenFlow port number; absent until assigned, -1 when the interface failed.
    pub ofport: Option<i64>,
    /// The kernel ifindex, when it is a kernel device.
    pub ifindex: Option<i64>,
    /// The MTU in use.
    pub mtu: Option<i64>,
    /// The MAC address in use.
    pub mac_in_use: Option<String>,
    /// `up` or `down`, as configured.
    pub admin_state: Option<String>,
    /// `up` or `down`, the carrier.
    pub link_state: Option<String>,
    /// Why ovs-vswitchd could not open the interface, when it could not.
    pub error: Option<String>,
    /// Interface knobs.
    pub other_config: BTreeMap<String, String>,
    /// Keys for external tools.
    pub external_ids: BTreeMap<String, String>,
}

impl OpenVswitch {
    /// True when ovs-vswitchd has applied every configuration clients asked for
    /// (`cur_cfg >= next_cfg`). It writes `cur_cfg` in the same transaction as the
    /// interfaces' `ofport` and `error` (`vswitchd/bridge.c` `bridge_run`), so once this is
    /// true those columns describe the configuration as it is now.
    pub fn caught_up(&self) -> bool {
        self.cur_cfg >= self.next_cfg
    }
}

impl Bridge {
    /// The bridge's local interface (named like the bridge, type `internal`): the one whose
    /// state says whether ovs-vswitchd created the bridge at all.
    pub fn local_interface(&self) -> Option<&Interface> {
        self.port(&self.name)
            .and_then(|p| p.interfaces.iter().find(|i| i.name == self.name))
    }
}

/// What ovs-vswitchd made of an interface, read from its `ofport` and `error` columns
/// (OVS `vswitchd/vswitch.xml`, Interface table). A client cannot learn it any other way:
/// OVSDB accepts any row, and ovs-vswitchd reports a refusal only in these columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterfaceState {
    /// ovs-vswitchd opened it and gave it this OpenFlow port. `warning` is a non-empty
    /// `error` it set anyway (a patch port whose peer does not exist yet, for one): the
    /// port exists but may not forward until that is fixed.
    Open {
        /// The OpenFlow port number (65534 for a bridge's local port).
        ofport: i64,
        /// OVS's own text, when it set one.
        warning: Option<String>,
    },
    /// ovs-vswitchd tried and could not add it: `ofport` is -1 and `error` says why
    /// (`could not open network device X (No such device)`); `None` when OVS gave no text.
    Refused {
        /// OVS's own text.
        error: Option<String>,
    },
    /// No `ofport` although ovs-vswitchd has applied the current configuration: it never
    /// tried the interface, because the bridge it belongs to was not created (its datapath
    /// could not be opened, e.g. the kernel datapath without the openvswitch module).
    /// OVS writes nothing into the row then; the reason is only in ovs-vswitchd's log.
    NotCreated,
    /// No `ofport` yet and ovs-vswitchd has not caught up: nothing can be said.
    Pending,
}

impl InterfaceState {
    /// True when ovs-vswitchd will not run the interface as configured.
    pub fn is_failed(&self) -> bool {
        matches!(self, Self::Refused { .. } | Self::NotCreated)
    }

    /// OVS's own error text for the interface, refused or open with a warning.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Open { warning: e, .. } | Self::Refused { error: e } => e.as_deref(),
            Self::NotCreated | Self::Pending => None,
        }
    }
}

impl Interface {
    /// The interface's state; `caught_up` is [`OpenVswitch::caught_up`] of the same read,
    /// which tells a row ovs-vswitchd skipped from one it has not reached yet.
    pub fn state(&self, caught_up: bool) -> InterfaceState {
        let error = self.error.clone().filter(|e| !e.is_empty());
        match self.ofport {
            Some(-1) => InterfaceState::Refused { error },
            Some(ofport) => InterfaceState::Open {
                ofport,
                warning: error,
            },
            None if caught_up => InterfaceState::NotCreated,
            None => InterfaceState::Pending,
        }
    }
}

/// Rows of the four tables at one instant, keyed by UUID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    tables: BTreeMap<String, BTreeMap<Uuid, Row>>,
}

impl Tables {
    /// Stores (or replaces) one row.
    pub(crate) fn insert(&mut self, table: &str, uuid: Uuid, row: Row) {
        self.tables
            .entry(table.to_owned())
            .or_default()
            .insert(uuid, row);
    }

    /// Stores the rows of a `select` that included `_uuid`.
    pub(crate) fn insert_selected(&mut self, table: &str, rows: Vec<Row>) {
        for mut row in rows {
            if let Some(uuid) = row.remove("_uuid").as_ref().and_then(Uuid::from_json) {
                self.insert(table, uuid, row);
            }
        }
    }

    /// Applies a monitor `<table-updates>` object (RFC 7047 §4.1.6): a row-update without
    /// `new` deletes the row, otherwise the columns in `new` replace the cached ones.
    pub(crate) fn apply_updates(&mut self, updates: &Value) -> Result<(), String> {
        let tables = updates
            .as_object()
            .ok_or_else(|| format!("table-updates is not an object: {updates}"))?;
        for (table, rows) in tables {
            let rows = rows
                .as_object()
                .ok_or_else(|| format!("updates of {table} are not an object"))?;
            let cached = self.tables.entry(table.clone()).or_default();
            for (uuid, change) in rows {
                let uuid = Uuid::parse(uuid).ok_or_else(|| format!("bad row uuid {uuid:?}"))?;
                match change.get("new").and_then(Value::as_object) {
                    None => {
                        cached.remove(&uuid);
                    }
                    Some(new) => {
                        let row = cached.entry(uuid).or_default();
                        for (column, value) in new {
                            row.insert(column.clone(), value.clone());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Rows of one table.
    pub fn rows(&self, table: &str) -> impl Iterator<Item = (&Uuid, &Row)> {
        self.tables.get(table).into_iter().flatten()
    }

    fn row(&self, table: &str, uuid: &Uuid) -> Option<&Row> {
        self.tables.get(table).and_then(|rows| rows.get(uuid))
    }

    /// The root row, if the database has been initialised.
    pub fn open_vswitch(&self) -> Option<OpenVswitch> {
        let (uuid, row) = self.rows(OPEN_VSWITCH).next()?;
        Some(OpenVswitch {
            uuid: uuid.clone(),
            other_config: str_map(row.get("other_config")),
            external_ids: str_map(row.get("external_ids")),
            next_cfg: opt_int(row.get("next_cfg")).unwrap_or(0),
            cur_cfg: opt_int(row.get("cur_cfg")).unwrap_or(0),
            ovs_version: opt_string(row.get("ovs_version")),
            db_version: opt_string(row.get("db_version")),
            datapath_types: string_set(row.get("datapath_types")),
            iface_types: string_set(row.get("iface_types")),
        })
    }

    /// Every bridge with its ports and interfaces, sorted by name.
    pub fn bridges(&self) -> Vec<Bridge> {
        let mut bridges: Vec<Bridge> = self
            .rows(BRIDGE)
            .map(|(uuid, row)| self.bridge_from(uuid, row))
            .collect();
        bridges.sort_by(|a, b| a.name.cmp(&b.name));
        bridges
    }

    /// The bridge called `name`.
    pub fn bridge(&self, name: &str) -> Option<Bridge> {
        self.rows(BRIDGE)
            .find(|(_, row)| row.get("name").and_then(Value::as_str) == Some(name))
            .map(|(uuid, row)| self.bridge_from(uuid, row))
    }

    fn bridge_from(&self, uuid: &Uuid, row: &Row) -> Bridge {
        let mut ports: Vec<Port> = uuid_set(row.get("ports"))
            .iter()
            .filter_map(|p| self.row(PORT, p).map(|r| self.port_from(p, r)))
            .collect();
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        Bridge {
            uuid: uuid.clone(),
            name: opt_string(row.get("name")).unwrap_or_default(),
            datapath_type: opt_string(row.get("datapath_type")).unwrap_or_default(),
            fail_mode: opt_string(row.get("fail_mode")),
            ports,
            other_config: str_map(row.get("other_config")),
            external_ids: str_map(row.get("external_ids")),
        }
    }

    fn port_from(&self, uuid: &Uuid, row: &Row) -> Port {
        let mut interfaces: Vec<Interface> = uuid_set(row.get("interfaces"))
            .iter()
            .filter_map(|i| self.row(INTERFACE, i).map(|r| interface_from(i, r)))
            .collect();
        interfaces.sort_by(|a, b| a.name.cmp(&b.name));
        Port {
            uuid: uuid.clone(),
            name: opt_string(row.get("name")).unwrap_or_default(),
            interfaces,
            tag: opt_int(row.get("tag")),
            other_config: str_map(row.get("other_config")),
            external_ids: str_map(row.get("external_ids")),
        }
    }
}

fn interface_from(uuid: &Uuid, row: &Row) -> Interface {
    Interface {
        uuid: uuid.clone(),
        name: opt_string(row.get("name")).unwrap_or_default(),
        kind: opt_string(row.get("type")).unwrap_or_default(),
        options: str_map(row.get("options")),
        ofport: opt_int(row.get("ofport")),
        ifindex: opt_int(row.get("ifindex")),
        mtu: opt_int(row.get("mtu")),
        mac_in_use: opt_string(row.get("mac_in_use")),
        admin_state: opt_string(row.get("admin_state")),
        link_state: opt_string(row.get("link_state")),
        error: opt_string(row.get("error")),
        other_config: str_map(row.get("other_config")),
        external_ids: str_map(row.get("external_ids")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const OVS: &str = "dec1295d-6c8c-4825-9e79-5040ab3740c9";
    const BR: &str = "5c19c029-05d9-4884-a54f-c85832b679e6";
    const PORT_U: &str = "1f7c7163-6461-4ebe-b229-0174553a1050";
    const IFACE: &str = "2a7c7163-6461-4ebe-b229-0174553a1051";

    /// A monitor reply captured from ovsdb-server 3.1 (columns trimmed), then updates.
    fn initial() -> Value {
        json!({
            "Open_vSwitch": {OVS: {"new": {"other_config": ["map", []], "cur_cfg": 1,
                "next_cfg": 1, "bridges": ["uuid", BR], "ovs_version": "3.1.0"}}},
            "Bridge": {BR: {"new": {"name": "brx", "ports": ["uuid", PORT_U],
                "datapath_type": "netdev", "fail_mode": ["set", []]}}},
            "Port": {PORT_U: {"new": {"name": "brx", "interfaces": ["uuid", IFACE],
                "tag": ["set", []]}}},
            "Interface": {IFACE: {"new": {"name": "brx", "type": "internal",
                "ofport": 65534, "admin_state": "up", "link_state": "up",
                "options": ["map", []], "error": ["set", []]}}},
        })
    }

    #[test]
    fn builds_bridges_from_monitor_rows() {
        let mut t = Tables::default();
        t.apply_updates(&initial()).expect("valid");
        let bridges = t.bridges();
        assert_eq!(bridges.len(), 1);
        let br = &bridges[0];
        assert_eq!(
            (br.name.as_str(), br.datapath_type.as_str()),
            ("brx", "netdev")
        );
        assert_eq!(br.fail_mode, None);
        let iface = &br.port("brx").expect("local port").interfaces[0];
        assert_eq!(iface.kind, "internal");
        assert_eq!(iface.ofport, Some(65534));
        assert_eq!(iface.link_state.as_deref(), Some("up"));
        assert_eq!(iface.error, None);
        let root = t.open_vswitch().expect("root row");
        assert_eq!((root.next_cfg, root.cur_cfg), (1, 1));
        assert_eq!(root.ovs_version.as_deref(), Some("3.1.0"));
    }

    /// Interface rows as ovsdb-server 3.1 sent them after ovs-vswitchd (userspace
    /// datapath only) applied: `nodev0` a system port whose device does not exist,
    /// `pz` a patch port whose peer does not exist, `br1` the local port of a bridge of
    /// datapath type `system`, which could not be created, `brx` a working local port.
    fn states(caught_up: bool) -> Vec<(String, InterfaceState)> {
        let iface = |row: Value| {
            let row = row.as_object().cloned().expect("object");
            interface_from(&Uuid::parse(IFACE).expect("uuid"), &row)
        };
        [
            json!({"name": "nodev0", "type": "", "ofport": -1,
                "error": "could not open network device nodev0 (No such device)"}),
            json!({"name": "pz", "type": "patch", "ofport": 1,
                "error": "No usable peer 'nopeer' exists in 'netdev' datapath."}),
            json!({"name": "br1", "type": "internal", "ofport": ["set", []],
                "error": ["set", []]}),
            json!({"name": "brx", "type": "internal", "ofport": 65534, "error": ["set", []]}),
            json!({"name": "odd", "type": "", "ofport": ["set", [-1]], "error": ""}),
        ]
        .into_iter()
        .map(|row| {
            let i = iface(row);
            (i.name.clone(), i.state(caught_up))
        })
        .collect()
    }

    #[test]
    fn ofport_and_error_columns_say_what_vswitchd_did() {
        let applied = states(true);
        assert_eq!(
            applied[0].1,
            InterfaceState::Refused {
                error: Some("could not open network device nodev0 (No such device)".to_owned())
            }
        );
        assert!(applied[0].1.is_failed());
        assert_eq!(
            applied[0].1.error(),
            Some("could not open network device nodev0 (No such device)")
        );
        // An error beside a real OpenFlow port is a warning, not a refusal.
        assert!(
            matches!(&applied[1].1, InterfaceState::Open { ofport: 1, warning: Some(w) }
                if w.starts_with("No usable peer")),
            "{:?}",
            applied[1]
        );
        assert!(!applied[1].1.is_failed());
        assert_eq!(applied[2].1, InterfaceState::NotCreated);
        assert!(applied[2].1.is_failed());
        assert_eq!(applied[2].1.error(), None);
        assert_eq!(
            applied[3].1,
            InterfaceState::Open {
                ofport: 65534,
                warning: None
            }
        );
        // A 1-element set is the bare value; an empty error string is no text.
        assert_eq!(applied[4].1, InterfaceState::Refused { error: None });

        // Before ovs-vswitchd caught up, a missing ofport says nothing; -1 still does.
        let pending = states(false);
        assert_eq!(pending[2].1, InterfaceState::Pending);
        assert!(!pending[2].1.is_failed());
        assert!(pending[0].1.is_failed());
    }

    #[test]
    fn local_interface_and_caught_up() {
        let mut t = Tables::default();
        t.apply_updates(&initial()).expect("valid");
        let br = t.bridge("brx").expect("bridge");
        assert_eq!(
            br.local_interface().map(|i| i.kind.as_str()),
            Some("internal")
        );
        let root = t.open_vswitch().expect("root");
        assert!(root.caught_up());
        t.apply_updates(&json!({"Open_vSwitch": {OVS: {"new": {"next_cfg": 2}}}}))
            .expect("valid");
        assert!(!t.open_vswitch().expect("root").caught_up());
    }

    #[test]
    fn modify_merges_and_delete_removes() {
        let mut t = Tables::default();
        t.apply_updates(&initial()).expect("valid");
        t.apply_updates(&json!({"Open_vSwitch": {OVS: {
            "new": {"other_config": ["map", [["max-idle", "5000"]]], "next_cfg": 2},
            "old": {"other_config": ["map", []], "next_cfg": 1}}}}))
            .expect("valid");
        let root = t.open_vswitch().expect("root row");
        assert_eq!(
            root.other_config.get("max-idle").map(String::as_str),
            Some("5000")
        );
        assert_eq!(
            (root.next_cfg, root.cur_cfg),
            (2, 1),
            "untouched column kept"
        );
        t.apply_updates(&json!({"Bridge": {BR: {"old": {"name": "brx"}}}}))
            .expect("valid");
        assert!(t.bridges().is_empty());
        assert!(t.apply_updates(&json!({"Bridge": {"nope": {}}})).is_err());
    }
}
