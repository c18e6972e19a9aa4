//! The database this client manages: its name, [`DATABASE`], and the error every change
//! returns when its root row is missing. A leaf so that the schema check and the change
//! builders can use both without importing `ovsdb/mod.rs`.

use super::error::Error;

/// The database this client manages.
pub const DATABASE: &str = "Open_vSwitch";

/// The error for a database without its root row (`ovs-vsctl init` never ran).
pub(super) fn not_initialized() -> Error {
    Error::NotFound {
        kind: "Open_vSwitch row",
        name: DATABASE.to_owned(),
        detail: Some("the database is not initialised (ovs-vsctl init)".to_owned()),
    }
}
