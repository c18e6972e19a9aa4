//! `dpuctl switch ...` through the agent's Switch service.

use dpu_proto::v1::{self, switch_client::SwitchClient};
use tonic::transport::Channel;

use super::{rpc_error, Env};
use crate::cli::{FlowType, SwitchCommand};
use crate::outcome::Outcome;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &SwitchCommand) -> anyhow::Result<Outcome> {
    match cmd {
        SwitchCommand::Bridges => bridges(env).await,
        SwitchCommand::Flows { flow_type } => flows(env, *flow_type).await,
        // Said before connecting, so the answer does not depend on the agent being up.
        SwitchCommand::Ports { .. }
        | SwitchCommand::AddBridge { .. }
        | SwitchCommand::DelBridge { .. }
        | SwitchCommand::AddPort { .. }
        | SwitchCommand::DelPort { .. }
        | SwitchCommand::Offload { .. } => {
            super::pending::not_yet("switch", "ovs: OVSDB and ovs-vswitchd clients")
        }
    }
}

async fn client(env: &Env<'_>) -> anyhow::Result<SwitchClient<Channel>> {
    Ok(SwitchClient::new(env.channel().await?))
}

async fn bridges(env: &Env<'_>) -> anyhow::Result<Outcome> {
    let reply = client(env)
        .await?
        .list_bridges(v1::ListBridgesRequest {})
        .await
        .map_err(rpc_error("Switch.ListBridges"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
    } else {
        let mut table = output::table(["bridge", "datapath", "ports"]);
        for b in &reply.bridges {
            let ports: Vec<&str> = b.ports.iter().map(|p| p.port.as_str()).collect();
            table.add_row([
                b.bridge.clone(),
                output::or_dash(&b.datapath_type).to_owned(),
                ports.join(" "),
            ]);
        }
        output::print_table(&table)?;
    }
    Ok(Outcome::Success)
}

async fn flows(env: &Env<'_>, flow_type: FlowType) -> anyhow::Result<Outcome> {
    let filter = match flow_type {
        FlowType::Offloaded => v1::FlowFilter::Offloaded,
        FlowType::NonOffloaded => v1::FlowFilter::NonOffloaded,
        FlowType::PartiallyOffloaded => v1::FlowFilter::PartiallyOffloaded,
        FlowType::All => v1::FlowFilter::All,
    };
    let reply = client(env)
        .await?
        .list_flows(v1::ListFlowsRequest {
            filter: filter as i32,
            ..Default::default()
        })
        .await
        .map_err(rpc_error("Switch.ListFlows"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
    } else {
        let mut table =
            output::table(["in_port", "packets", "bytes", "offloaded", "dp", "actions"]);
        for f in &reply.flows {
            let offloaded =
                v1::OffloadStatus::try_from(f.offloaded).unwrap_or(v1::OffloadStatus::Unspecified);
            table.add_row([
                f.in_port.clone(),
                f.packets.to_string(),
                f.bytes.to_string(),
                offloaded
                    .as_str_name()
                    .trim_start_matches("OFFLOAD_STATUS_")
                    .to_ascii_lowercase(),
                f.dp_layer.clone(),
                f.actions.clone(),
            ]);
        }
        output::print_table(&table)?;
    }
    Ok(Outcome::Success)
}
