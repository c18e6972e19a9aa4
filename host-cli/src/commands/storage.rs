//! `dpuctl storage ...` through the agent's Storage service.

use dpu_proto::v1::{self, storage_client::StorageClient};

use super::{rpc_error, Env};
use crate::cli::{AttachArgs, StorageCommand, Transport};
use crate::outcome::Outcome;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &StorageCommand) -> anyhow::Result<Outcome> {
    match cmd {
        StorageCommand::Attach(args) => attach(env, args).await,
        StorageCommand::Expose(args) => {
            let spec = v1::ExposureSpec {
                remote: Some(remote_spec(&args.remote)),
                remote_nsid: args.remote_nsid,
                subsystem_nqn: args.nqn.clone(),
                nsid: 1,
                function: Some(v1::EmulationFunction {
                    function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
                        pf_index: args.pf,
                        vf_index: args.vf,
                    })),
                }),
                ..Default::default()
            };
            let exposure = client(env)
                .await?
                .apply_exposure(v1::ApplyExposureRequest {
                    exposure_id: args.remote.id.clone(),
                    spec: Some(spec),
                    options: None,
                })
                .await
                .map_err(rpc_error("Storage.ApplyExposure"))?
                .into_inner();
            print_or_json(env, &exposure, |e| format!("exposed {}", e.name))
        }
        StorageCommand::List => {
            let reply = client(env)
                .await?
                .list_subsystems(v1::ListSubsystemsRequest::default())
                .await
                .map_err(rpc_error("Storage.ListSubsystems"))?
                .into_inner();
            if env.json() {
                output::json(&reply)?;
            } else {
                let mut table = output::table(["subsystem", "namespaces", "controllers"]);
                for s in &reply.subsystems {
                    table.add_row([
                        s.nqn.clone(),
                        s.namespaces.join(" "),
                        s.controllers.join(" "),
                    ]);
                }
                output::print_table(&table)?;
            }
            Ok(Outcome::Success)
        }
        StorageCommand::Stats { name } => {
            let stats = client(env)
                .await?
                .get_io_stats(v1::GetIoStatsRequest { name: name.clone() })
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
        StorageCommand::Detach { name } => {
            let mut client = client(env).await?;
            let reply = if name.starts_with("remoteControllers/") {
                client
                    .delete_remote_controller(v1::DeleteRemoteControllerRequest {
                        name: name.clone(),
                        ..Default::default()
                    })
                    .await
                    .map_err(rpc_error("Storage.DeleteRemoteController"))?
            } else {
                client
                    .delete_exposure(v1::DeleteExposureRequest {
                        name: name.clone(),
                        ..Default::default()
                    })
                    .await
                    .map_err(rpc_error("Storage.DeleteExposure"))?
            };
            print_or_json(env, &reply.into_inner(), |r| {
                format!(
                    "{name}: {}",
                    if r.deleted {
                        "deleted"
                    } else {
                        "was not there"
                    }
                )
            })
        }
        StorageCommand::Read(args) => crate::storage_read::run(env, args),
    }
}

async fn client(env: &Env<'_>) -> anyhow::Result<StorageClient<tonic::transport::Channel>> {
    Ok(StorageClient::new(env.channel().await?))
}

fn remote_spec(args: &AttachArgs) -> v1::RemoteControllerSpec {
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
        ..Default::default()
    }
}

async fn attach(env: &Env<'_>, args: &AttachArgs) -> anyhow::Result<Outcome> {
    let controller = client(env)
        .await?
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: args.id.clone(),
            spec: Some(remote_spec(args)),
            options: None,
        })
        .await
        .map_err(rpc_error("Storage.CreateRemoteController"))?
        .into_inner();
    print_or_json(env, &controller, |c| format!("attached {}", c.name))
}

fn print_or_json<T: serde::Serialize>(
    env: &Env<'_>,
    value: &T,
    text: impl Fn(&T) -> String,
) -> anyhow::Result<Outcome> {
    if env.json() {
        output::json(value)?;
    } else {
        output::line(&text(value))?;
    }
    Ok(Outcome::Success)
}
