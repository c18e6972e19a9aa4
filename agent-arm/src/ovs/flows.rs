//! Datapath flows (`dpctl/dump-flows -m --names` through ovs-vswitchd's control socket)
//! and the tc filters that hold offloaded ones (netlink), joined by ufid: what
//! `Switch.ListFlows` answers and `/metrics` sums, so it lives below both, with the OVS
//! backend. Its errors are [`FlowsError`]; the Switch service maps them to gRPC statuses
//! once (`services::switch::status::from_flows`), `/metrics` reports their text.

use std::time::Duration;

use dpu_ovs::flow::{parse_dump, DumpType, FlowParseError, Ipv4Packet};
use dpu_ovs::unixctl;
use dpu_probe::netlink::{NetlinkAccess, NetlinkError, RouteSocket, RouteStats, TcParent};
use dpu_proto::v1;

use super::flow_wire::{
    flow_to_wire, is_real_filter, join_tc_filters, place_by_level, tc_filter_to_wire, tc_ports,
};
use super::OvsClients;
use crate::errors::error_chain;

/// Why flows or tc filters could not be listed; each text names the daemon or the kernel
/// interface it came from.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FlowsError {
    /// ovs-vswitchd's control socket failed or refused the command.
    #[error("ovs-vswitchd: {}", error_chain(.0))]
    Vswitchd(#[source] unixctl::Error),
    /// A line of `dpctl/dump-flows` the parser does not accept.
    #[error("ovs-vswitchd: cannot parse dpctl/dump-flows output: {0}")]
    Unparsable(#[source] FlowParseError),
    /// The requested datapath is not among `dpctl/dump-dps`.
    #[error("ovs-vswitchd: datapath {requested} not found; datapaths: {available:?}")]
    NoSuchDatapath {
        /// What was asked for.
        requested: String,
        /// What ovs-vswitchd has.
        available: Vec<String>,
    },
    /// Several datapaths and none asked for.
    #[error("ovs-vswitchd has several datapaths {0:?}: set `datapath` to one of them")]
    SeveralDatapaths(Vec<String>),
    /// A netdev asked for by name is not in the agent's network namespace.
    #[error("netlink: netdev {0} not found in the agent's network namespace")]
    NoSuchNetdev(String),
    /// The kernel's answer could not be read.
    #[error("netlink: {}", error_chain(.0))]
    Netlink(#[source] NetlinkError),
    /// The blocking reader task died (a panic in it).
    #[error("netlink reader task failed: {0}")]
    ReaderTask(#[source] tokio::task::JoinError),
}

/// A dump of a busy datapath (100,000 flows) takes seconds; the control socket's default
/// call deadline is sized for small commands.
const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// What `ListFlows` asks for, validated.
#[derive(Debug)]
pub(crate) struct FlowQuery<'a> {
    pub(crate) dump_type: DumpType,
    /// Only flows whose in_port is this port; empty: all.
    pub(crate) in_port: &'a str,
    /// The datapath to dump; empty: the only one there is.
    pub(crate) datapath: &'a str,
    /// Only flows whose match covers this packet.
    pub(crate) covering: Option<Ipv4Packet>,
}

/// The flows of one datapath with their tc filters (read through `tc`) joined and their
/// traffic placed by level: what `Switch.ListFlows` answers and `/metrics` sums.
pub(crate) async fn list_flows(
    ovs: &OvsClients,
    tc: &NetlinkAccess,
    query: &FlowQuery<'_>,
) -> Result<v1::ListFlowsResponse, FlowsError> {
    let Some(datapath) = choose_datapath(ovs, query.datapath).await? else {
        // No bridge yet, so no datapath and no flows.
        return Ok(v1::ListFlowsResponse::default());
    };
    let text = dump_flows(ovs, &datapath, query.dump_type, DUMP_TIMEOUT).await?;
    let mut flows = Vec::new();
    for parsed in parse_dump(&text) {
        let flow = parsed.map_err(FlowsError::Unparsable)?;
        // OVS applied type= already; the same rule here guards against an OVS that
        // ignored it. A line that cannot tell (`None`) is kept.
        if query.dump_type.matches(&flow) == Some(false) {
            continue;
        }
        if query.covering.is_some_and(|packet| !flow.covers(&packet)) {
            continue;
        }
        let wire = flow_to_wire(&flow);
        if query.in_port.is_empty() || wire.in_port == query.in_port {
            flows.push(wire);
        }
    }
    let ports = tc_ports(&flows);
    if !ports.is_empty() {
        let filters = read_tc_filters(tc, ports, false).await?;
        join_tc_filters(&mut flows, filters);
    }
    place_by_level(&mut flows);
    Ok(v1::ListFlowsResponse { flows, datapath })
}

/// `dpctl/dump-flows -m --names [type=...] DATAPATH`.
async fn dump_flows(
    ovs: &OvsClients,
    datapath: &str,
    dump_type: DumpType,
    timeout: Duration,
) -> Result<String, FlowsError> {
    let mut dump = ovs
        .vswitchd
        .dump_flows()
        .more()
        .names(true)
        .datapath(datapath);
    // No `type=` for "all", which every OVS version understands that way.
    if dump_type != DumpType::All {
        dump = dump.flow_type(dump_type);
    }
    ovs.vswitchd
        .command("dpctl/dump-flows")
        .args(dump.to_args())
        .timeout(timeout)
        .execute()
        .await
        .map_err(FlowsError::Vswitchd)
}

/// The ingress tc filters of one netdev in the agent's network namespace (or in the
/// capture `tc` replays).
pub(crate) async fn list_tc_filters(
    tc: &NetlinkAccess,
    netdev: &str,
) -> Result<Vec<v1::TcFilter>, FlowsError> {
    read_tc_filters(tc, vec![netdev.to_owned()], true).await
}

/// `dpctl/dump-flows` needs a datapath when there are several; the request's, checked
/// against `dpctl/dump-dps`, or the only one. `None` when there is none at all.
async fn choose_datapath(ovs: &OvsClients, requested: &str) -> Result<Option<String>, FlowsError> {
    let text = ovs
        .vswitchd
        .command("dpctl/dump-dps")
        .execute()
        .await
        .map_err(FlowsError::Vswitchd)?;
    let datapaths: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !requested.is_empty() {
        return if datapaths.contains(&requested) {
            Ok(Some(requested.to_owned()))
        } else {
            Err(FlowsError::NoSuchDatapath {
                requested: requested.to_owned(),
                available: datapaths.iter().map(|d| (*d).to_owned()).collect(),
            })
        };
    }
    match datapaths.as_slice() {
        [] => Ok(None),
        [only] => Ok(Some((*only).to_owned())),
        several => Err(FlowsError::SeveralDatapaths(
            several.iter().map(|d| (*d).to_owned()).collect(),
        )),
    }
}

/// Reads the ingress filters of `netdevs` through `tc` on the blocking pool (netlink is
/// synchronous). A netdev that does not exist is an error when `required`, else
/// skipped: a flow's in_port may be a port that is not a netdev of this namespace.
async fn read_tc_filters(
    tc: &NetlinkAccess,
    netdevs: Vec<String>,
    required: bool,
) -> Result<Vec<v1::TcFilter>, FlowsError> {
    let tc = tc.clone();
    tokio::task::spawn_blocking(move || {
        let mut socket = RouteSocket::open_via(&tc).map_err(FlowsError::Netlink)?;
        let links = socket.links().map_err(FlowsError::Netlink)?;
        let mut filters = Vec::new();
        for netdev in &netdevs {
            let Some(link) = links.iter().find(|l| l.ifname == *netdev) else {
                if required {
                    return Err(FlowsError::NoSuchNetdev(netdev.clone()));
                }
                tracing::debug!(%netdev, "no such netdev; its flows get no tc filters");
                continue;
            };
            let found = socket
                .tc_filters(link.ifindex, TcParent::Ingress)
                .map_err(FlowsError::Netlink)?;
            filters.extend(
                found
                    .iter()
                    .filter(|f| is_real_filter(f))
                    .map(|f| tc_filter_to_wire(netdev, f)),
            );
        }
        Ok(filters)
    })
    .await
    .map_err(FlowsError::ReaderTask)?
}
