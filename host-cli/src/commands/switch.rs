//! `dpuctl switch ...` through the agent's Switch service: bridges, ports, offload
//! settings and datapath flows. Tables for people, proto3 JSON (`-o json`) for scripts.

use dpu_proto::names::Collection;
use dpu_proto::v1::{self, switch_client::SwitchClient};
use tonic::transport::Channel;

use super::env::{rpc_error, Env};
use crate::cli::{DatapathType, FlowType, OnOff, SwitchCommand};
use crate::exit::Exit;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &SwitchCommand) -> anyhow::Result<Exit> {
    match cmd {
        SwitchCommand::Bridges => bridges(env).await,
        SwitchCommand::Ports { bridge } => ports(env, bridge).await,
        SwitchCommand::AddBridge {
            name,
            datapath_type,
        } => add_bridge(env, name, *datapath_type).await,
        SwitchCommand::DelBridge { name } => del_bridge(env, name).await,
        SwitchCommand::AddPort {
            bridge,
            port,
            interface_type,
        } => add_port(env, bridge, port, interface_type).await,
        SwitchCommand::DelPort { bridge, port } => del_port(env, bridge, port).await,
        SwitchCommand::Offload { state: None } => show_offload(env).await,
        SwitchCommand::Offload { state: Some(state) } => set_offload(env, *state).await,
        SwitchCommand::Flows { flow_type, in_port } => {
            flows(env, *flow_type, in_port.as_deref()).await
        }
    }
}

async fn client(env: &Env<'_>) -> anyhow::Result<SwitchClient<Channel>> {
    Ok(SwitchClient::new(env.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES))
}

async fn bridges(env: &Env<'_>) -> anyhow::Result<Exit> {
    let reply = client(env)
        .await?
        .list_bridges(v1::ListBridgesRequest {})
        .await
        .map_err(rpc_error("Switch.ListBridges"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
    } else {
        // The error column is why ovs-vswitchd does not run a bridge (OVS's own text where
        // it wrote one), so a bridge made behind the agent's back that failed shows it.
        let mut table = output::table(["bridge", "datapath", "ports", "error"]);
        for b in &reply.bridges {
            let ports: Vec<&str> = b.ports.iter().map(|p| p.port.as_str()).collect();
            table.add_row([
                b.bridge.clone(),
                output::or_dash(&b.datapath_type).to_owned(),
                ports.join(" "),
                output::or_dash(&b.error).to_owned(),
            ]);
        }
        output::print_table(&table)?;
    }
    Ok(Exit::Success)
}

async fn ports(env: &Env<'_>, bridge: &str) -> anyhow::Result<Exit> {
    let reply = client(env)
        .await?
        .list_ports(v1::ListPortsRequest {
            parent: Collection::Bridges.format(bridge),
        })
        .await
        .map_err(rpc_error("Switch.ListPorts"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
    } else {
        print_ports(&reply.ports)?;
    }
    Ok(Exit::Success)
}

fn print_ports(ports: &[v1::Port]) -> anyhow::Result<()> {
    let mut table = output::table(["port", "type", "ofport", "admin", "link", "error"]);
    for p in ports {
        table.add_row([
            p.port.clone(),
            interface_type(&p.interface_type).to_owned(),
            p.ofport.to_string(),
            output::or_dash(&p.admin_state).to_owned(),
            output::or_dash(&p.link_state).to_owned(),
            output::or_dash(&p.error).to_owned(),
        ]);
    }
    output::print_table(&table)
}

/// OVS stores a kernel device's type as "": show it as "system".
fn interface_type(kind: &str) -> &str {
    if kind.is_empty() {
        "system"
    } else {
        kind
    }
}

async fn add_bridge(
    env: &Env<'_>,
    name: &str,
    datapath_type: Option<DatapathType>,
) -> anyhow::Result<Exit> {
    let datapath_type = match datapath_type {
        None => "",
        Some(DatapathType::System) => "system",
        Some(DatapathType::Netdev) => "netdev",
    };
    let bridge = client(env)
        .await?
        .create_bridge(v1::CreateBridgeRequest {
            bridge_id: name.to_owned(),
            datapath_type: datapath_type.to_owned(),
            options: None,
        })
        .await
        .map_err(rpc_error("Switch.CreateBridge"))?
        .into_inner();
    if env.json() {
        output::json(&bridge)?;
    } else {
        output::line(&format!(
            "bridge {} ready (datapath {}, uuid {})",
            bridge.bridge,
            if bridge.datapath_type.is_empty() {
                "system"
            } else {
                &bridge.datapath_type
            },
            bridge.uuid
        ))?;
    }
    Ok(Exit::Success)
}

async fn del_bridge(env: &Env<'_>, name: &str) -> anyhow::Result<Exit> {
    let reply = client(env)
        .await?
        .delete_bridge(v1::DeleteBridgeRequest {
            name: Collection::Bridges.format(name),
            allow_missing: false,
            options: None,
        })
        .await
        .map_err(rpc_error("Switch.DeleteBridge"))?
        .into_inner();
    print_deleted(env, &reply, &format!("bridge {name}"))
}

async fn add_port(
    env: &Env<'_>,
    bridge: &str,
    port: &str,
    interface_type: &str,
) -> anyhow::Result<Exit> {
    let created = client(env)
        .await?
        .create_port(v1::CreatePortRequest {
            parent: Collection::Bridges.format(bridge),
            port_id: port.to_owned(),
            interface_type: interface_type.to_owned(),
            ..Default::default()
        })
        .await
        .map_err(rpc_error("Switch.CreatePort"))?
        .into_inner();
    if env.json() {
        output::json(&created)?;
    } else {
        print_ports(std::slice::from_ref(&created))?;
    }
    Ok(Exit::Success)
}

async fn del_port(env: &Env<'_>, bridge: &str, port: &str) -> anyhow::Result<Exit> {
    let reply = client(env)
        .await?
        .delete_port(v1::DeletePortRequest {
            name: format!("{}/ports/{port}", Collection::Bridges.format(bridge)),
            allow_missing: false,
            options: None,
        })
        .await
        .map_err(rpc_error("Switch.DeletePort"))?
        .into_inner();
    print_deleted(env, &reply, &format!("port {port} of bridge {bridge}"))
}

fn print_deleted(env: &Env<'_>, reply: &v1::DeleteResponse, what: &str) -> anyhow::Result<Exit> {
    if env.json() {
        output::json(reply)?;
    } else if reply.deleted {
        output::line(&format!("deleted {what}"))?;
    } else {
        output::line(&format!("{what} did not exist"))?;
    }
    Ok(Exit::Success)
}

async fn show_offload(env: &Env<'_>) -> anyhow::Result<Exit> {
    let settings = client(env)
        .await?
        .get_offload_settings(v1::GetOffloadSettingsRequest {})
        .await
        .map_err(rpc_error("Switch.GetOffloadSettings"))?
        .into_inner();
    if env.json() {
        output::json(&settings)?;
    } else {
        print_settings(&settings)?;
    }
    Ok(Exit::Success)
}

async fn set_offload(env: &Env<'_>, state: OnOff) -> anyhow::Result<Exit> {
    let reply = client(env)
        .await?
        .update_offload_settings(v1::UpdateOffloadSettingsRequest {
            hw_offload: Some(state == OnOff::On),
            ..Default::default()
        })
        .await
        .map_err(rpc_error("Switch.UpdateOffloadSettings"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
        return Ok(Exit::Success);
    }
    if let Some(settings) = &reply.settings {
        print_settings(settings)?;
    }
    if reply.changed_keys.is_empty() {
        output::line("nothing changed: the setting was already in place")?;
    } else {
        output::line(&format!("changed: {}", reply.changed_keys.join(", ")))?;
    }
    output::line(if reply.restart_required {
        "restart required: yes. ovs-vswitchd reads hw-offload only at start; restart it \
         (e.g. `systemctl restart openvswitch-switch`) for the change to take effect"
    } else {
        "restart required: no"
    })?;
    Ok(Exit::Success)
}

fn print_settings(s: &v1::OffloadSettings) -> anyhow::Result<()> {
    let policy = v1::TcPolicy::try_from(s.tc_policy).unwrap_or(v1::TcPolicy::Unspecified);
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let mut table = output::table(["setting", "value"]);
    for (key, value) in [
        ("hw-offload", s.hw_offload.to_string()),
        ("offload active", yes_no(s.offload_active)),
        ("tc-policy", tc_policy(policy).to_owned()),
        (
            "max-idle",
            if s.max_idle_ms == 0 {
                "default (10000 ms)".to_owned()
            } else {
                format!("{} ms", s.max_idle_ms)
            },
        ),
        ("doca-init", s.doca_init.to_string()),
        (
            "applied",
            format!(
                "{} (cur_cfg {}, next_cfg {})",
                yes_no(s.cur_cfg >= s.next_cfg),
                s.cur_cfg,
                s.next_cfg
            ),
        ),
        ("ovs version", output::or_dash(&s.ovs_version).to_owned()),
    ] {
        table.add_row([key.to_owned(), value]);
    }
    let mut keys: Vec<_> = s.other_config.iter().collect();
    keys.sort();
    for (key, value) in keys {
        table.add_row([format!("other_config:{key}"), value.clone()]);
    }
    output::print_table(&table)
}

/// The policy as OVS spells it in `other_config:tc-policy`.
fn tc_policy(policy: v1::TcPolicy) -> &'static str {
    match policy {
        v1::TcPolicy::None => "none",
        v1::TcPolicy::SkipSw => "skip_sw",
        v1::TcPolicy::SkipHw => "skip_hw",
        v1::TcPolicy::Unspecified => "unknown (see other_config:tc-policy)",
    }
}

/// `OFFLOAD_STATUS_NOT_OFFLOADED` → `not-offloaded`.
async fn flows(env: &Env<'_>, flow_type: FlowType, in_port: Option<&str>) -> anyhow::Result<Exit> {
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
            in_port: in_port.unwrap_or_default().to_owned(),
            datapath: String::new(),
            covering: None,
        })
        .await
        .map_err(rpc_error("Switch.ListFlows"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
    } else {
        let mut table = output::table([
            "in_port",
            "packets",
            "bytes",
            "used",
            "offloaded",
            "dp",
            "tc hw pkts",
            "actions",
        ]);
        for f in &reply.flows {
            let hw_packets: Option<u64> = (!f.tc_filters.is_empty()).then(|| {
                f.tc_filters
                    .iter()
                    .filter_map(|t| t.actions.first())
                    .map(|a| a.hw_packets)
                    .sum()
            });
            table.add_row([
                output::or_dash(&f.in_port).to_owned(),
                f.packets.to_string(),
                f.bytes.to_string(),
                used(f.used.as_ref()),
                output::enum_label(
                    f.offloaded,
                    v1::OffloadStatus::as_str_name,
                    "OFFLOAD_STATUS_",
                ),
                output::or_dash(&f.dp_layer).to_owned(),
                hw_packets.map_or_else(|| "-".to_owned(), |n| n.to_string()),
                f.actions.clone(),
            ]);
        }
        output::print_table(&table)?;
    }
    Ok(Exit::Success)
}

/// Time since last use the way OVS prints it: `0.320s`, or `never`.
fn used(d: Option<&dpu_proto::pbjson_types::Duration>) -> String {
    match d {
        Some(d) => format!("{}.{:03}s", d.seconds, d.nanos / 1_000_000),
        None => "never".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_names_and_times_read_like_ovs() {
        assert_eq!(tc_policy(v1::TcPolicy::SkipSw), "skip_sw");
        assert_eq!(
            output::enum_label(
                v1::OffloadStatus::NotOffloaded as i32,
                v1::OffloadStatus::as_str_name,
                "OFFLOAD_STATUS_"
            ),
            "not-offloaded"
        );
        let d = dpu_proto::pbjson_types::Duration {
            seconds: 1,
            nanos: 20_000_000,
        };
        assert_eq!(used(Some(&d)), "1.020s");
        assert_eq!(used(None), "never");
        assert_eq!(interface_type(""), "system");
    }
}
