//! `dpu.v1.Switch`. Requests are validated here; the OVSDB and control-socket clients
//! that carry them out arrive with the OVS work, so a valid request is answered
//! `UNIMPLEMENTED` naming that area.

use dpu_proto::names::{check_ifname, Collection, PortName};
use dpu_proto::v1::{self, switch_server::Switch};
use tonic::{Request, Response, Status};

use super::status::{invalid, invalid_field, not_yet};

const AREA: &str = "ovs: OVSDB and ovs-vswitchd clients";

/// Serves the switch API. Stateless until the OVS clients land.
#[derive(Debug, Clone, Default)]
pub(crate) struct SwitchService;

type Reply<T> = Result<Response<T>, Status>;

/// Datapath types OVS knows; anything else is a typo that OVS would silently accept.
fn datapath_type(value: &str) -> Result<(), Status> {
    match value {
        "" | "system" | "netdev" => Ok(()),
        other => Err(invalid(
            "datapath_type",
            format!("{other:?} is not one of \"\", \"system\", \"netdev\""),
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
            format!("{value:?} is not an OVS interface type"),
        ))
    }
}

#[tonic::async_trait]
impl Switch for SwitchService {
    async fn list_bridges(
        &self,
        _request: Request<v1::ListBridgesRequest>,
    ) -> Reply<v1::ListBridgesResponse> {
        Err(not_yet("Switch.ListBridges", AREA))
    }

    async fn get_bridge(&self, request: Request<v1::GetBridgeRequest>) -> Reply<v1::Bridge> {
        Collection::Bridges
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        Err(not_yet("Switch.GetBridge", AREA))
    }

    async fn create_bridge(&self, request: Request<v1::CreateBridgeRequest>) -> Reply<v1::Bridge> {
        let req = request.into_inner();
        check_ifname("bridge", &req.bridge_id).map_err(invalid_field("bridge_id"))?;
        datapath_type(&req.datapath_type)?;
        Err(not_yet("Switch.CreateBridge", AREA))
    }

    async fn delete_bridge(
        &self,
        request: Request<v1::DeleteBridgeRequest>,
    ) -> Reply<v1::DeleteResponse> {
        Collection::Bridges
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        Err(not_yet("Switch.DeleteBridge", AREA))
    }

    async fn list_ports(
        &self,
        request: Request<v1::ListPortsRequest>,
    ) -> Reply<v1::ListPortsResponse> {
        Collection::Bridges
            .parse(&request.into_inner().parent)
            .map_err(invalid_field("parent"))?;
        Err(not_yet("Switch.ListPorts", AREA))
    }

    async fn create_port(&self, request: Request<v1::CreatePortRequest>) -> Reply<v1::Port> {
        let req = request.into_inner();
        Collection::Bridges
            .parse(&req.parent)
            .map_err(invalid_field("parent"))?;
        check_ifname("port", &req.port_id).map_err(invalid_field("port_id"))?;
        interface_type(&req.interface_type)?;
        Err(not_yet("Switch.CreatePort", AREA))
    }

    async fn delete_port(
        &self,
        request: Request<v1::DeletePortRequest>,
    ) -> Reply<v1::DeleteResponse> {
        PortName::parse(&request.into_inner().name).map_err(invalid_field("name"))?;
        Err(not_yet("Switch.DeletePort", AREA))
    }

    async fn get_offload_settings(
        &self,
        _request: Request<v1::GetOffloadSettingsRequest>,
    ) -> Reply<v1::OffloadSettings> {
        Err(not_yet("Switch.GetOffloadSettings", AREA))
    }

    async fn update_offload_settings(
        &self,
        request: Request<v1::UpdateOffloadSettingsRequest>,
    ) -> Reply<v1::UpdateOffloadSettingsResponse> {
        let req = request.into_inner();
        v1::TcPolicy::try_from(req.tc_policy)
            .map_err(|_| invalid("tc_policy", format!("unknown value {}", req.tc_policy)))?;
        if let Some(ms) = req.max_idle_ms {
            if ms < 500 {
                return Err(invalid("max_idle_ms", "OVS requires at least 500 ms"));
            }
        }
        Err(not_yet("Switch.UpdateOffloadSettings", AREA))
    }

    async fn list_flows(
        &self,
        request: Request<v1::ListFlowsRequest>,
    ) -> Reply<v1::ListFlowsResponse> {
        let req = request.into_inner();
        v1::FlowFilter::try_from(req.filter)
            .map_err(|_| invalid("filter", format!("unknown value {}", req.filter)))?;
        if !req.in_port.is_empty() {
            check_ifname("in_port", &req.in_port).map_err(invalid_field("in_port"))?;
        }
        Err(not_yet("Switch.ListFlows", AREA))
    }

    async fn list_tc_filters(
        &self,
        request: Request<v1::ListTcFiltersRequest>,
    ) -> Reply<v1::ListTcFiltersResponse> {
        check_ifname("netdev", &request.into_inner().netdev).map_err(invalid_field("netdev"))?;
        Err(not_yet("Switch.ListTcFilters", "probe: netlink tc filters"))
    }
}
