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
