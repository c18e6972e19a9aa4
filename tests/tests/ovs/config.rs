//! `Open_vSwitch.other_config` changes: stored as `mutate`s, confirmed through `cur_cfg`,
//! with the restart-only keys reported; and a clear error when nobody applies them.

use std::time::Duration;

use dpu_ovs::ovsdb::Error;

use crate::{client, daemons, unquote};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hw_offload_and_max_idle_are_set_applied_and_removed() {
    let daemons = daemons!();
    let ovs = client(&daemons, Duration::from_secs(20));
    // A key someone else set must survive our changes (no whole-map rewrite).
    daemons
        .vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "other_config:stats-update-interval=6000",
        ])
        .expect("ovs-vsctl set");

    let change = ovs
        .other_config()
        .set("hw-offload", "true")
        .execute()
        .await
        .expect("hw-offload");
    assert_eq!(
        (change.previous, change.value.as_deref()),
        (None, Some("true"))
    );
    assert!(change.restart_required, "hw-offload is read at start-up");
    assert!(change.applied.confirmed);
    let max_idle = ovs
        .other_config()
        .set("max-idle", "5000")
        .execute()
        .await
        .expect("max-idle");
    assert!(!max_idle.restart_required, "max-idle applies at run time");

    let get = |key: &str| {
        let column = format!("other_config:{key}");
        unquote(
            &daemons
                .vsctl(&["get", "Open_vSwitch", ".", &column])
                .expect("get"),
        )
    };
    assert_eq!(get("hw-offload"), "true");
    assert_eq!(get("max-idle"), "5000");
    assert_eq!(get("stats-update-interval"), "6000");
    let cur_cfg = daemons
        .vsctl(&["get", "Open_vSwitch", ".", "cur_cfg"])
        .expect("get");
    let cur_cfg: i64 = cur_cfg.trim().parse().expect("integer");
    assert!(
        Some(cur_cfg) >= max_idle.applied.next_cfg,
        "{cur_cfg} {max_idle:?}"
    );
    // Enabling offload is latched by ovs-vswitchd at run time (lib/netdev-offload.c);
    // disabling it again is what needs the restart.
    assert!(
        daemons.vswitchd_log().contains("netdev: Flow API Enabled"),
        "{}",
        daemons.vswitchd_log()
    );
    assert_eq!(
        ovs.other_config().get("max-idle").await.expect("get"),
        Some("5000".to_owned())
    );

    // Same value again: committed and confirmed, but nothing changed, no restart needed.
    let same = ovs.other_config().set("hw-offload", "true").execute().await;
    let same = same.expect("same value");
    assert_eq!(same.previous.as_deref(), Some("true"));
    assert!(!same.restart_required);

    let removed = ovs
        .other_config()
        .remove("max-idle")
        .execute()
        .await
        .expect("remove");
    assert_eq!(removed.previous.as_deref(), Some("5000"));
    let all = ovs.other_config().get_all().await.expect("get_all");
    assert!(!all.contains_key("max-idle"), "{all:?}");
    assert_eq!(all.get("hw-offload").map(String::as_str), Some("true"));

    let err = ovs
        .other_config()
        .set("max-idle", "100")
        .execute()
        .await
        .expect_err("below the minimum");
    assert!(matches!(err, Error::InvalidValue { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ovs_vswitchd_a_change_is_stored_but_not_applied() {
    let daemons = daemons!(start_without_vswitchd);
    let ovs = client(&daemons, Duration::from_millis(500));
    let err = ovs
        .other_config()
        .set("max-idle", "5000")
        .execute()
        .await
        .expect_err("nobody applies it");
    assert!(
        matches!(
            err,
            Error::NotApplied {
                cur_cfg: Some(0),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("is ovs-vswitchd running"), "{err}");
    assert!(err.is_transient());
    let stored = daemons.vsctl(&["get", "Open_vSwitch", ".", "other_config:max-idle"]);
    assert_eq!(unquote(&stored.expect("get")), "5000");
    // `no_wait` returns at commit.
    let change = ovs
        .other_config()
        .set("max-revalidator", "1000")
        .no_wait()
        .execute()
        .await
        .expect("no_wait");
    assert!(change.applied.changed && !change.applied.confirmed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_keys_change_together_or_not_at_all() {
    let daemons = daemons!();
    let ovs = client(&daemons, Duration::from_secs(20));
    let get = |key: &str| {
        let column = format!("other_config:{key}");
        daemons
            .vsctl(&["get", "Open_vSwitch", ".", &column])
            .map(|v| unquote(&v))
            .ok()
    };

    // A bad value for the second key: nothing at all is written.
    let err = ovs
        .other_config()
        .update([
            ("max-idle".to_owned(), Some("7000".to_owned())),
            ("hw-offload".to_owned(), Some("yes".to_owned())),
        ])
        .execute()
        .await
        .expect_err("hw-offload=yes is not a boolean");
    assert!(err.to_string().contains("hw-offload"), "{err}");
    assert_eq!(get("max-idle"), None, "the first key was not half-applied");

    // Both keys in one transaction: one next_cfg, both visible to ovs-vsctl.
    let changes = ovs
        .other_config()
        .update([
            ("max-idle".to_owned(), Some("7000".to_owned())),
            ("tc-policy".to_owned(), Some("skip_hw".to_owned())),
        ])
        .execute()
        .await
        .expect("update");
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].applied.next_cfg, changes[1].applied.next_cfg);
    assert!(changes.iter().all(|c| c.applied.confirmed));
    assert_eq!(get("max-idle").as_deref(), Some("7000"));
    assert_eq!(get("tc-policy").as_deref(), Some("skip_hw"));
}
