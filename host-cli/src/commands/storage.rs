//! `dpuctl storage ...` through the agent's Storage service: attach a remote controller,
//! expose a remote namespace to the host, list what the agent manages, read io stats,
//! set QoS limits, undo; `storage read` is the host-side read demo (`super::read`, over `dpu_host::storage_read`).

use dpu_proto::v1::{self, inventory_client::InventoryClient};

use super::env::{rpc_error, Env};
use crate::cli::{AttachArgs, ExposeArgs, StorageCommand, Transport};
use crate::exit::Exit;
use crate::output;
use crate::storage_qos_cli::QosArgs;

pub(crate) async fn run(env: &Env<'_>, cmd: &StorageCommand) -> anyhow::Result<Exit> {
    match cmd {
        StorageCommand::Attach(args) => attach(env, args).await,
        StorageCommand::Expose(args) => expose(env, args).await,
        StorageCommand::List => list(env).await,
        StorageCommand::Functions => functions(env).await,
        StorageCommand::Stats { name } => stats(env, name).await,
        StorageCommand::Detach {
            name,
            allow_missing,
        } => detach(env, name, *allow_missing).await,
        StorageCommand::Qos(args) => qos(env, args).await,
        StorageCommand::Paths(args) => super::storage_paths::paths(env, args).await,
        StorageCommand::VirtioBlk(command) => super::storage_virtio_blk::run(env, command).await,
        StorageCommand::Read(args) => super::read::run(env, args),
    }
}

fn options(dry_run: bool) -> Option<v1::ApplyOptions> {
    Some(v1::ApplyOptions {
        timeout: None,
        dry_run,
    })
}

fn remote_spec(args: &AttachArgs) -> v1::RemoteControllerSpec {
    // The agent checks that the address matches the family and names the field if not.
    let family = if args.traddr.contains(':') {
        v1::AddressFamily::Ipv6
    } else {
        v1::AddressFamily::Ipv4
    };
    v1::RemoteControllerSpec {
        transport: match args.transport {
            Transport::Rdma => v1::NvmeTransport::Rdma,
            Transport::Tcp => v1::NvmeTransport::Tcp,
        } as i32,
        address_family: family as i32,
        traddr: args.traddr.clone(),
        trsvcid: args.trsvcid,
        subnqn: args.subnqn.clone(),
        hostnqn: args.hostnqn.clone().unwrap_or_default(),
        ctrl_loss_timeout_sec: args.ctrl_loss_timeout_sec.unwrap_or(0),
        reconnect_delay_sec: args.reconnect_delay_sec.unwrap_or(0),
        fast_io_fail_timeout_sec: args.fast_io_fail_timeout_sec.unwrap_or(0),
        extra_paths: args.multipath.paths.clone(),
        multipath_policy: args
            .multipath
            .multipath_policy
            .map_or(0, |p| p.proto() as i32),
        ..Default::default()
    }
}

fn function(args: &ExposeArgs) -> v1::EmulationFunction {
    use v1::emulation_function::Function;
    let function = match &args.pci {
        Some(bdf) => Function::PciAddress(v1::PciAddress { bdf: bdf.clone() }),
        None => Function::PfVf(v1::PfVf {
            pf_index: args.pf,
            vf_index: args.vf,
        }),
    };
    v1::EmulationFunction {
        function: Some(function),
    }
}

fn volumes(remote: &v1::RemoteController) -> String {
    remote
        .status
        .as_ref()
        .map(|s| {
            s.volumes
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn remote_state(remote: &v1::RemoteController) -> &'static str {
    let state = remote.status.as_ref().map_or(0, |s| s.state);
    match v1::RemoteControllerState::try_from(state) {
        Ok(v1::RemoteControllerState::Enabled) => "enabled",
        Ok(v1::RemoteControllerState::Connecting) => "connecting",
        Ok(v1::RemoteControllerState::Reconnecting) => "reconnecting",
        Ok(v1::RemoteControllerState::Failed) => "failed",
        _ => "unknown",
    }
}

fn controller_state(state: i32) -> &'static str {
    match v1::ControllerState::try_from(state) {
        Ok(v1::ControllerState::Running) => "running",
        Ok(v1::ControllerState::Suspended) => "suspended",
        Ok(v1::ControllerState::Failed) => "failed (missing in the backend)",
        _ => "-",
    }
}

async fn attach(env: &Env<'_>, args: &AttachArgs) -> anyhow::Result<Exit> {
    let controller = env
        .storage_client()
        .await?
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: args.id.clone(),
            spec: Some(remote_spec(args)),
            options: options(args.dry_run),
        })
        .await
        .map_err(rpc_error("Storage.CreateRemoteController"))?
        .into_inner();
    print_or_json(env, &controller, |c| {
        let verb = if args.dry_run {
            "would attach"
        } else {
            "attached"
        };
        format!(
            "{verb} {} ({}), volumes: {}",
            c.name,
            remote_state(c),
            output::or_dash(&volumes(c))
        )
    })
}

async fn expose(env: &Env<'_>, args: &ExposeArgs) -> anyhow::Result<Exit> {
    let spec = v1::ExposureSpec {
        remote: Some(remote_spec(&args.remote)),
        remote_nsid: args.remote_nsid,
        subsystem_nqn: args.nqn.clone(),
        nsid: args.nsid,
        function: Some(function(args)),
        serial_number: args.serial.clone().unwrap_or_default(),
        model_number: args.model.clone().unwrap_or_default(),
    };
    let exposure = env
        .storage_client()
        .await?
        .apply_exposure(v1::ApplyExposureRequest {
            exposure_id: args.remote.id.clone(),
            spec: Some(spec),
            options: options(args.remote.dry_run),
        })
        .await
        .map_err(rpc_error("Storage.ApplyExposure"))?
        .into_inner();
    print_or_json(env, &exposure, |e| {
        let verb = if args.remote.dry_run {
            "would expose"
        } else {
            "exposed"
        };
        let mut text = format!(
            "{verb} {}: {} as {}",
            e.name, e.remote_controller, e.namespace
        );
        if !e.controller.is_empty() {
            text.push_str(&format!(
                " through {} ({})",
                e.controller,
                controller_state(e.controller_state)
            ));
        }
        if !e.host_device.is_empty() {
            text.push_str(&format!("; block device {}", e.host_device));
        }
        text
    })
}

/// Everything the agent manages, for `storage list`; keys in camelCase like the proto3
/// JSON inside.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Listing {
    exposures: Vec<v1::Exposure>,
    remote_controllers: Vec<v1::RemoteController>,
    subsystems: Vec<v1::Subsystem>,
}

async fn list(env: &Env<'_>) -> anyhow::Result<Exit> {
    let mut client = env.storage_client().await?;
    let listing = Listing {
        exposures: client
            .list_exposures(v1::ListExposuresRequest::default())
            .await
            .map_err(rpc_error("Storage.ListExposures"))?
            .into_inner()
            .exposures,
        remote_controllers: client
            .list_remote_controllers(v1::ListRemoteControllersRequest::default())
            .await
            .map_err(rpc_error("Storage.ListRemoteControllers"))?
            .into_inner()
            .remote_controllers,
        subsystems: client
            .list_subsystems(v1::ListSubsystemsRequest::default())
            .await
            .map_err(rpc_error("Storage.ListSubsystems"))?
            .into_inner()
            .subsystems,
    };
    if env.json() {
        output::json(&listing)?;
        return Ok(Exit::Success);
    }
    let mut table = output::table(["exposure", "namespace", "controller", "state", "device"]);
    for e in &listing.exposures {
        table.add_row([
            e.name.clone(),
            e.namespace.clone(),
            output::or_dash(&e.controller).to_owned(),
            controller_state(e.controller_state).to_owned(),
            output::or_dash(&e.host_device).to_owned(),
        ]);
    }
    output::print_table(&table)?;
    let mut table = output::table(["remote controller", "target", "state", "volumes"]);
    for r in &listing.remote_controllers {
        let target = r
            .spec
            .as_ref()
            .map(|s| format!("{}:{} {}", s.traddr, s.trsvcid, s.subnqn))
            .unwrap_or_default();
        table.add_row([
            r.name.clone(),
            target,
            remote_state(r).to_owned(),
            output::or_dash(&volumes(r)).to_owned(),
        ]);
    }
    output::print_table(&table)?;
    let limited: Vec<&v1::Volume> = listing
        .remote_controllers
        .iter()
        .filter_map(|r| r.status.as_ref())
        .flat_map(|s| &s.volumes)
        .filter(|v| limited(v))
        .collect();
    if !limited.is_empty() {
        let mut table = output::table(["volume", "qos", "in force"]);
        for v in limited {
            table.add_row([v.name.clone(), qos_text(v.qos.as_ref()), in_force_text(v)]);
        }
        output::print_table(&table)?;
    }
    let mut table = output::table(["subsystem", "namespaces", "controllers"]);
    for s in &listing.subsystems {
        table.add_row([
            s.nqn.clone(),
            s.namespaces.join(" "),
            s.controllers.join(" "),
        ]);
    }
    output::print_table(&table)?;
    Ok(Exit::Success)
}

async fn functions(env: &Env<'_>) -> anyhow::Result<Exit> {
    let reply = InventoryClient::new(env.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .list_emulation_functions(v1::ListEmulationFunctionsRequest {})
        .await
        .map_err(rpc_error("Inventory.ListEmulationFunctions"))?
        .into_inner();
    if env.json() {
        output::json(&reply)?;
        return Ok(Exit::Success);
    }
    let mut table = output::table(["function", "pci", "vuid", "type", "controller"]);
    for f in &reply.functions {
        let function = match f.vf_index {
            Some(vf) => format!("PF {} VF {vf}", f.pf_index),
            None => format!("PF {}", f.pf_index),
        };
        table.add_row([
            function,
            output::or_dash(&f.pci_bdf).to_owned(),
            output::or_dash(&f.vuid).to_owned(),
            output::or_dash(&f.emulation_type).to_owned(),
            output::or_dash(&f.backend_controller).to_owned(),
        ]);
    }
    output::print_table(&table)?;
    Ok(Exit::Success)
}

/// A volume's limits in words: "20000 IOPS, read 500 MiB/s"; "unlimited" when none.
fn qos_text(limits: Option<&v1::QosLimits>) -> String {
    let Some(l) = limits else {
        return "unlimited".to_owned();
    };
    let parts: Vec<String> = [
        (l.rw_ios_per_sec, "", " IOPS"),
        (l.rw_mbytes_per_sec, "read+write ", " MiB/s"),
        (l.r_mbytes_per_sec, "read ", " MiB/s"),
        (l.w_mbytes_per_sec, "write ", " MiB/s"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n != 0)
    .map(|(n, before, after)| format!("{before}{n}{after}"))
    .collect();
    if parts.is_empty() {
        "unlimited".to_owned()
    } else {
        parts.join(", ")
    }
}

/// Whether a volume has limits asked for or in force (the listing shows only those).
fn limited(v: &v1::Volume) -> bool {
    let set = |l: Option<&v1::QosLimits>| l.is_some_and(|l| *l != v1::QosLimits::default());
    set(v.qos.as_ref()) || set(v.applied_qos.as_ref())
}

/// What the backend reports in force, or that it does not say.
fn in_force_text(v: &v1::Volume) -> String {
    match &v.applied_qos {
        Some(applied) => qos_text(Some(applied)),
        None => "not reported".to_owned(),
    }
}

async fn qos(env: &Env<'_>, args: &QosArgs) -> anyhow::Result<Exit> {
    let volume = if args.volume.starts_with("volumes/") {
        args.volume.clone()
    } else {
        format!("volumes/{}", args.volume)
    };
    let limits = v1::QosLimits {
        rw_ios_per_sec: args.iops.unwrap_or(0),
        rw_mbytes_per_sec: args.rw_mbps.unwrap_or(0),
        r_mbytes_per_sec: args.read_mbps.unwrap_or(0),
        w_mbytes_per_sec: args.write_mbps.unwrap_or(0),
    };
    let reply = env
        .storage_client()
        .await?
        .set_volume_qos(v1::SetVolumeQosRequest {
            volume,
            limits: Some(limits),
            options: options(args.dry_run),
        })
        .await
        .map_err(rpc_error("Storage.SetVolumeQos"))?
        .into_inner();
    print_or_json(env, &reply, |v| {
        let verb = match (args.dry_run, args.clear) {
            (true, _) => "would set",
            (false, true) => "cleared",
            (false, false) => "set",
        };
        format!(
            "{verb} {} QoS: {} (in force: {})",
            v.name,
            qos_text(v.qos.as_ref()),
            in_force_text(v)
        )
    })
}

async fn stats(env: &Env<'_>, name: &str) -> anyhow::Result<Exit> {
    let stats = env
        .storage_client()
        .await?
        .get_io_stats(v1::GetIoStatsRequest {
            name: name.to_owned(),
        })
        .await
        .map_err(rpc_error("Storage.GetIoStats"))?
        .into_inner();
    print_or_json(env, &stats, |s| {
        format!(
            "{}: read {} bytes in {} ops, wrote {} bytes in {} ops ({})",
            s.name, s.bytes_read, s.read_ops, s.bytes_written, s.write_ops, s.source
        )
    })
}

async fn detach(env: &Env<'_>, name: &str, allow_missing: bool) -> anyhow::Result<Exit> {
    let mut client = env.storage_client().await?;
    let reply = if name.starts_with("remoteControllers/") {
        client
            .delete_remote_controller(v1::DeleteRemoteControllerRequest {
                name: name.to_owned(),
                allow_missing,
                options: None,
            })
            .await
            .map_err(rpc_error("Storage.DeleteRemoteController"))?
    } else if name.starts_with("exposures/") {
        client
            .delete_exposure(v1::DeleteExposureRequest {
                name: name.to_owned(),
                allow_missing,
                options: None,
            })
            .await
            .map_err(rpc_error("Storage.DeleteExposure"))?
    } else {
        anyhow::bail!("{name:?}: expected exposures/{{id}} or remoteControllers/{{id}}");
    };
    print_or_json(env, &reply.into_inner(), |r| {
        let what = if r.deleted {
            "deleted"
        } else {
            "was not there"
        };
        format!("{name}: {what}")
    })
}

fn print_or_json<T: serde::Serialize>(
    env: &Env<'_>,
    value: &T,
    text: impl Fn(&T) -> String,
) -> anyhow::Result<Exit> {
    if env.json() {
        output::json(value)?;
    } else {
        output::line(&text(value))?;
    }
    Ok(Exit::Success)
}
