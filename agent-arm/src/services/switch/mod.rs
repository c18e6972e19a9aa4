//! `dpu.v1.Switch`: OVS bridges, ports and offload settings through OVSDB, datapath flows
//! through ovs-vswitchd's control socket, tc filters through netlink.
//!
//! Each handler validates its request here (nothing invalid reaches OVS), takes the OVS
//! clients from the context (`UNAVAILABLE` naming OVS when the backend is off), and
//! delegates to [`bridges`], [`offload`] or the OVS backend's flow listing
//! (`crate::ovs::flows`); errors become statuses in [`status`]. The clients connect lazily, so OVS may appear or restart
//! while the agent runs.

mod bridges;
mod convert;
mod offload;
mod status;

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::Arc;

use dpu_ovs::flow::Ipv4Packet;
use dpu_ovs::ovsdb::InterfaceType;
use dpu_proto::names::{check_ifname, Collection, PortName};
use dpu_proto::v1::{self, switch_server::Switch};
use tonic::{Request, Response, Status};

use crate::security::audit_request;

use self::bridges::{Apply, NewBridge, NewPort};
use self::convert::{bridge_to_wire, dump_type, port_to_wire};
use self::status::from_flows;
use crate::context::AgentContext;
use crate::ovs::flows::{self, FlowQuery};
use crate::ovs::OvsClients;
use crate::services::status::{echo, invalid, invalid_field};

/// Serves the switch API from the agent's OVS clients.
#[derive(Debug, Clone)]
pub(crate) struct SwitchService {
    ctx: Arc<AgentContext>,
}

impl SwitchService {
    pub(crate) fn new(ctx: Arc<AgentContext>) -> Self {
        Self { ctx }
    }

    /// The OVS clients; a backend switched off or misconfigured is `UNAVAILABLE` naming OVS.
    fn ovs(&self) -> Result<&OvsClients, Status> {
        self.ctx
            .ovs
            .clients()
            .map_err(|e| Status::unavailable(e.to_string()))
    }
}

type Reply<T> = Result<Response<T>, Status>;

/// Datapath types OVS knows; anything else is a typo that OVS would silently accept.
fn datapath_type(value: &str) -> Result<(), Status> {
    match value {
        "" | "system" | "netdev" => Ok(()),
        other => Err(invalid(
            "datapath_type",
            format!("{} is not one of \"\", \"system\", \"netdev\"", echo(other)),
        )),
    }
}

fn interface_type(value: &str) -> Result<(), Status> {
    if value.len() <= 32
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(invalid(
            "interface_type",
            format!("{} is not an OVS interface type", echo(value)),
        ))
    }
}

/// Interface options go verbatim into OVSDB: bounded, printable, no control characters.
fn interface_options(
    options: &HashMap<String, String>,
) -> Result<BTreeMap<String, String>, Status> {
    let printable = |s: &str| !s.chars().any(char::is_control);
    for (key, value) in options {
        if key.is_empty() || key.len() > 64 || !printable(key) || key.contains(char::is_whitespace)
        {
            return Err(invalid(
                "interface_options",
                format!(
                    "key {} must be 1-64 printable characters without spaces",
                    echo(key)
                ),
            ));
        }
        if value.len() > 256 || !printable(value) {
            return Err(invalid(
                "interface_options",
                format!(
                    "value of {} must be at most 256 printable characters",
                    echo(key)
                ),
            ));
        }
    }
    Ok(options.clone().into_iter().collect())
}

/// `dpctl/dump-flows` datapath names look like `system@ovs-system`.
fn datapath_name(value: &str) -> Result<(), Status> {
    if value.is_empty()
        || (value.len() <= 64
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '@' | '-' | '_' | '.')))
    {
        Ok(())
    } else {
        Err(invalid(
            "datapath",
            format!(
                "{} is not a datapath name such as \"system@ovs-system\"",
                echo(value)
            ),
        ))
    }
}

/// `ListFlowsRequest.covering`, checked: dotted IPv4 addresses, a protocol of 0-255 and
/// ports of 0-65535; a bad one names its field.
fn flow_packet(packet: &v1::FlowPacket) -> Result<Ipv4Packet, Status> {
    let address = |field: &str, text: &str| {
        text.parse::<Ipv4Addr>().map_err(|_| {
            invalid(
                field,
                format!("{} is not a dotted IPv4 address", echo(text)),
            )
        })
    };
    let narrow = |field: &str, value: u32, max: u32| {
        if value <= max {
            Ok(value)
        } else {
            Err(invalid(field, format!("{value} is more than {max}")))
        }
    };
    Ok(Ipv4Packet {
        src: address("covering.src_ip", &packet.src_ip)?,
        dst: address("covering.dst_ip", &packet.dst_ip)?,
        proto: u8::try_from(narrow("covering.ip_proto", packet.ip_proto, 255)?).unwrap_or(0),
        src_port: u16::try_from(narrow("covering.src_port", packet.src_port, 65_535)?).unwrap_or(0),
        dst_port: u16::try_from(narrow("covering.dst_port", packet.dst_port, 65_535)?).unwrap_or(0),
    })
}

fn apply_options(options: Option<&v1::ApplyOptions>) -> Result<Apply, Status> {
    let Some(options) = options else {
        return Ok(Apply::default());
    };
    let timeout = crate::services::status::apply_timeout(options)?;
    Ok(Apply {
        timeout,
        dry_run: options.dry_run,
    })
}

#[tonic::async_trait]
impl Switch for SwitchService {
    async fn list_bridges(
        &self,
        _request: Request<v1::ListBridgesRequest>,
    ) -> Reply<v1::ListBridgesResponse> {
        let read = bridges::list_bridges(self.ovs()?).await?;
        Ok(Response::new(v1::ListBridgesResponse {
            bridges: read
                .value
                .iter()
                .map(|b| bridge_to_wire(b, read.caught_up))
                .collect(),
        }))
    }

    async fn get_bridge(&self, request: Request<v1::GetBridgeRequest>) -> Reply<v1::Bridge> {
        let name = Collection::Bridges
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        let read = bridges::get_bridge(self.ovs()?, &name.id).await?;
        Ok(Response::new(bridge_to_wire(&read.value, read.caught_up)))
    }

    async fn create_bridge(&self, request: Request<v1::CreateBridgeRequest>) -> Reply<v1::Bridge> {
        audit_request(&request);
        let req = request.into_inner();
        check_ifname("bridge", &req.bridge_id).map_err(invalid_field("bridge_id"))?;
        datapath_type(&req.datapath_type)?;
        let apply = apply_options(req.options.as_ref())?;
        let new = NewBridge {
            name: &req.bridge_id,
            datapath_type: &req.datapath_type,
        };
        let bridge = bridges::create_bridge(self.ovs()?, &new, apply).await?;
        Ok(Response::new(bridge))
    }

    async fn delete_bridge(
        &self,
        request: Request<v1::DeleteBridgeRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let name = Collection::Bridges
            .parse(&req.name)
            .map_err(invalid_field("name"))?;
        let apply = apply_options(req.options.as_ref())?;
        let reply = bridges::delete_bridge(self.ovs()?, &name.id, req.allow_missing, apply).await?;
        Ok(Response::new(reply))
    }

    async fn list_ports(
        &self,
        request: Request<v1::ListPortsRequest>,
    ) -> Reply<v1::ListPortsResponse> {
        let parent = Collection::Bridges
            .parse(&request.into_inner().parent)
            .map_err(invalid_field("parent"))?;
        let bridge = bridges::get_bridge(self.ovs()?, &parent.id).await?.value;
        Ok(Response::new(v1::ListPortsResponse {
            ports: bridge
                .ports
                .iter()
                .map(|p| port_to_wire(&bridge.name, p))
                .collect(),
        }))
    }

    async fn create_port(&self, request: Request<v1::CreatePortRequest>) -> Reply<v1::Port> {
        audit_request(&request);
        let req = request.into_inner();
        let parent = Collection::Bridges
            .parse(&req.parent)
            .map_err(invalid_field("parent"))?;
        check_ifname("port", &req.port_id).map_err(invalid_field("port_id"))?;
        interface_type(&req.interface_type)?;
        let options = interface_options(&req.interface_options)?;
        let apply = apply_options(req.options.as_ref())?;
        let new = NewPort {
            bridge: &parent.id,
            name: &req.port_id,
            kind: InterfaceType::from_column(&req.interface_type),
            options: &options,
        };
        let port = bridges::create_port(self.ovs()?, &new, apply).await?;
        Ok(Response::new(port))
    }

    async fn delete_port(
        &self,
        request: Request<v1::DeletePortRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let name = PortName::parse(&req.name).map_err(invalid_field("name"))?;
        let apply = apply_options(req.options.as_ref())?;
        let reply = bridges::delete_port(
            self.ovs()?,
            &name.bridge,
            &name.port,
            req.allow_missing,
            apply,
        )
        .await?;
        Ok(Response::new(reply))
    }

    async fn get_offload_settings(
        &self,
        _request: Request<v1::GetOffloadSettingsRequest>,
    ) -> Reply<v1::OffloadSettings> {
        Ok(Response::new(offload::get(self.ovs()?).await?))
    }

    async fn update_offload_settings(
        &self,
        request: Request<v1::UpdateOffloadSettingsRequest>,
    ) -> Reply<v1::UpdateOffloadSettingsResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let tc_policy = v1::TcPolicy::try_from(req.tc_policy)
            .map_err(|_| invalid("tc_policy", format!("unknown value {}", req.tc_policy)))?;
        if let Some(ms) = req.max_idle_ms {
            if ms < 500 {
                return Err(invalid("max_idle_ms", "OVS requires at least 500 ms"));
            }
        }
        let apply = apply_options(req.options.as_ref())?;
        let changes = offload::requested_changes(&req, tc_policy);
        Ok(Response::new(
            offload::update(self.ovs()?, &changes, apply).await?,
        ))
    }

    async fn list_flows(
        &self,
        request: Request<v1::ListFlowsRequest>,
    ) -> Reply<v1::ListFlowsResponse> {
        let req = request.into_inner();
        let filter = v1::FlowFilter::try_from(req.filter)
            .map_err(|_| invalid("filter", format!("unknown value {}", req.filter)))?;
        if !req.in_port.is_empty() {
            check_ifname("in_port", &req.in_port).map_err(invalid_field("in_port"))?;
        }
        datapath_name(&req.datapath)?;
        let covering = req.covering.as_ref().map(flow_packet).transpose()?;
        let query = FlowQuery {
            dump_type: dump_type(filter),
            in_port: &req.in_port,
            datapath: &req.datapath,
            covering,
        };
        Ok(Response::new(
            flows::list_flows(self.ovs()?, &self.ctx.tc_netlink, &query)
                .await
                .map_err(|e| from_flows(&e))?,
        ))
    }

    async fn list_tc_filters(
        &self,
        request: Request<v1::ListTcFiltersRequest>,
    ) -> Reply<v1::ListTcFiltersResponse> {
        let netdev = request.into_inner().netdev;
        check_ifname("netdev", &netdev).map_err(invalid_field("netdev"))?;
        // tc lives in the kernel: this call needs netlink only, not OVS.
        let filters = flows::list_tc_filters(&self.ctx.tc_netlink, &netdev)
            .await
            .map_err(|e| from_flows(&e))?;
        Ok(Response::new(v1::ListTcFiltersResponse { filters }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_proto::pbjson_types;
    use std::time::Duration;

    #[test]
    fn a_covering_packet_is_checked_field_by_field() {
        let good = v1::FlowPacket {
            src_ip: "10.0.0.2".to_owned(),
            dst_ip: "10.0.0.1".to_owned(),
            ip_proto: 17,
            src_port: 40_001,
            dst_port: 9,
        };
        let packet = flow_packet(&good).expect("valid");
        assert_eq!(
            (packet.proto, packet.src_port, packet.dst_port),
            (17, 40_001, 9)
        );
        for (bad, field) in [
            (
                v1::FlowPacket {
                    src_ip: "10.0.0".to_owned(),
                    ..good.clone()
                },
                "covering.src_ip",
            ),
            (
                v1::FlowPacket {
                    dst_ip: "::1".to_owned(),
                    ..good.clone()
                },
                "covering.dst_ip",
            ),
            (
                v1::FlowPacket {
                    ip_proto: 256,
                    ..good.clone()
                },
                "covering.ip_proto",
            ),
            (
                v1::FlowPacket {
                    dst_port: 70_000,
                    ..good.clone()
                },
                "covering.dst_port",
            ),
        ] {
            let err = flow_packet(&bad).expect_err(field);
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(err.message().starts_with(field), "{}", err.message());
        }
    }

    #[test]
    fn apply_options_bound_the_timeout() {
        let options = |seconds| v1::ApplyOptions {
            timeout: Some(pbjson_types::Duration { seconds, nanos: 0 }),
            dry_run: true,
        };
        let apply = apply_options(Some(&options(5))).expect("valid");
        assert_eq!(apply.timeout, Some(Duration::from_secs(5)));
        assert!(apply.dry_run);
        for bad in [0, -1, 601] {
            let err = apply_options(Some(&options(bad))).expect_err("out of range");
            assert!(err.message().starts_with("options.timeout"), "{err:?}");
        }
        assert!(apply_options(None).expect("absent").timeout.is_none());
    }

    #[test]
    fn names_and_options_are_checked_before_ovs() {
        datapath_name("system@ovs-system").expect("kernel datapath");
        datapath_name("").expect("unset");
        assert!(datapath_name("a b").is_err());
        assert!(datapath_type("vhost").is_err());
        assert!(interface_type("Internal").is_err());
        let ok = HashMap::from([("remote_ip".to_owned(), "192.0.2.1".to_owned())]);
        assert_eq!(interface_options(&ok).expect("valid").len(), 1);
        let bad = HashMap::from([("a b".to_owned(), "x".to_owned())]);
        let err = interface_options(&bad).expect_err("space in key");
        assert!(err.message().starts_with("interface_options"), "{err:?}");
    }
}
