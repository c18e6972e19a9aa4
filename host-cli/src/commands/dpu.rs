//! `dpuctl dpu ...`: inventory, health and counters through the agent.

use dpu_host::agent::health::agent_health;
use dpu_proto::v1::{self, inventory_client::InventoryClient};
use serde::Serialize;

use super::env::{rpc_error, Env};
use crate::cli::DpuCommand;
use crate::exit::Exit;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &DpuCommand) -> anyhow::Result<Exit> {
    match cmd {
        DpuCommand::Info => info(env).await,
        DpuCommand::Health => health(env).await,
        DpuCommand::Counters(args) => super::counters::run(env, args).await,
    }
}

/// Everything `dpu info` shows, as one JSON document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Info {
    system: v1::System,
    netdevs: Vec<v1::Netdev>,
    rdma_devices: Vec<v1::RdmaDevice>,
}

async fn info(env: &Env<'_>) -> anyhow::Result<Exit> {
    let mut client = InventoryClient::new(env.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES);
    let system = client
        .get_system(v1::GetSystemRequest {})
        .await
        .map_err(rpc_error("Inventory.GetSystem"))?
        .into_inner();
    let netdevs = client
        .list_netdevs(v1::ListNetdevsRequest::default())
        .await
        .map_err(rpc_error("Inventory.ListNetdevs"))?
        .into_inner()
        .netdevs;
    let rdma_devices = client
        .list_rdma_devices(v1::ListRdmaDevicesRequest::default())
        .await
        .map_err(rpc_error("Inventory.ListRdmaDevices"))?
        .into_inner()
        .devices;
    let info = Info {
        system,
        netdevs,
        rdma_devices,
    };
    if env.json() {
        output::json(&info)?;
    } else {
        print_info(&info)?;
    }
    Ok(Exit::Success)
}

fn print_info(info: &Info) -> anyhow::Result<()> {
    let s = &info.system;
    let os = s.os.clone().unwrap_or_default();
    let mut table = output::table(["property", "value"]);
    for (key, value) in [
        ("hostname", output::or_dash(&s.hostname).to_owned()),
        ("model", output::or_dash(&s.model).to_owned()),
        (
            "dpu mode",
            output::enum_label(s.dpu_mode, v1::DpuMode::as_str_name, "DPU_MODE_"),
        ),
        ("firmware", output::or_dash(&s.firmware_version).to_owned()),
        ("os", output::or_dash(&os.name).to_owned()),
        ("kernel", output::or_dash(&os.kernel_release).to_owned()),
        ("architecture", s.architecture.clone()),
        ("agent version", s.agent_version.clone()),
        ("agent uptime", output::duration(s.agent_uptime.as_ref())),
        ("system uptime", output::duration(s.system_uptime.as_ref())),
        ("sys root", s.sys_root.clone()),
    ] {
        table.add_row([key.to_owned(), value]);
    }
    output::print_table(&table)?;

    let mut table = output::table(["netdev", "role", "state", "mtu", "mac", "driver", "pci"]);
    for n in &info.netdevs {
        table.add_row([
            n.ifname.clone(),
            output::enum_label(n.role, v1::NetdevRole::as_str_name, "NETDEV_ROLE_"),
            output::enum_label(n.oper_state, v1::OperState::as_str_name, "OPER_STATE_"),
            n.mtu.to_string(),
            output::or_dash(&n.mac_address).to_owned(),
            output::or_dash(&n.driver).to_owned(),
            n.pci_address
                .as_ref()
                .map_or("-".to_owned(), |p| p.bdf.clone()),
        ]);
    }
    output::print_table(&table)?;

    if info.rdma_devices.is_empty() {
        return output::line("no RDMA devices");
    }
    let mut table = output::table([
        "rdma device",
        "port",
        "state",
        "rate",
        "link layer",
        "netdev",
        "gids",
    ]);
    for d in &info.rdma_devices {
        for p in &d.ports {
            table.add_row([
                d.ibdev.clone(),
                p.port.to_string(),
                output::enum_label(p.state, v1::RdmaPortState::as_str_name, "RDMA_PORT_STATE_"),
                output::or_dash(&p.rate).to_owned(),
                output::enum_label(p.link_layer, v1::LinkLayer::as_str_name, "LINK_LAYER_"),
                output::or_dash(&p.netdev).to_owned(),
                p.gids.len().to_string(),
            ]);
        }
    }
    output::print_table(&table)
}

async fn health(env: &Env<'_>) -> anyhow::Result<Exit> {
    let report = agent_health(env.session.agent()).await?;
    let rows = &report.rows;
    let healthy = report.healthy();
    if env.json() {
        output::json(&serde_json::json!({ "healthy": healthy, "components": rows }))?;
    } else {
        let mut table = output::table(["component", "state", "detail"]);
        for r in rows {
            table.add_row([
                r.component.as_str(),
                r.state.as_str(),
                output::or_dash(&r.detail),
            ]);
        }
        output::print_table(&table)?;
        output::line(if healthy { "healthy" } else { "UNHEALTHY" })?;
    }
    Ok(if healthy { Exit::Success } else { Exit::Failed })
}
