//! The OVS part of a capture (`dpuctl capture --ovs-rundir DIR`, docs/hardware.md): the
//! one-shot reads the agent does, through the same [`Ovsdb`] and [`Unixctl`] readers, each
//! recording into a `dpu_jsonrpc::Recorder` in capture mode, and the rules that keep a
//! capture read-only.
//!
//! Read-only is checked before anything is sent: OVSDB methods off
//! [`READ_ONLY_OVSDB_METHODS`] are refused, and a `transact` is refused unless every
//! operation is a `select` ([`ovsdb_read_only`]); ovs-vswitchd commands off
//! [`READ_ONLY_VSWITCHD_COMMANDS`] are refused. OVSDB's `monitor` is not asked: its
//! updates stream after the reply, which a request→answer transcript cannot hold; the
//! agent's one-shot listings read the same rows through a `select` transaction.

pub use dpu_jsonrpc::{to_jsonl, Exchange, Recorder};
use serde_json::Value;

use crate::flow::DumpType;
use crate::ovsdb::{self, Ovsdb, Tables};
use crate::unixctl::{self, Unixctl};

/// The OVSDB methods a capture may send: listings, the schema, a liveness echo and
/// `transact` (held to `select` by [`ovsdb_read_only`]).
pub const READ_ONLY_OVSDB_METHODS: [&str; 4] = ["list_dbs", "get_schema", "transact", "echo"];

/// The ovs-vswitchd commands a capture may send: each only prints state (`dpctl/show
/// TYPE@ovs-TYPE` opens a datapath handle to report on it, as `ovs-appctl dpctl/show`
/// does; `dpctl/dump-flows` only dumps, `dpctl/del-flows` is another command).
pub const READ_ONLY_VSWITCHD_COMMANDS: [&str; 7] = [
    "version",
    "list-commands",
    "dpif/show",
    "dpctl/dump-dps",
    "dpctl/show",
    "dpctl/dump-flows",
    "dpctl/offload-stats-show",
];

/// The flow-dump types recorded per datapath: what the agent's ListFlows asks for each
/// of its dump types (`all` is sent without `type=`).
pub const DUMP_TYPES: [DumpType; 3] = [DumpType::All, DumpType::Offloaded, DumpType::NonOffloaded];

/// `Ok` when an OVSDB call of `method` with `params` changes nothing: anything but
/// `transact` passes (the method allow-list is the recorder's), a `transact` only when
/// every operation after the database name is an object whose `op` is `select`.
pub fn ovsdb_read_only(method: &str, params: &Value) -> Result<(), String> {
    if method != "transact" {
        return Ok(());
    }
    let Some(items) = params.as_array() else {
        return Err(format!("transact params are not a list: {params}"));
    };
    for (index, operation) in items.iter().enumerate().skip(1) {
        let op = operation.get("op").and_then(Value::as_str);
        if op != Some("select") {
            let table = operation
                .get("table")
                .and_then(Value::as_str)
                .unwrap_or("-");
            return Err(format!(
                "operation {index} is {} on table {table}, only select may be sent",
                op.map_or_else(|| operation.to_string(), |op| format!("{op:?}"))
            ));
        }
    }
    Ok(())
}

/// A recorder in capture mode for ovsdb-server: [`READ_ONLY_OVSDB_METHODS`], transactions
/// of `select`s only.
pub fn ovsdb_recorder() -> Recorder {
    Recorder::allowing(&READ_ONLY_OVSDB_METHODS).checking_params(ovsdb_read_only)
}

/// A recorder in capture mode for ovs-vswitchd's control socket:
/// [`READ_ONLY_VSWITCHD_COMMANDS`] only.
pub fn vswitchd_recorder() -> Recorder {
    Recorder::allowing(&READ_ONLY_VSWITCHD_COMMANDS)
}

/// What one reading read, as the readers returned it: a replay read through the same
/// readers must give the same (bar what moves with time, e.g. a flow's `used:`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OvsReading {
    /// `list_dbs`.
    pub databases: Option<Vec<String>>,
    /// The four tables the agent lists bridges, ports and `other_config` from.
    pub tables: Option<Tables>,
    /// `version`.
    pub version: Option<String>,
    /// `dpctl/dump-dps`, one datapath per line.
    pub datapaths: Vec<String>,
    /// `dpctl/dump-flows -m --names [type=T] DP` text, per (datapath, dump type), as the
    /// agent asks it.
    pub flow_dumps: Vec<(String, DumpType, String)>,
    /// `dpif/show` text.
    pub dpif_show: Option<String>,
    /// Reads that failed with the peer's answer (recorded as answered), in order.
    pub failed: Vec<String>,
}

/// Why a reading stopped: a daemon could not be reached at all, or a call was refused as
/// not read-only (which the fixed list of reads here never does).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An OVSDB call failed in transport or was refused by the capture rules (boxed: the
    /// error is large and this path is rare).
    #[error("ovsdb: a read of the capture failed")]
    Ovsdb(#[source] Box<ovsdb::Error>),
    /// A control-socket call failed in transport or was refused by the capture rules.
    #[error("ovs-vswitchd: a read of the capture failed")]
    Vswitchd(#[source] Box<unixctl::Error>),
}

/// One reading: every one-shot read the agent does, in a fixed order (so a replay is
/// asked the same): `list_dbs`, `get_schema`, the four-table `select`, then `version`,
/// `list-commands`, `dpctl/dump-dps`, each datapath's flow dumps ([`DUMP_TYPES`]),
/// `dpif/show`, `dpctl/show`, `dpctl/offload-stats-show` and `dpctl/show TYPE@ovs-TYPE`
/// for each bridge datapath type. A daemon's refusal is kept (it is in the transcript
/// as answered); an unreachable daemon ends the reading.
pub async fn read_all(ovsdb: &Ovsdb, vswitchd: &Unixctl) -> Result<OvsReading, ReadError> {
    let mut reading = OvsReading::default();
    reading.databases = keep_db(&mut reading.failed, "list_dbs", ovsdb.list_dbs().await)?;
    keep_db(
        &mut reading.failed,
        "get_schema",
        ovsdb.check_schema().await,
    )?;
    reading.tables = keep_db(&mut reading.failed, "select", ovsdb.snapshot().await)?;

    let failed = &mut reading.failed;
    reading.version = keep_ctl(failed, "version", vswitchd.version().await)?;
    keep_ctl(failed, "list-commands", vswitchd.list_commands().await)?;
    let dps = keep_ctl(
        failed,
        "dpctl/dump-dps",
        vswitchd.command("dpctl/dump-dps").execute().await,
    )?;
    reading.datapaths = dps
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    for datapath in reading.datapaths.clone() {
        for dump_type in DUMP_TYPES {
            let text = keep_ctl(
                &mut reading.failed,
                "dpctl/dump-flows",
                dump_flows(vswitchd, &datapath, dump_type).await,
            )?;
            if let Some(text) = text {
                reading.flow_dumps.push((datapath.clone(), dump_type, text));
            }
        }
    }
    let failed = &mut reading.failed;
    reading.dpif_show = keep_ctl(failed, "dpif/show", vswitchd.dpif_show().await)?;
    keep_ctl(failed, "dpctl/show", vswitchd.show_datapaths().await)?;
    let offload = vswitchd.command("dpctl/offload-stats-show").execute().await;
    keep_ctl(failed, "dpctl/offload-stats-show", offload)?;
    let mut kinds: Vec<String> = reading
        .tables
        .as_ref()
        .map(|t| t.bridges().into_iter().map(|b| b.datapath_type).collect())
        .unwrap_or_default();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let open = vswitchd.datapath_open_error(&kind).await;
        keep_ctl(&mut reading.failed, "dpctl/show TYPE@ovs-TYPE", open)?;
    }
    Ok(reading)
}

/// `dpctl/dump-flows -m --names [type=T] DP`, built as the agent's ListFlows builds it.
pub async fn dump_flows(
    vswitchd: &Unixctl,
    datapath: &str,
    dump_type: DumpType,
) -> Result<String, unixctl::Error> {
    let mut dump = vswitchd.dump_flows().more().names(true).datapath(datapath);
    if dump_type != DumpType::All {
        dump = dump.flow_type(dump_type);
    }
    dump.execute().await
}

fn keep_db<T>(
    failed: &mut Vec<String>,
    what: &str,
    result: Result<T, ovsdb::Error>,
) -> Result<Option<T>, ReadError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is_transient() || refused_by_capture_db(&e) => {
            Err(ReadError::Ovsdb(Box::new(e)))
        }
        Err(e) => {
            failed.push(format!("{what}: {e}"));
            Ok(None)
        }
    }
}

fn keep_ctl<T>(
    failed: &mut Vec<String>,
    what: &str,
    result: Result<T, unixctl::Error>,
) -> Result<Option<T>, ReadError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e @ (unixctl::Error::Command { .. } | unixctl::Error::Malformed { .. })) => {
            failed.push(format!("{what}: {e}"));
            Ok(None)
        }
        Err(e) => Err(ReadError::Vswitchd(Box::new(e))),
    }
}

/// True when the OVSDB error is the capture recorder's refusal (never a peer's answer).
fn refused_by_capture_db(error: &ovsdb::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(rpc) = e.downcast_ref::<dpu_jsonrpc::Error>() {
            return matches!(
                rpc,
                dpu_jsonrpc::Error::NotAllowed { .. } | dpu_jsonrpc::Error::NotReadOnly { .. }
            );
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_transaction_of_selects_passes_and_any_other_operation_is_named() {
        let select = json!({"op": "select", "table": "Bridge", "where": []});
        assert_eq!(
            ovsdb_read_only("transact", &json!(["Open_vSwitch", select, select])),
            Ok(())
        );
        for (op, table) in [
            ("insert", "Bridge"),
            ("mutate", "Open_vSwitch"),
            ("delete", "Port"),
            ("update", "Interface"),
            ("wait", "Bridge"),
            ("commit", "-"),
        ] {
            let write = json!({"op": op, "table": table});
            let reason =
                ovsdb_read_only("transact", &json!(["Open_vSwitch", select, write])).expect_err(op);
            assert!(
                reason.contains(&format!("operation 2 is \"{op}\" on table {table}")),
                "{reason}"
            );
        }
        assert!(
            ovsdb_read_only("transact", &json!(["Open_vSwitch", {"table": "Bridge"}])).is_err()
        );
        assert!(ovsdb_read_only("transact", &json!({"op": "select"})).is_err());
        // Other methods are the allow-list's business.
        assert_eq!(ovsdb_read_only("list_dbs", &json!([])), Ok(()));
    }

    #[test]
    fn the_vswitchd_list_holds_no_command_that_changes_the_datapath() {
        for command in READ_ONLY_VSWITCHD_COMMANDS {
            for verb in [
                "add", "del", "mod", "set", "flush", "purge", "enable", "disable",
            ] {
                assert!(!command.contains(verb), "{command}");
            }
        }
    }
}
