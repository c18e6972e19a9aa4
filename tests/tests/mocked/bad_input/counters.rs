//! Bad input rows of the Counters service: selectors that would escape sysfs, intervals out
//! of range.

use dpu_proto::pbjson_types::Duration;
use dpu_proto::v1::{self, counter_selector::Selector};

use super::specs::*;
use super::values::*;
use super::Req;

pub(super) fn rows(add: &mut impl FnMut(&'static str, &str, String, Req)) {
    // ---- Counters: selectors that would escape sysfs, intervals out of range.
    let mut selectors: Vec<(String, Selector)> = Vec::new();
    for device in [
        "..",
        "../../etc",
        "mlx5_0/../x",
        "mlx5_0\0",
        "a b",
        &long(1000),
    ] {
        selectors.push((
            "selectors[0]".into(),
            Selector::Rdma(v1::RdmaSelector {
                device: device.to_owned(),
                port: 1,
            }),
        ));
        selectors.push((
            "selectors[0]".into(),
            Selector::Block(v1::BlockSelector {
                device: device.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0]".into(),
        Selector::Rdma(v1::RdmaSelector {
            device: String::new(),
            port: 1,
        }),
    ));
    for ifname in [
        "..",
        ".",
        "../../etc",
        "a/b",
        "a b",
        "eth0\0",
        "eth0;reboot",
        "$(reboot)",
        "`id`",
        "pf0hpf|x",
        &long(16),
        &long(1000),
    ] {
        selectors.push((
            "selectors[0]".into(),
            Selector::Netdev(v1::NetdevSelector {
                ifname: ifname.to_owned(),
            }),
        ));
        selectors.push((
            "selectors[0]".into(),
            Selector::Tc(v1::TcSelector {
                ifname: ifname.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0].tc.ifname".into(),
        Selector::Tc(v1::TcSelector {
            ifname: String::new(),
        }),
    ));
    for volume in [
        "..",
        "../../etc/passwd",
        "volumes/../x",
        "a/b",
        "a;reboot",
        "a\0",
    ] {
        selectors.push((
            "selectors[0].volumes.volume".into(),
            Selector::Volumes(v1::VolumeSelector {
                volume: volume.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0].ovs_flows.filter".into(),
        Selector::OvsFlows(v1::OvsFlowSelector { filter: 99 }),
    ));
    for (field, selector) in selectors {
        let one = vec![v1::CounterSelector {
            selector: Some(selector.clone()),
        }];
        add(
            "Snapshot",
            &field,
            format!("{selector:?}"),
            Req::Snapshot(v1::SnapshotRequest {
                selectors: one.clone(),
            }),
        );
        add(
            "Watch",
            &field,
            format!("{selector:?}"),
            Req::Watch(v1::WatchRequest {
                selectors: one,
                interval: Some(duration(1, 0)),
                max_snapshots: 1,
            }),
        );
    }
    // The index names the bad one among good ones.
    add(
        "Snapshot",
        "selectors[1]",
        "good then ../..".into(),
        Req::Snapshot(v1::SnapshotRequest {
            selectors: vec![
                v1::CounterSelector {
                    selector: Some(Selector::Netdev(v1::NetdevSelector {
                        ifname: "pf0hpf".to_owned(),
                    })),
                },
                v1::CounterSelector {
                    selector: Some(Selector::Block(v1::BlockSelector {
                        device: "../..".to_owned(),
                    })),
                },
            ],
        }),
    );
    add(
        "Snapshot",
        "selectors[0]",
        "no selector set".into(),
        Req::Snapshot(v1::SnapshotRequest {
            selectors: vec![v1::CounterSelector { selector: None }],
        }),
    );
    let mut intervals: Vec<(String, Option<Duration>)> = vec![("missing".into(), None)];
    for (seconds, nanos) in [
        (0, 0),
        (0, 1_000),
        (-1, 0),
        (0, -1),
        (86_400 * 365, 0),
        (i64::MAX, 0),
        (i64::MIN, 0),
    ] {
        intervals.push((
            format!("{seconds}s{nanos}ns"),
            Some(duration(seconds, nanos)),
        ));
    }
    for (what, interval) in intervals {
        add(
            "Watch",
            "interval",
            what,
            Req::Watch(v1::WatchRequest {
                selectors: Vec::new(),
                interval,
                max_snapshots: 1,
            }),
        );
    }
}
