//! Bridges and ports through OVSDB: the Switch calls that change the database. Each change
//! waits until ovs-vswitchd applied it (`cur_cfg` reaches the change's `next_cfg`), then
//! reads the bridge's or port's interface back: one ovs-vswitchd refused is removed again
//! (by `dpu_ovs`, in one transaction) and the call fails with FAILED_PRECONDITION quoting
//! OVS's text. Otherwise it answers with the resource as OVSDB shows it afterwards. A dry
//! run reads the same state
//! and answers what the change would do, changing nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use dpu_ovs::ovsdb::{self, InterfaceType};
use dpu_proto::names::Collection;
use dpu_proto::v1;
use tonic::Status;

use super::convert::{bridge_to_wire, datapath_label, port_name, port_to_wire};
use super::status::from_ovsdb;
use crate::ovs::OvsClients;

/// What a request's `ApplyOptions` asks for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Apply {
    /// How long to wait for ovs-vswitchd; `None`: the client's default.
    pub(crate) timeout: Option<Duration>,
    /// Report, change nothing.
    pub(crate) dry_run: bool,
}

/// A bridge to create.
#[derive(Debug)]
pub(crate) struct NewBridge<'a> {
    pub(crate) name: &'a str,
    pub(crate) datapath_type: &'a str,
}

/// A port to create.
#[derive(Debug)]
pub(crate) struct NewPort<'a> {
    pub(crate) bridge: &'a str,
    pub(crate) name: &'a str,
    pub(crate) kind: InterfaceType,
    pub(crate) options: &'a BTreeMap<String, String>,
}

/// Bridges as read in one snapshot, with whether ovs-vswitchd had caught up then.
#[derive(Debug)]
pub(crate) struct Observed<T> {
    /// What was read.
    pub(crate) value: T,
    /// `Open_vSwitch.cur_cfg >= next_cfg` in the same read: the interfaces' `ofport` and
    /// `error` describe the current configuration.
    pub(crate) caught_up: bool,
}

/// Every bridge, from one snapshot.
pub(crate) async fn list_bridges(ovs: &OvsClients) -> Result<Observed<Vec<ovsdb::Bridge>>, Status> {
    let tables = ovs.ovsdb.snapshot().await.map_err(|e| from_ovsdb(&e))?;
    Ok(Observed {
        value: tables.bridges(),
        caught_up: tables.open_vswitch().is_some_and(|r| r.caught_up()),
    })
}

/// The bridge called `name`, or `NOT_FOUND`.
pub(crate) async fn get_bridge(
    ovs: &OvsClients,
    name: &str,
) -> Result<Observed<ovsdb::Bridge>, Status> {
    let tables = ovs.ovsdb.snapshot().await.map_err(|e| from_ovsdb(&e))?;
    let bridge = tables.bridge(name).ok_or_else(|| bridge_not_found(name))?;
    Ok(Observed {
        value: bridge,
        caught_up: tables.open_vswitch().is_some_and(|r| r.caught_up()),
    })
}

/// The status of a bridge or port ovs-vswitchd did not create. FAILED_PRECONDITION, not
/// UNAVAILABLE: retrying the same call cannot help until the machine changes (a kernel
/// module loaded, a device created, another datapath type chosen), which is what
/// FAILED_PRECONDITION tells a client; UNAVAILABLE would invite blind retries. For a
/// bridge whose datapath could not be opened OVSDB holds no text, so ovs-vswitchd is asked
/// to open that datapath again and its answer is quoted.
async fn not_created(ovs: &OvsClients, err: &ovsdb::Error) -> Status {
    let status = from_ovsdb(err);
    let ovsdb::Error::NotCreated {
        kind: "bridge",
        error: None,
        datapath_type,
        ..
    } = err
    else {
        return status;
    };
    match ovs.vswitchd.datapath_open_error(datapath_type).await {
        Ok(Some(text)) => Status::new(
            status.code(),
            format!(
                "{}; `dpctl/show {}` answers \"{}\"{}",
                status.message(),
                dpu_ovs::unixctl::datapath_backer(datapath_label(datapath_type)),
                text.trim_end(),
                if datapath_label(datapath_type) == "system" {
                    " (the kernel datapath needs the openvswitch module; datapath_type \
                     netdev is the userspace one)"
                } else {
                    ""
                }
            ),
        ),
        Ok(None) | Err(_) => status,
    }
}

pub(crate) async fn create_bridge(
    ovs: &OvsClients,
    new: &NewBridge<'_>,
    apply: Apply,
) -> Result<v1::Bridge, Status> {
    if apply.dry_run {
        return match find_bridge(ovs, new.name).await? {
            Some(existing) => {
                let normalize = |dp: &str| if dp == "system" { "" } else { dp }.to_owned();
                if normalize(&existing.datapath_type) == normalize(new.datapath_type) {
                    Ok(bridge_to_wire(&existing, false))
                } else {
                    Err(Status::already_exists(format!(
                        "ovsdb: bridge {} exists with datapath_type {:?}, requested {:?}",
                        new.name, existing.datapath_type, new.datapath_type
                    )))
                }
            }
            None => Ok(v1::Bridge {
                name: Collection::Bridges.format(new.name),
                bridge: new.name.to_owned(),
                datapath_type: new.datapath_type.to_owned(),
                ports: Vec::new(),
                uuid: String::new(),
                error: String::new(),
            }),
        };
    }
    let mut add = ovs
        .ovsdb
        .bridges()
        .add(new.name)
        .datapath_type(new.datapath_type);
    if let Some(timeout) = apply.timeout {
        add = add.apply_timeout(timeout);
    }
    if let Err(e) = add.execute().await {
        return Err(not_created(ovs, &e).await);
    }
    let read = get_bridge(ovs, new.name).await?;
    Ok(bridge_to_wire(&read.value, read.caught_up))
}

pub(crate) async fn delete_bridge(
    ovs: &OvsClients,
    name: &str,
    allow_missing: bool,
    apply: Apply,
) -> Result<v1::DeleteResponse, Status> {
    if apply.dry_run {
        let exists = find_bridge(ovs, name).await?.is_some();
        return missing_ok(exists, allow_missing, || bridge_not_found(name));
    }
    let mut del = ovs.ovsdb.bridges().del(name);
    if allow_missing {
        del = del.if_exists();
    }
    if let Some(timeout) = apply.timeout {
        del = del.apply_timeout(timeout);
    }
    let applied = del.execute().await.map_err(|e| from_ovsdb(&e))?;
    Ok(v1::DeleteResponse {
        deleted: applied.changed,
    })
}

pub(crate) async fn create_port(
    ovs: &OvsClients,
    new: &NewPort<'_>,
    apply: Apply,
) -> Result<v1::Port, Status> {
    if apply.dry_run {
        let bridge = get_bridge(ovs, new.bridge).await?.value;
        return Ok(match bridge.port(new.name) {
            Some(existing) => port_to_wire(new.bridge, existing),
            None => v1::Port {
                name: port_name(new.bridge, new.name),
                port: new.name.to_owned(),
                interface_type: new.kind.as_str().to_owned(),
                ofport: -1,
                options: new.options.clone().into_iter().collect(),
                ..v1::Port::default()
            },
        });
    }
    let mut add = ovs
        .ovsdb
        .ports()
        .add(new.bridge, new.name)
        .interface_type(new.kind.clone());
    for (key, value) in new.options {
        add = add.option(key, value);
    }
    if let Some(timeout) = apply.timeout {
        add = add.apply_timeout(timeout);
    }
    add.execute().await.map_err(|e| from_ovsdb(&e))?;
    let bridge = get_bridge(ovs, new.bridge).await?.value;
    bridge
        .port(new.name)
        .map(|p| port_to_wire(new.bridge, p))
        .ok_or_else(|| {
            Status::not_found(format!(
                "ovsdb: port {} was added to bridge {} but is gone again",
                new.name, new.bridge
            ))
        })
}

pub(crate) async fn delete_port(
    ovs: &OvsClients,
    bridge: &str,
    port: &str,
    allow_missing: bool,
    apply: Apply,
) -> Result<v1::DeleteResponse, Status> {
    if apply.dry_run {
        let exists = match find_bridge(ovs, bridge).await? {
            Some(b) => b.port(port).is_some(),
            None if allow_missing => false,
            None => return Err(bridge_not_found(bridge)),
        };
        return missing_ok(exists, allow_missing, || {
            Status::not_found(format!("ovsdb: port {port} not found on bridge {bridge}"))
        });
    }
    let mut del = ovs.ovsdb.ports().del(bridge, port);
    if allow_missing {
        del = del.if_exists();
    }
    if let Some(timeout) = apply.timeout {
        del = del.apply_timeout(timeout);
    }
    match del.execute().await {
        Ok(applied) => Ok(v1::DeleteResponse {
            deleted: applied.changed,
        }),
        // With allow_missing, a missing bridge means the port is missing too.
        Err(ovsdb::Error::NotFound { kind: "bridge", .. }) if allow_missing => {
            Ok(v1::DeleteResponse { deleted: false })
        }
        Err(e) => Err(from_ovsdb(&e)),
    }
}

async fn find_bridge(ovs: &OvsClients, name: &str) -> Result<Option<ovsdb::Bridge>, Status> {
    match ovs.ovsdb.bridges().get(name).await {
        Ok(bridge) => Ok(Some(bridge)),
        Err(ovsdb::Error::NotFound { kind: "bridge", .. }) => Ok(None),
        Err(e) => Err(from_ovsdb(&e)),
    }
}

/// The answer of a dry-run delete.
fn missing_ok(
    exists: bool,
    allow_missing: bool,
    not_found: impl FnOnce() -> Status,
) -> Result<v1::DeleteResponse, Status> {
    if exists || allow_missing {
        Ok(v1::DeleteResponse { deleted: exists })
    } else {
        Err(not_found())
    }
}

fn bridge_not_found(name: &str) -> Status {
    Status::not_found(format!("ovsdb: bridge {name} not found"))
}
