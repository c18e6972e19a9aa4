//! Offload settings: the `Open_vSwitch.other_config` keys that govern hardware offload,
//! and whether the running ovs-vswitchd has offload switched on.

use dpu_ovs::ovsdb::{self, restart_note};
use dpu_ovs::unixctl;
use dpu_proto::v1;
use tonic::Status;

use super::bridges::Apply;
use super::convert::{settings_to_wire, tc_policy_value, HW_OFFLOAD, MAX_IDLE, TC_POLICY};
use super::status::from_ovsdb;
use crate::ovs::OvsClients;

/// The settings in OVSDB plus what ovs-vswitchd says about offload now.
pub(crate) async fn get(ovs: &OvsClients) -> Result<v1::OffloadSettings, Status> {
    let root = ovs.ovsdb.open_vswitch().await.map_err(|e| from_ovsdb(&e))?;
    let active = offload_active(ovs, &root).await;
    Ok(settings_to_wire(&root, active))
}

/// The changes a request asks for, as `(key, value)` in the order they are applied.
pub(crate) fn requested_changes(
    req: &v1::UpdateOffloadSettingsRequest,
    tc_policy: v1::TcPolicy,
) -> Vec<(&'static str, String)> {
    let mut changes = Vec::new();
    if let Some(on) = req.hw_offload {
        changes.push((HW_OFFLOAD, on.to_string()));
    }
    if let Some(policy) = tc_policy_value(tc_policy) {
        changes.push((TC_POLICY, policy.to_owned()));
    }
    if let Some(ms) = req.max_idle_ms {
        changes.push((MAX_IDLE, ms.to_string()));
    }
    changes
}

/// Applies every change in one OVSDB transaction that waits for ovs-vswitchd (all keys or
/// none: a bad value leaves nothing half-applied), then reads the settings back. A dry
/// run compares with OVSDB only.
pub(crate) async fn update(
    ovs: &OvsClients,
    changes: &[(&'static str, String)],
    apply: Apply,
) -> Result<v1::UpdateOffloadSettingsResponse, Status> {
    let mut changed_keys = Vec::new();
    let mut restart_required = false;
    if apply.dry_run {
        let current = ovs
            .ovsdb
            .other_config()
            .get_all()
            .await
            .map_err(|e| from_ovsdb(&e))?;
        for (key, value) in changes {
            if current.get(*key) != Some(value) {
                changed_keys.push((*key).to_owned());
                restart_required |= restart_note(key).is_some();
            }
        }
    } else {
        let mut update = ovs.ovsdb.other_config().update(
            changes
                .iter()
                .map(|(key, value)| ((*key).to_owned(), Some(value.clone()))),
        );
        if let Some(timeout) = apply.timeout {
            update = update.apply_timeout(timeout);
        }
        let applied = update.execute().await.map_err(|e| {
            let status = from_ovsdb(&e);
            Status::new(
                status.code(),
                format!("updating offload settings: {}", status.message()),
            )
        })?;
        for change in applied {
            if change.previous != change.value {
                changed_keys.push(change.key);
            }
            restart_required |= change.restart_required;
        }
    }
    Ok(v1::UpdateOffloadSettingsResponse {
        settings: Some(get(ovs).await?),
        restart_required,
        changed_keys,
    })
}

/// Whether the running ovs-vswitchd has hardware offload (its flow API) enabled.
///
/// ovs-vswitchd latches offload on the first time it sees `hw-offload=true` and only a
/// restart turns it off again (ovs-netlink.md §1.2). The evidence, best first:
/// 1. no ovs-vswitchd answering: nothing is active;
/// 2. `dpctl/offload-stats-show` (userspace datapath): it answers when the flow API is on
///    and fails with `retrieving offload statistics (Invalid argument)` when it is off;
/// 3. otherwise (kernel datapath, which has no offload statistics): `hw-offload=true` in
///    OVSDB and ovs-vswitchd has applied the configuration (`cur_cfg >= next_cfg`). This
///    misses one case: `hw-offload` switched off without a restart still reads inactive.
async fn offload_active(ovs: &OvsClients, root: &ovsdb::OpenVswitch) -> bool {
    let configured = root
        .other_config
        .get(HW_OFFLOAD)
        .is_some_and(|v| v == "true");
    match ovs
        .vswitchd
        .command("dpctl/offload-stats-show")
        .execute()
        .await
    {
        Ok(_) => true,
        Err(unixctl::Error::Command { message, .. })
            if message.contains("retrieving offload statistics")
                && message.contains("Invalid argument") =>
        {
            false
        }
        Err(e) if e.is_transient() => {
            tracing::debug!(error = %e, "ovs-vswitchd not answering; offload inactive");
            false
        }
        Err(e) => {
            tracing::debug!(error = %e, "no offload statistics; judging from OVSDB");
            configured && root.cur_cfg >= root.next_cfg
        }
    }
}
