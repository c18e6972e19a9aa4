//! `dpuctl storage paths [REMOTE]`: each path of the remote controllers with the state the
//! agent's backend reports (SPDK's `bdev_nvme_get_controllers` and
//! `bdev_nvme_get_io_paths`), as a table or `-o json`.

use dpu_proto::v1;
use serde::Serialize;

use super::env::{rpc_error, Env};
use crate::exit::Exit;
use crate::output;
use crate::storage_paths_cli::PathsArgs;

/// One row of the listing (the JSON shape scripts read).
#[derive(Debug, Serialize)]
struct PathRow {
    remote: String,
    address: String,
    state: String,
    current: bool,
    detail: String,
}

fn state_label(state: i32) -> String {
    match v1::NvmePathState::try_from(state) {
        Ok(v1::NvmePathState::Usable) => "usable",
        Ok(v1::NvmePathState::Inaccessible) => "inaccessible",
        Ok(v1::NvmePathState::Connecting) => "connecting",
        Ok(v1::NvmePathState::Failed) => "failed",
        Ok(v1::NvmePathState::Missing) => "missing",
        _ => "unknown",
    }
    .to_owned()
}

fn address(path: &v1::NvmePath) -> String {
    if path.traddr.contains(':') {
        format!("[{}]:{}", path.traddr, path.trsvcid)
    } else {
        format!("{}:{}", path.traddr, path.trsvcid)
    }
}

fn rows(remotes: &[v1::RemoteController]) -> Vec<PathRow> {
    remotes
        .iter()
        .flat_map(|r| {
            let paths = r
                .status
                .as_ref()
                .map(|s| s.paths.as_slice())
                .unwrap_or_default();
            paths.iter().map(|p| PathRow {
                remote: r.name.clone(),
                address: address(p),
                state: state_label(p.state),
                current: p.current,
                detail: p.detail.clone(),
            })
        })
        .collect()
}

pub(super) async fn paths(env: &Env<'_>, args: &PathsArgs) -> anyhow::Result<Exit> {
    let mut client = env.storage_client().await?;
    let remotes = match &args.remote {
        Some(name) => {
            let name = if name.starts_with("remoteControllers/") {
                name.clone()
            } else {
                format!("remoteControllers/{name}")
            };
            vec![client
                .get_remote_controller(v1::GetRemoteControllerRequest { name })
                .await
                .map_err(rpc_error("Storage.GetRemoteController"))?
                .into_inner()]
        }
        None => {
            client
                .list_remote_controllers(v1::ListRemoteControllersRequest::default())
                .await
                .map_err(rpc_error("Storage.ListRemoteControllers"))?
                .into_inner()
                .remote_controllers
        }
    };
    let rows = rows(&remotes);
    if env.json() {
        output::json(&rows)?;
        return Ok(Exit::Success);
    }
    let mut table = output::table(["remote controller", "path", "state", "current", "detail"]);
    for row in rows {
        table.add_row([
            row.remote,
            row.address,
            row.state,
            if row.current { "yes" } else { "no" }.to_owned(),
            output::or_dash(&row.detail).to_owned(),
        ]);
    }
    output::print_table(&table)?;
    Ok(Exit::Success)
}
