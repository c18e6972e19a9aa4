//! Everything an OVSDB call can fail with.

use std::time::Duration;

/// Why an OVSDB call failed. The agent maps these to gRPC codes: [`Error::Rpc`] with a
/// transient source is UNAVAILABLE, [`Error::NotFound`] NOT_FOUND, [`Error::Conflict`]
/// ALREADY_EXISTS, [`Error::InvalidName`]/[`Error::InvalidValue`] INVALID_ARGUMENT,
/// [`Error::NotApplied`] DEADLINE_EXCEEDED. Server refusals keep OVSDB's own `error` and
/// `details` text, so a user sees what ovsdb-server said, not our paraphrase.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database address is not one this client can use (only `unix:PATH` is).
    #[error("unsupported OVSDB address {address:?}: {reason}")]
    Address {
        /// The address as given.
        address: String,
        /// Why it is refused.
        reason: String,
    },
    /// The JSON-RPC call itself failed: ovsdb-server unreachable, connection lost, no reply
    /// in time, or a reply that broke the protocol.
    #[error("OVSDB {method} call failed")]
    Rpc {
        /// The OVSDB method (`transact`, `monitor`, ...).
        method: String,
        /// The transport error; [`dpu_jsonrpc::Error::is_transient`] says whether a retry
        /// may help.
        #[source]
        source: dpu_jsonrpc::Error,
    },
    /// ovsdb-server refused the whole request (e.g. `unknown database`).
    #[error("ovsdb-server refused {method}: {error}{}", suffix(.details))]
    Refused {
        /// The OVSDB method.
        method: String,
        /// OVSDB's `error` string.
        error: String,
        /// OVSDB's `details`, when it sent any.
        details: Option<String>,
    },
    /// One operation of a transaction failed; nothing of the transaction was committed.
    #[error("OVSDB transaction failed at operation {index} ({op}): {error}{}", suffix(.details))]
    Operation {
        /// 0-based position of the failed operation.
        index: usize,
        /// The operation's `op` (`insert`, `mutate`, `wait`, ...).
        op: String,
        /// OVSDB's `error` string, e.g. `constraint violation`.
        error: String,
        /// OVSDB's `details`.
        details: Option<String>,
    },
    /// Every operation succeeded but the commit failed (a constraint or referential
    /// integrity check); nothing was committed.
    #[error("OVSDB transaction failed to commit: {error}{}", suffix(.details))]
    Commit {
        /// OVSDB's `error` string, e.g. `referential integrity violation`.
        error: String,
        /// OVSDB's `details`.
        details: Option<String>,
    },
    /// The named bridge or port does not exist.
    #[error("{kind} {name} not found{}", suffix(.detail))]
    NotFound {
        /// What was looked for: `bridge`, `port`, `Open_vSwitch row`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// More context (e.g. the bridge the port is really on).
        detail: Option<String>,
    },
    /// The object exists with different settings, or its name is taken by another object;
    /// adding it again with the same settings is not an error.
    #[error("{kind} {name} conflicts with the existing configuration: {detail}")]
    Conflict {
        /// What was being added: `bridge` or `port`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// What exists already.
        detail: String,
    },
    /// A bridge, port or interface name that OVS or the kernel would refuse; checked before
    /// any transaction is sent.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        /// `bridge`, `port`, `interface` or `patch peer`.
        kind: &'static str,
        /// The name as given.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A value ovs-vswitchd would ignore or reject (e.g. `hw-offload=yes`); checked before
    /// any transaction is sent.
    #[error("invalid value {value:?} for {key}: {reason}")]
    InvalidValue {
        /// The setting (e.g. `other_config:max-idle`).
        key: String,
        /// The value as given.
        value: String,
        /// What is accepted.
        reason: String,
    },
    /// The database is not an Open_vSwitch database this client understands.
    #[error("unsupported OVSDB schema: {detail}")]
    Schema {
        /// What does not match.
        detail: String,
    },
    /// A reply that is valid JSON-RPC but not the shape RFC 7047 promises.
    #[error("malformed OVSDB reply to {method}: {detail}")]
    Malformed {
        /// The OVSDB method.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// The change was committed, but ovs-vswitchd did not report it applied (`cur_cfg`
    /// did not reach the change's `next_cfg`) before the deadline.
    #[error(
        "ovs-vswitchd did not apply configuration {next_cfg} within {after:?} (cur_cfg is {}); \
         is ovs-vswitchd running and connected to this database?",
        cur_cfg.map_or_else(|| "unknown".to_owned(), |c| c.to_string())
    )]
    NotApplied {
        /// The `next_cfg` the change was tagged with.
        next_cfg: i64,
        /// `cur_cfg` when the deadline passed, if it could be read.
        cur_cfg: Option<i64>,
        /// The deadline that passed.
        after: Duration,
    },
    /// The change was applied (`cur_cfg` caught up) but ovs-vswitchd did not create the
    /// bridge or port: its interface got `ofport` -1 (with OVS's reason in `error`), or,
    /// for a bridge whose datapath could not be opened, no `ofport` at all. What this
    /// request added was removed again in one transaction, so nothing is half-applied.
    #[error("{}", not_created_text(.kind, .name, .bridge, .datapath_type, .error.as_deref(), *.removed, .removal.is_some()))]
    NotCreated {
        /// `bridge` or `port`.
        kind: &'static str,
        /// The bridge's or port's name.
        name: String,
        /// The bridge it is (or would be) on; the same as `name` for a bridge.
        bridge: String,
        /// The bridge's `datapath_type` as stored (`""` is the kernel datapath, `system`).
        datapath_type: String,
        /// OVS's own text from the interface's `error` column; `None` when OVS wrote none
        /// (a bridge whose datapath failed: the reason is only in ovs-vswitchd's log).
        error: Option<String>,
        /// True when this request had added it and removed it again.
        removed: bool,
        /// Why removing it again failed, when it did (it is then still in OVSDB).
        #[source]
        removal: Option<Box<Error>>,
    },
    /// The monitor cache did not reach the awaited state in time.
    #[error("the OVSDB cache did not {what} within {after:?}")]
    CacheTimeout {
        /// What was awaited.
        what: String,
        /// The deadline.
        after: Duration,
    },
}

impl Error {
    /// True when retrying later may succeed: ovsdb-server unreachable or too slow, or
    /// ovs-vswitchd not (yet) applying changes.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Rpc { source, .. } => source.is_transient(),
            Self::NotApplied { .. } | Self::CacheTimeout { .. } => true,
            _ => false,
        }
    }

    /// Wraps a JSON-RPC failure of `method`, lifting an OVSDB error object (`{"error":
    /// ..., "details": ...}`) into [`Error::Refused`] so its text is not buried in JSON.
    pub(crate) fn rpc(method: &str, source: dpu_jsonrpc::Error) -> Self {
        if let dpu_jsonrpc::Error::RpcV1 { error, .. } = &source {
            let text = error
                .get("error")
                .and_then(serde_json::Value::as_str)
                .or_else(|| error.as_str());
            if let Some(text) = text {
                return Self::Refused {
                    method: method.to_owned(),
                    error: text.to_owned(),
                    details: error
                        .get("details")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned),
                };
            }
        }
        Self::Rpc {
            method: method.to_owned(),
            source,
        }
    }

    pub(crate) fn malformed(method: &str, detail: impl Into<String>) -> Self {
        Self::Malformed {
            method: method.to_owned(),
            detail: detail.into(),
        }
    }
}

/// The message of [`Error::NotCreated`]: what, where, OVS's reason, what became of it.
fn not_created_text(
    kind: &str,
    name: &str,
    bridge: &str,
    datapath_type: &str,
    error: Option<&str>,
    removed: bool,
    removal_failed: bool,
) -> String {
    let datapath = if datapath_type.is_empty() {
        "system (the default)"
    } else {
        datapath_type
    };
    let what = if kind == "bridge" {
        format!("ovs-vswitchd did not create bridge {name} (datapath type {datapath})")
    } else {
        format!(
            "ovs-vswitchd could not add port {name} to bridge {bridge} (datapath type {datapath})"
        )
    };
    let why = match error {
        Some(text) => format!("OVS says \"{text}\""),
        None if kind == "bridge" => format!(
            "its local interface {name} got no OpenFlow port and no error, which is how \
             ovs-vswitchd leaves a bridge whose datapath it cannot open (its log says \
             \"failed to create bridge {name}: ...\")"
        ),
        None => format!(
            "interface {name} got no OpenFlow port and OVS recorded no error (is bridge \
             {bridge} itself running? see ovs-vswitchd's log)"
        ),
    };
    let after = if removed {
        "it was removed again, nothing changed"
    } else if removal_failed {
        "removing it again failed, so it is still in OVSDB"
    } else {
        "it existed before this request and was left as it is"
    };
    format!("{what}: {why}; {after}")
}

fn suffix(details: &Option<String>) -> String {
    details
        .as_deref()
        .filter(|d| !d.is_empty())
        .map_or_else(String::new, |d| format!(": {d}"))
}
