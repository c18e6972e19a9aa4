//! OVSDB, ovs-vswitchd and netlink errors as gRPC statuses. Every message starts with the
//! backend it came from (`ovsdb:`, `ovs-vswitchd:`, `netlink:`) and carries the whole error
//! chain, so the user knows which daemon to look at and what it said.

use dpu_ovs::{ovsdb, unixctl};
use dpu_probe::netlink::NetlinkError;
use tonic::Status;

use crate::errors::error_chain;
use crate::ovs::flows::FlowsError;

/// Maps an OVSDB client error: ovsdb-server away is `UNAVAILABLE`, a missing bridge or
/// port `NOT_FOUND`, an existing one with other settings `ALREADY_EXISTS`, a value OVS
/// would refuse `INVALID_ARGUMENT`, ovs-vswitchd not applying in time `DEADLINE_EXCEEDED`,
/// a transaction the database refused `FAILED_PRECONDITION`, and a bridge or port
/// ovs-vswitchd applied but could not create `FAILED_PRECONDITION` (its text starts with
/// `ovs-vswitchd`, the daemon that refused, and quotes OVS).
pub(crate) fn from_ovsdb(err: &ovsdb::Error) -> Status {
    use ovsdb::Error as E;
    let chain = error_chain(err);
    match err {
        E::Rpc { .. } if err.is_transient() => Status::unavailable(format!(
            "ovsdb: ovsdb-server is unavailable: {chain} (the agent reconnects on the next call)"
        )),
        E::NotFound {
            kind: "Open_vSwitch row",
            ..
        } => Status::failed_precondition(format!("ovsdb: {chain}")),
        E::NotFound { .. } => Status::not_found(format!("ovsdb: {chain}")),
        E::Conflict { .. } => Status::already_exists(format!("ovsdb: {chain}")),
        E::InvalidName { .. } | E::InvalidValue { .. } => {
            Status::invalid_argument(format!("ovsdb: {chain}"))
        }
        // ovs-vswitchd's verdict, reported through OVSDB: named after the daemon that
        // refused. Retrying cannot help until the machine changes, hence not UNAVAILABLE.
        // The text already starts with "ovs-vswitchd".
        E::NotCreated { .. } => Status::failed_precondition(chain),
        E::NotApplied { .. } | E::CacheTimeout { .. } => {
            Status::deadline_exceeded(format!("ovsdb: {chain}"))
        }
        E::Address { .. }
        | E::Refused { .. }
        | E::Operation { .. }
        | E::Commit { .. }
        | E::Schema { .. } => Status::failed_precondition(format!("ovsdb: {chain}")),
        _ => Status::internal(format!("ovsdb: {chain}")),
    }
}

/// Maps a control-socket error: ovs-vswitchd not running (no pid file, a stale socket) is
/// `UNAVAILABLE`; a command OVS refused is `FAILED_PRECONDITION` with OVS's own text.
pub(crate) fn from_unixctl(err: &unixctl::Error) -> Status {
    use unixctl::Error as E;
    let chain = error_chain(err);
    match err {
        E::PidFile { .. } | E::BadPidFile { .. } => Status::unavailable(format!(
            "ovs-vswitchd: ovs-vswitchd is not running: {chain}"
        )),
        E::Rpc { .. } if err.is_transient() => Status::unavailable(format!(
            "ovs-vswitchd: ovs-vswitchd is unavailable: {chain}"
        )),
        E::Command { .. } => Status::failed_precondition(format!("ovs-vswitchd: {chain}")),
        _ => Status::internal(format!("ovs-vswitchd: {chain}")),
    }
}

/// Maps a flow or tc-filter listing error: the control socket's and netlink's as above, an
/// unknown datapath or netdev `NOT_FOUND`, several datapaths and none chosen
/// `FAILED_PRECONDITION`, output the agent cannot parse and a dead reader `INTERNAL`.
pub(crate) fn from_flows(err: &FlowsError) -> Status {
    match err {
        FlowsError::Vswitchd(e) => from_unixctl(e),
        FlowsError::Netlink(e) => from_netlink(e),
        FlowsError::NoSuchDatapath { .. } | FlowsError::NoSuchNetdev(_) => {
            Status::not_found(err.to_string())
        }
        FlowsError::SeveralDatapaths(_) => Status::failed_precondition(err.to_string()),
        FlowsError::Unparsable(_) | FlowsError::ReaderTask(_) => Status::internal(err.to_string()),
    }
}

/// Maps a netlink read error; the kernel being unreadable is an agent-side problem.
pub(crate) fn from_netlink(err: &NetlinkError) -> Status {
    Status::internal(format!("netlink: {}", error_chain(err)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic::Code;

    use super::*;

    #[test]
    fn ovsdb_errors_map_to_the_documented_codes() {
        let cases = [
            (
                ovsdb::Error::NotFound {
                    kind: "bridge",
                    name: "br0".to_owned(),
                    detail: None,
                },
                Code::NotFound,
            ),
            (
                ovsdb::Error::NotFound {
                    kind: "Open_vSwitch row",
                    name: "Open_vSwitch".to_owned(),
                    detail: None,
                },
                Code::FailedPrecondition,
            ),
            (
                ovsdb::Error::Conflict {
                    kind: "bridge",
                    name: "br0".to_owned(),
                    detail: "datapath_type differs".to_owned(),
                },
                Code::AlreadyExists,
            ),
            (
                ovsdb::Error::NotApplied {
                    next_cfg: 3,
                    cur_cfg: Some(2),
                    after: Duration::from_secs(1),
                },
                Code::DeadlineExceeded,
            ),
            (
                ovsdb::Error::Operation {
                    index: 0,
                    op: "insert".to_owned(),
                    error: "constraint violation".to_owned(),
                    details: None,
                },
                Code::FailedPrecondition,
            ),
            (
                ovsdb::Error::NotCreated {
                    kind: "port",
                    name: "nodev0".to_owned(),
                    bridge: "br0".to_owned(),
                    datapath_type: "netdev".to_owned(),
                    error: Some("could not open network device nodev0 (No such device)".to_owned()),
                    removed: true,
                    removal: None,
                },
                Code::FailedPrecondition,
            ),
        ];
        for (err, code) in cases {
            let status = from_ovsdb(&err);
            assert_eq!(status.code(), code, "{err}");
            let daemon = if matches!(err, ovsdb::Error::NotCreated { .. }) {
                "ovs-vswitchd could not add port nodev0 to bridge br0 (datapath type netdev): \
                 OVS says \"could not open network device nodev0 (No such device)\""
            } else {
                "ovsdb: "
            };
            assert!(status.message().starts_with(daemon), "{status:?}");
        }
    }

    #[test]
    fn unreachable_daemons_are_unavailable_and_named() {
        let err = unixctl::Error::PidFile {
            path: "/run/openvswitch/ovs-vswitchd.pid".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let status = from_unixctl(&err);
        assert_eq!(status.code(), Code::Unavailable);
        assert!(status.message().contains("ovs-vswitchd.pid"), "{status:?}");
        let refused = unixctl::Error::Command {
            command: "dpctl/dump-flows".to_owned(),
            message: "datapath not found".to_owned(),
        };
        assert_eq!(from_unixctl(&refused).code(), Code::FailedPrecondition);
    }

    #[test]
    fn flow_listing_errors_keep_their_codes_and_texts() {
        let cases = [
            (
                FlowsError::NoSuchDatapath {
                    requested: "netdev@ovs-netdev".to_owned(),
                    available: vec!["system@ovs-system".to_owned()],
                },
                Code::NotFound,
                "ovs-vswitchd: datapath netdev@ovs-netdev not found; datapaths: [\"system@ovs-system\"]",
            ),
            (
                FlowsError::SeveralDatapaths(vec!["a".to_owned(), "b".to_owned()]),
                Code::FailedPrecondition,
                "ovs-vswitchd has several datapaths [\"a\", \"b\"]: set `datapath` to one of them",
            ),
            (
                FlowsError::NoSuchNetdev("pf0hpf".to_owned()),
                Code::NotFound,
                "netlink: netdev pf0hpf not found in the agent's network namespace",
            ),
        ];
        for (err, code, text) in cases {
            let status = from_flows(&err);
            assert_eq!((status.code(), status.message()), (code, text), "{err:?}");
        }
        // The control socket's errors map as `from_unixctl` maps them.
        let down = unixctl::Error::PidFile {
            path: "/run/openvswitch/ovs-vswitchd.pid".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let status = from_flows(&FlowsError::Vswitchd(down));
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        assert!(
            status
                .message()
                .starts_with("ovs-vswitchd: ovs-vswitchd is not running"),
            "{status:?}"
        );
    }
}
