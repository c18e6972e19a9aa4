//! `get_schema` (RFC 7047 §4.1.2) and the check that the database is an Open_vSwitch
//! database with every table and column this client reads and writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use super::database::DATABASE;
use super::model::COLUMNS;
use super::Error;

/// The oldest Open_vSwitch schema accepted; the major version must match exactly (a major
/// bump means incompatible changes). Debian's OVS 3.1 ships 8.3.1, upstream HEAD 8.8.0
/// (ovs-netlink.md §2.2); the columns used are checked one by one on top of this.
pub const MIN_SCHEMA: SchemaVersion = SchemaVersion {
    major: 8,
    minor: 0,
    patch: 0,
};

/// A schema's `version` (`major.minor.patch`; a major change breaks clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SchemaVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
    /// Fixes.
    pub patch: u32,
}

impl SchemaVersion {
    /// Parses `8.3.1`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.').map(|p| p.parse::<u32>().ok());
        let version = Self {
            major: parts.next()??,
            minor: parts.next()??,
            patch: parts.next()??,
        };
        parts.next().is_none().then_some(version)
    }
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The parts of a database schema callers look at: its identity and which columns exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// The database name (`Open_vSwitch`).
    pub name: String,
    /// The schema version.
    pub version: SchemaVersion,
    /// Table name → column names (without the implicit `_uuid`/`_version`).
    pub tables: BTreeMap<String, BTreeSet<String>>,
}

impl Schema {
    /// Reads a `get_schema` result.
    pub(crate) fn from_json(value: &Value) -> Result<Self, Error> {
        let bad = |detail: String| Error::malformed("get_schema", detail);
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no name".to_owned()))?;
        let version_text = value
            .get("version")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no version".to_owned()))?;
        let version = SchemaVersion::parse(version_text)
            .ok_or_else(|| bad(format!("bad version {version_text:?}")))?;
        let tables = value
            .get("tables")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("no tables".to_owned()))?
            .iter()
            .map(|(table, def)| {
                let columns = def
                    .get("columns")
                    .and_then(Value::as_object)
                    .map(|c| c.keys().cloned().collect())
                    .unwrap_or_default();
                (table.clone(), columns)
            })
            .collect();
        Ok(Self {
            name: name.to_owned(),
            version,
            tables,
        })
    }

    /// Checks that this is an Open_vSwitch schema of a supported major version with every
    /// column this client uses, so a mismatch is one clear error at connect time instead of
    /// `unknown column` failures later.
    pub fn check_open_vswitch(&self) -> Result<(), Error> {
        if self.name != DATABASE {
            return Err(Error::Schema {
                detail: format!("database is {:?}, expected {:?}", self.name, DATABASE),
            });
        }
        if self.version.major != MIN_SCHEMA.major || self.version < MIN_SCHEMA {
            return Err(Error::Schema {
                detail: format!(
                    "Open_vSwitch schema {} is not supported (need {}.x, at least {MIN_SCHEMA})",
                    self.version, MIN_SCHEMA.major
                ),
            });
        }
        let missing: Vec<String> = COLUMNS
            .iter()
            .flat_map(|(table, columns)| columns.iter().map(move |c| (*table, *c)))
            .filter(|(table, column)| {
                !self
                    .tables
                    .get(*table)
                    .is_some_and(|cols| cols.contains(*column))
            })
            .map(|(table, column)| format!("{table}.{column}"))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::Schema {
                detail: format!(
                    "Open_vSwitch schema {} lacks {}",
                    self.version,
                    missing.join(", ")
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(version: &str, drop_column: Option<&str>) -> Value {
        let mut tables = serde_json::Map::new();
        for (table, columns) in COLUMNS {
            let cols: serde_json::Map<String, Value> = columns
                .iter()
                .filter(|c| Some(**c) != drop_column)
                .map(|c| ((*c).to_owned(), json!({"type": "string"})))
                .collect();
            tables.insert(table.to_owned(), json!({"columns": cols}));
        }
        json!({"name": "Open_vSwitch", "version": version, "tables": tables})
    }

    #[test]
    fn accepts_debian_and_bluefield_versions() {
        for v in ["8.3.1", "8.3.0", "8.8.0"] {
            let s = Schema::from_json(&schema(v, None)).expect("parses");
            s.check_open_vswitch().expect(v);
        }
    }

    #[test]
    fn refuses_other_majors_and_missing_columns() {
        let s = Schema::from_json(&schema("9.0.0", None)).expect("parses");
        assert!(matches!(s.check_open_vswitch(), Err(Error::Schema { .. })));
        let s = Schema::from_json(&schema("8.3.1", Some("link_state"))).expect("parses");
        let err = s.check_open_vswitch().expect_err("column missing");
        assert!(err.to_string().contains("Interface.link_state"), "{err}");
        assert!(Schema::from_json(&json!({"name": "x"})).is_err());
        assert_eq!(SchemaVersion::parse("8.3"), None);
        assert_eq!(SchemaVersion::parse("8.3.1.2"), None);
    }
}
