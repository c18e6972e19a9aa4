//! The SNAP/SPDK side of a remote controller with several paths ([`super::multipath`]):
//! attaching each path as one multipath controller, keeping the policy, bringing a path
//! back, and reporting each path's state.
//!
//! Every path is attached with `multipath: "multipath"`, active-passive included: SPDK
//! v24.01's `"failover"` keeps one `nvme_ctrlr` whose alternate paths have no I/O path of
//! their own, so `bdev_nvme_get_io_paths` could not report them; in `"multipath"` mode each
//! path is a controller with its own I/O path and `bdev_nvme_set_multipath_policy` (on each
//! bdev, where SPDK keeps it) chooses active-passive or active-active.
//!
//! A path whose listener went away: SPDK resets it, then, with `reconnect_delay_sec` > 0,
//! retries until `ctrl_loss_timeout_sec` and deletes that path's controller
//! (`bdev_nvme_check_op_after_reset`: OP_DESTRUCT); with the defaults (no reconnect) it
//! leaves the path `failed` for good. The reconciler attaches a deleted path again, and
//! detaches and re-attaches a failed one while another path still serves the bdevs, so a
//! path comes back once its listener does.

use dpu_nvmeof::snap::{IoPath, MultipathMode, NvmeController, SnapErrorKind};
use dpu_proto::v1;

use super::backend::{BackendError, FailureKind};
use super::multipath::PathAddress;
use super::remote::{decode_remote, RemoteTarget};
use super::snap::{attach_failed, attach_params, SnapBackend};

/// SPDK's `nvme_ctrlr_get_state_str` for a path that stays down until told otherwise.
const FAILED: &str = "failed";

/// The address of one SPDK path, when its port is a port.
fn address_of(traddr: &str, trsvcid: &str) -> Option<PathAddress> {
    Some(PathAddress {
        traddr: traddr.to_owned(),
        trsvcid: trsvcid.parse().ok()?,
    })
}

/// SPDK's paths of `seen` with their controller state.
fn spdk_paths(seen: Option<&NvmeController>) -> Vec<(PathAddress, String)> {
    seen.map(|c| c.ctrlrs.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            Some((
                address_of(&p.trid.traddr, &p.trid.trsvcid)?,
                p.state.clone(),
            ))
        })
        .collect()
}

/// Whether bdev `bdev` is one of controller `id`'s (`{id}n{nsid}`).
fn bdev_of(bdev: &str, id: &str) -> bool {
    bdev.strip_prefix(id)
        .and_then(|rest| rest.strip_prefix('n'))
        .is_some_and(|nsid| !nsid.is_empty() && nsid.bytes().all(|b| b.is_ascii_digit()))
}

/// One spec path's state from SPDK's controller state and the I/O paths to it.
pub(crate) fn path_state(state: Option<&str>, io: &[&IoPath]) -> v1::NvmePathState {
    match state {
        None => v1::NvmePathState::Missing,
        Some("resetting" | "reconnect_is_delayed") => v1::NvmePathState::Connecting,
        Some("enabled") if io.is_empty() => v1::NvmePathState::Usable,
        Some("enabled") if !io.iter().any(|p| p.connected) => v1::NvmePathState::Connecting,
        Some("enabled") if !io.iter().any(|p| p.accessible) => v1::NvmePathState::Inaccessible,
        Some("enabled") => v1::NvmePathState::Usable,
        Some(_) => v1::NvmePathState::Failed,
    }
}

impl SnapBackend {
    /// Attaches every path of `target` SPDK lacks (`seen`: what SPDK has under `id`, None
    /// when nothing), re-attaches failed ones while another path serves, and keeps the
    /// policy on the bdevs. Each path is tried; the first failure is returned (a client's
    /// create is then rolled back, a background pass retries the next time).
    pub(super) async fn attach_missing_paths(
        &self,
        id: &str,
        target: &RemoteTarget,
        seen: Option<&NvmeController>,
    ) -> Result<(), BackendError> {
        if target.extra_paths.is_empty() {
            // One path: ensure_remote attached it, or found it attached.
            return Ok(());
        }
        let present = spdk_paths(seen);
        let mut first_error: Option<BackendError> = None;
        let serving = present.iter().filter(|(_, s)| s != FAILED).count();
        for path in target.paths() {
            let state = present.iter().find(|(p, _)| *p == path).map(|(_, s)| s);
            match state {
                Some(s) if s == FAILED && serving > 0 => {
                    tracing::info!(remote = id, path = %path, "detaching a failed path to attach it again");
                    if let Err(e) = self.detach_path(id, &path).await {
                        first_error.get_or_insert(e);
                        continue;
                    }
                }
                Some(_) => continue,
                None => {}
            }
            let params = attach_params(id, target, &path);
            let result = self
                .client()
                .bdev_nvme_attach_path(&params, MultipathMode::Multipath)
                .execute()
                .await;
            match result {
                Ok(_) => tracing::info!(remote = id, path = %path, "attached path"),
                Err(e) if e.code() == Some(-114) => {}
                Err(e) => {
                    first_error.get_or_insert(attach_failed(id, target, e));
                }
            }
        }
        if let (Some(policy), None) = (target.policy, &first_error) {
            if let Err(e) = self.ensure_policy(id, policy).await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Removes the path of controller `id` to `path` only.
    async fn detach_path(&self, id: &str, path: &PathAddress) -> Result<(), BackendError> {
        match self
            .client()
            .bdev_nvme_detach_path(id, &path.traddr, &path.trsvcid.to_string())
            .execute()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == SnapErrorKind::NotFound || e.code() == Some(-6) => Ok(()),
            Err(e) => Err(BackendError::new(
                FailureKind::Other,
                format!("bdev_nvme_detach_controller {id} path {path}"),
                e,
            )),
        }
    }

    /// Sets `policy` on each bdev of controller `id` whose policy SPDK reports otherwise.
    async fn ensure_policy(
        &self,
        id: &str,
        policy: super::multipath::MultipathPolicy,
    ) -> Result<(), BackendError> {
        let wanted = policy.spdk();
        let wanted_text = serde_json::to_value(wanted)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        let bdevs = self
            .client()
            .bdev_get_bdevs(None)
            .execute()
            .await
            .map_err(|e| BackendError::new(FailureKind::Other, "bdev_get_bdevs", e))?;
        for bdev in bdevs.iter().filter(|b| bdev_of(&b.name, id)) {
            let held = self
                .client()
                .bdev_get_nvme_paths(&bdev.name)
                .execute()
                .await
                .ok()
                .and_then(|found| found.into_iter().next())
                .and_then(|b| b.driver_specific.mp_policy);
            if held.is_some() && held == wanted_text {
                continue;
            }
            self.client()
                .bdev_nvme_set_multipath_policy(&bdev.name, wanted)
                .execute()
                .await
                .map_err(|e| {
                    BackendError::new(
                        FailureKind::Other,
                        format!("bdev_nvme_set_multipath_policy {}", bdev.name),
                        e,
                    )
                })?;
        }
        Ok(())
    }

    /// Each path of remote `id` (spec order, the first first) with the state SPDK reports:
    /// its controller's state from `bdev_nvme_get_controllers`, connected, accessible and
    /// current from `bdev_nvme_get_io_paths` (which lists a path only on a thread that has
    /// a channel open on the bdev).
    pub(crate) async fn remote_paths(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<Vec<v1::NvmePath>, BackendError> {
        let target = decode_remote(spec)?;
        let seen = match self.client().bdev_nvme_get_controllers(id).execute().await {
            Ok(found) => found.into_iter().find(|c| c.name == id),
            Err(e) if e.kind() == SnapErrorKind::NotFound => None,
            Err(e) => {
                return Err(BackendError::new(
                    FailureKind::Other,
                    format!("bdev_nvme_get_controllers {id}"),
                    e,
                ))
            }
        };
        let io = match self.client().bdev_nvme_get_io_paths(None).execute().await {
            Ok(all) => all
                .poll_groups
                .into_iter()
                .flat_map(|g| g.io_paths)
                .filter(|p| bdev_of(&p.bdev_name, id))
                .collect(),
            Err(e) if e.kind() == SnapErrorKind::MethodNotFound => Vec::new(),
            Err(e) => {
                return Err(BackendError::new(
                    FailureKind::Other,
                    "bdev_nvme_get_io_paths",
                    e,
                ))
            }
        };
        let present = spdk_paths(seen.as_ref());
        Ok(target
            .paths()
            .into_iter()
            .map(|path| {
                let state = present.iter().find(|(p, _)| *p == path).map(|(_, s)| s);
                let to_path: Vec<&IoPath> = io
                    .iter()
                    .filter(|p| {
                        address_of(&p.transport.traddr, &p.transport.trsvcid).as_ref()
                            == Some(&path)
                    })
                    .collect();
                v1::NvmePath {
                    traddr: path.traddr.clone(),
                    trsvcid: u32::from(path.trsvcid),
                    state: path_state(state.map(String::as_str), &to_path) as i32,
                    current: to_path.iter().any(|p| p.current),
                    detail: state
                        .cloned()
                        .unwrap_or_else(|| format!("SPDK has no path of {id} to {path}")),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_nvmeof::snap::IoPathTransport;

    fn io(connected: bool, accessible: bool) -> IoPath {
        IoPath {
            bdev_name: "r0n1".to_owned(),
            cntlid: 1,
            current: false,
            connected,
            accessible,
            transport: IoPathTransport {
                trtype: "TCP".to_owned(),
                traddr: "127.0.0.1".to_owned(),
                trsvcid: "4420".to_owned(),
                adrfam: "IPv4".to_owned(),
            },
        }
    }

    #[test]
    fn each_spdk_state_maps_to_one_path_state() {
        let (up, down, hidden) = (io(true, true), io(false, true), io(true, false));
        let cases: [(Option<&str>, Vec<&IoPath>, v1::NvmePathState); 8] = [
            (None, vec![], v1::NvmePathState::Missing),
            (Some("enabled"), vec![], v1::NvmePathState::Usable),
            (Some("enabled"), vec![&up, &down], v1::NvmePathState::Usable),
            (Some("enabled"), vec![&down], v1::NvmePathState::Connecting),
            (
                Some("enabled"),
                vec![&hidden],
                v1::NvmePathState::Inaccessible,
            ),
            (Some("resetting"), vec![&up], v1::NvmePathState::Connecting),
            (
                Some("reconnect_is_delayed"),
                vec![],
                v1::NvmePathState::Connecting,
            ),
            (Some("failed"), vec![&up], v1::NvmePathState::Failed),
        ];
        for (state, paths, want) in cases {
            assert_eq!(path_state(state, &paths), want, "{state:?}");
        }
    }

    #[test]
    fn only_the_controllers_own_bdevs_count() {
        assert!(bdev_of("r0n1", "r0"));
        assert!(bdev_of("r0n12", "r0"));
        assert!(!bdev_of("r0n", "r0"));
        assert!(!bdev_of("r01n1", "r0"));
        assert!(!bdev_of("r0n1x", "r0"));
    }
}
