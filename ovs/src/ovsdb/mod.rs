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
//! "stored" (skip with `no_wait()`). A bridge or port change then reads the interface back:
//! one ovs-vswitchd refused (`ofport` -1 and its `error`, or no `ofport` at all for a bridge
//! whose datapath could not be opened) is removed again and reported as
//! [`Error::NotCreated`] with OVS's own text, so success means "running". [`Ovsdb::monitor`] keeps a cache that follows the
//! database through `monitor` notifications and re-monitors after ovsdb-server restarts.

mod apply;
mod bridge;
mod config;
mod database;
mod datum;
mod error;
mod handle;
mod model;
mod monitor;
mod names;
mod port;
mod ready;
mod schema;
mod snapshot;
mod txn;

#[cfg(test)]
mod tests;

pub use apply::Applied;
pub use bridge::{AddBridge, BridgeHandle, DelBridge};
pub use config::{
    restart_note, ConfigChange, OtherConfigHandle, SetOtherConfig, UpdateOtherConfig,
};
pub use database::DATABASE;
pub use datum::{named_uuid, set, string_map, Row, Uuid};
pub use error::Error;
pub use handle::{Ovsdb, OvsdbOptions};
pub use model::{Bridge, Interface, InterfaceState, OpenVswitch, Port, Tables, COLUMNS};
pub use monitor::{CachedView, OvsdbCache};
pub use names::{validate_name, MAX_NAME_LEN};
pub use port::{AddPort, DelPort, InterfaceType, PortHandle};
pub use schema::{Schema, SchemaVersion, MIN_SCHEMA};
pub use txn::{Condition, Mutation, OpResult, Operation, Transaction};
