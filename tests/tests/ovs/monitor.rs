//! The monitor cache: follows changes made behind our back and survives an ovsdb-server
//! restart (reconnect + re-monitor).

use std::time::Duration;

use crate::{client, daemons};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_sees_ovs_vsctl_changes_and_recovers_after_ovsdb_restart() {
    let mut daemons = daemons!();
    let ovs = client(&daemons, WAIT);
    let cache = ovs.monitor();
    let first = cache.wait_synced(WAIT).await.expect("initial sync");
    assert_eq!(first.syncs, 1);
    assert!(first.bridges().is_empty());
    assert!(first.open_vswitch().is_some(), "root row cached");

    daemons
        .vsctl(&[
            "add-br",
            "brv",
            "--",
            "set",
            "Bridge",
            "brv",
            "datapath_type=netdev",
        ])
        .expect("ovs-vsctl add-br");
    cache
        .wait_for("show brv", WAIT, |v| {
            v.bridge("brv").is_some_and(|b| b.datapath_type == "netdev")
        })
        .await
        .expect("cache sees brv");
    // ovs-vswitchd's own writes (the ofport it assigned) arrive too.
    cache
        .wait_for("show brv's ofport", WAIT, |v| {
            let bridge = v.bridge("brv");
            let local = bridge.as_ref().and_then(|b| b.port("brv"));
            local
                .and_then(|p| p.interfaces.first())
                .and_then(|i| i.ofport)
                == Some(65534)
        })
        .await
        .expect("ofport cached");

    daemons.restart_ovsdb().expect("restart ovsdb-server");
    let resynced = cache
        .wait_for("re-sync after the restart", WAIT, |v| v.syncs >= 2)
        .await
        .expect("re-monitored");
    assert!(resynced.bridge("brv").is_some(), "the database persisted");

    // Typed calls reconnect by themselves, and the new monitor delivers their effect.
    ovs.bridges()
        .add("brw")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br after the restart");
    cache
        .wait_for("show brw", WAIT, |v| v.bridge("brw").is_some())
        .await
        .expect("cache follows the new connection");
    daemons.vsctl(&["del-br", "brv"]).expect("ovs-vsctl del-br");
    cache
        .wait_for("drop brv", WAIT, |v| v.bridge("brv").is_none())
        .await
        .expect("deletion seen");
}
