//! `dpuctl storage virtio-blk create|list|get|delete`: the agent's virtio-blk controllers
//! (`Storage.*VirtioBlkController`), as a table or `-o json` (the API's own JSON).

use dpu_proto::v1;

use super::env::{rpc_error, Env};
use crate::exit::Exit;
use crate::output;
use crate::storage_virtio_blk_cli::{VirtioBlkCommand, VirtioBlkCreateArgs};

const PREFIX: &str = "virtioBlkControllers/";

/// `NAME` as the API names it: a bare id gets the collection prefix.
fn full_name(name: &str) -> String {
    if name.starts_with(PREFIX) {
        name.to_owned()
    } else {
        format!("{PREFIX}{name}")
    }
}

fn function(args: &VirtioBlkCreateArgs) -> v1::EmulationFunction {
    use v1::emulation_function::Function;
    let function = match (&args.pci, &args.vuid) {
        (Some(bdf), _) => Function::PciAddress(v1::PciAddress { bdf: bdf.clone() }),
        (None, Some(vuid)) => Function::Vuid(vuid.clone()),
        (None, None) => Function::PfVf(v1::PfVf {
            pf_index: args.pf.unwrap_or(0),
            vf_index: args.vf,
        }),
    };
    v1::EmulationFunction {
        function: Some(function),
    }
}

fn state_label(state: i32) -> &'static str {
    match v1::ControllerState::try_from(state) {
        Ok(v1::ControllerState::Running) => "running",
        Ok(v1::ControllerState::Suspended) => "suspended",
        Ok(v1::ControllerState::Failed) => "failed",
        _ => "unknown",
    }
}

fn function_text(function: Option<&v1::EmulationFunction>) -> String {
    use v1::emulation_function::Function;
    match function.and_then(|f| f.function.as_ref()) {
        Some(Function::PfVf(v1::PfVf {
            pf_index,
            vf_index: Some(vf),
        })) => format!("PF {pf_index} VF {vf}"),
        Some(Function::PfVf(pf)) => format!("PF {}", pf.pf_index),
        Some(Function::PciAddress(pci)) => pci.bdf.clone(),
        Some(Function::Vuid(vuid)) => vuid.clone(),
        None => "-".to_owned(),
    }
}

fn print(controllers: &[v1::VirtioBlkController]) -> anyhow::Result<()> {
    let mut table = output::table([
        "virtio-blk controller",
        "function",
        "volume",
        "state",
        "backend id",
        "host pci",
    ]);
    for c in controllers {
        table.add_row([
            c.name.clone(),
            function_text(c.function.as_ref()),
            c.volume.clone(),
            state_label(c.state).to_owned(),
            output::or_dash(&c.backend_id).to_owned(),
            c.host_pci_address
                .as_ref()
                .map_or_else(|| "-".to_owned(), |p| p.bdf.clone()),
        ]);
    }
    output::print_table(&table)
}

pub(super) async fn run(env: &Env<'_>, command: &VirtioBlkCommand) -> anyhow::Result<Exit> {
    let mut client = env.storage_client().await?;
    match command {
        VirtioBlkCommand::Create(args) => {
            let volume = if args.volume.starts_with("volumes/") {
                args.volume.clone()
            } else {
                format!("volumes/{}", args.volume)
            };
            let made = client
                .create_virtio_blk_controller(v1::CreateVirtioBlkControllerRequest {
                    virtio_blk_controller_id: args.id.clone(),
                    virtio_blk_controller: Some(v1::VirtioBlkController {
                        function: Some(function(args)),
                        volume,
                        num_queues: args.num_queues,
                        queue_size: args.queue_size,
                        serial: args.serial.clone(),
                        ..Default::default()
                    }),
                    options: args.dry_run.then_some(v1::ApplyOptions {
                        timeout: None,
                        dry_run: true,
                    }),
                })
                .await
                .map_err(rpc_error("Storage.CreateVirtioBlkController"))?
                .into_inner();
            if env.json() {
                output::json(&made)?;
            } else {
                print(std::slice::from_ref(&made))?;
            }
        }
        VirtioBlkCommand::List => {
            let listed = client
                .list_virtio_blk_controllers(v1::ListVirtioBlkControllersRequest::default())
                .await
                .map_err(rpc_error("Storage.ListVirtioBlkControllers"))?
                .into_inner();
            if env.json() {
                output::json(&listed)?;
            } else {
                print(&listed.virtio_blk_controllers)?;
            }
        }
        VirtioBlkCommand::Get { name } => {
            let got = client
                .get_virtio_blk_controller(v1::GetVirtioBlkControllerRequest {
                    name: full_name(name),
                })
                .await
                .map_err(rpc_error("Storage.GetVirtioBlkController"))?
                .into_inner();
            if env.json() {
                output::json(&got)?;
            } else {
                print(std::slice::from_ref(&got))?;
            }
        }
        VirtioBlkCommand::Delete {
            name,
            allow_missing,
        } => {
            let name = full_name(name);
            let reply = client
                .delete_virtio_blk_controller(v1::DeleteVirtioBlkControllerRequest {
                    name: name.clone(),
                    allow_missing: *allow_missing,
                    options: None,
                })
                .await
                .map_err(rpc_error("Storage.DeleteVirtioBlkController"))?
                .into_inner();
            if env.json() {
                output::json(&reply)?;
            } else {
                let what = if reply.deleted {
                    "deleted"
                } else {
                    "was not there"
                };
                output::line(&format!("{name}: {what}"))?;
            }
        }
    }
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_ids_get_the_collection_and_functions_their_one_form() {
        assert_eq!(full_name("vm1"), "virtioBlkControllers/vm1");
        assert_eq!(
            full_name("virtioBlkControllers/vm1"),
            "virtioBlkControllers/vm1"
        );
        let args = |pf, vf, pci: Option<&str>, vuid: Option<&str>| VirtioBlkCreateArgs {
            id: "vm1".into(),
            volume: "r0n1".into(),
            pf,
            vf,
            pci: pci.map(str::to_owned),
            vuid: vuid.map(str::to_owned),
            num_queues: 0,
            queue_size: 0,
            serial: String::new(),
            dry_run: false,
        };
        assert_eq!(
            function_text(Some(&function(&args(None, None, None, None)))),
            "PF 0"
        );
        assert_eq!(
            function_text(Some(&function(&args(Some(1), Some(2), None, None)))),
            "PF 1 VF 2"
        );
        assert_eq!(
            function_text(Some(&function(&args(None, None, Some("03:00.4"), None)))),
            "03:00.4"
        );
        assert_eq!(
            function_text(Some(&function(&args(None, None, None, Some("MT1VBLK"))))),
            "MT1VBLK"
        );
    }
}
