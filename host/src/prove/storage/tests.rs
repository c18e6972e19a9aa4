//! The storage proof's verdicts from in-memory counters: the positive case and every
//! negative control of docs/proofs.md, through [`judge`] with one trial.

use std::path::PathBuf;

use dpu_probe::disk_identity::{BlockDisk, NamespaceIdentity};
use dpu_probe::snapshot::Unit;

use super::*;
use crate::accounting::measure::fixture::Scenario;
use crate::accounting::{Outcome, Verdict};
use crate::prove::binding::VolumeIdentity;

/// The read: 64 MiB.
const N: u64 = 64 << 20;
const VOLUME: &str = "volumes/r0n1";
const UUID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
/// The DPU's RDMA port towards the remote target (counts bytes).
const DPU_PORT: &str = "rdmaDevices/mlx5_0/ports/1";
/// A soft-RoCE port: packet counts only.
const SOFT_ROCE: &str = "rdmaDevices/rxe0/ports/1";
/// The host's own RDMA port (bound to one of its netdevs).
const HOST_PORT: &str = "rdmaDevices/mlx5_2/ports/1";
/// The host's data NIC.
const HOST_NIC: &str = "netdevs/ens1f0np0";

const SERVED: &str = "DPU volumes/r0n1 served the read";
const DPU_RDMA: &str = "DPU RDMA ports received the data";
const HOST_NICS: &str = "host NICs did not carry the data";
const HOST_RDMA: &str = "host RDMA ports did not carry the data";

fn target(rdma: bool) -> Target {
    let identity = NamespaceIdentity::from_parts(Some(UUID), None, None).expect("uuid");
    Target {
        volume: VOLUME.to_owned(),
        rdma,
        uplinks: Vec::new(),
        binding: Binding {
            device: PathBuf::from("/dev/nvme0n1"),
            disk: BlockDisk {
                name: "nvme0n1".to_owned(),
                partition: None,
                dev: (259, 0),
                identity: identity.clone(),
            },
            agreed_on: vec!["uuid"],
            matched: VolumeIdentity {
                identity,
                source: "disk /dev/nvme0n1 on the agent's machine".to_owned(),
                host_pci_functions: Vec::new(),
            },
            pci_function: None,
        },
    }
}

/// How much each path carried over the workload.
#[derive(Debug, Clone, Copy)]
struct Moved {
    volume: u64,
    dpu_rdma: u64,
    host_nic: u64,
    host_rdma: u64,
}

/// What a read through the DPU moves: the volume and the DPU's RDMA port about N, the
/// host nothing but a little gRPC.
const THROUGH_THE_DPU: Moved = Moved {
    volume: N + 8192,
    dpu_rdma: N + N / 50,
    host_nic: 0,
    host_rdma: 0,
};

/// Nothing moved anywhere.
const STILL: Moved = Moved {
    volume: 0,
    dpu_rdma: 0,
    host_nic: 0,
    host_rdma: 0,
};

/// The host side and the DPU volume, without the DPU's RDMA counters.
fn base(moved: Moved) -> Scenario {
    Scenario::default()
        .grows(
            Side::Dpu,
            Source::Volume,
            VOLUME,
            "bytes_read",
            Unit::Bytes,
            (3 << 30, moved.volume),
        )
        // Loopback is not a path to the target: even a busy one is not counted.
        .grows(
            Side::Host,
            Source::Netdev,
            "netdevs/lo",
            "rx_bytes",
            Unit::Bytes,
            (77, 2 * N),
        )
        // The gRPC session to the agent: a few KB.
        .grows(
            Side::Host,
            Source::Netdev,
            "netdevs/eno1",
            "rx_bytes",
            Unit::Bytes,
            (10_000, 2048),
        )
        .grows(
            Side::Host,
            Source::Netdev,
            HOST_NIC,
            "rx_bytes",
            Unit::Bytes,
            (5 << 20, moved.host_nic),
        )
        .grows(
            Side::Host,
            Source::Rdma,
            HOST_PORT,
            "port_rcv_data",
            Unit::Bytes,
            (1 << 20, moved.host_rdma),
        )
        // The lab: the DPU's soft-RoCE port is visible on the host too, and carries the
        // read, but is not the host's own.
        .grows(
            Side::Host,
            Source::Rdma,
            "rdmaDevices/rxe0/ports/1",
            "port_rcv_data",
            Unit::Bytes,
            (0, moved.dpu_rdma),
        )
}

/// A DPU whose RDMA port counts bytes.
fn scenario(moved: Moved) -> Scenario {
    base(moved).grows(
        Side::Dpu,
        Source::Rdma,
        DPU_PORT,
        "port_rcv_data",
        Unit::Bytes,
        (9 << 30, moved.dpu_rdma),
    )
}

/// The host's own RDMA ports: `own`, of which `without_netdev` are bound to no netdev.
fn ports(own: &[&str], without_netdev: &[&str]) -> HostRdmaPorts {
    HostRdmaPorts {
        own: own.iter().map(|p| (*p).to_owned()).collect(),
        without_netdev: without_netdev.iter().map(|p| (*p).to_owned()).collect(),
        unreadable: None,
    }
}

/// [`judge`] of one window of `n` bytes: the verdict, the lines and the notes.
fn judge_one<T>(
    target: &Target,
    n: u64,
    m: &Trials<T>,
    host_rdma: &HostRdmaPorts,
    waive: &[StorageWaiver],
) -> (Verdict, Vec<Line>, Vec<String>) {
    let judged = judge(target, &[n], m, host_rdma, waive);
    assert_eq!(
        judged.per_trial,
        [judged.verdict],
        "one trial is the verdict"
    );
    (judged.verdict, judged.lines, judged.notes)
}

fn judged(target: &Target, scenario: &Scenario) -> (Verdict, Vec<Line>, Vec<String>) {
    judge_one(
        target,
        N,
        &scenario.measured(()),
        &ports(&[HOST_PORT], &[]),
        &[],
    )
}

fn names(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.expectation.name.as_str()).collect()
}

/// The lines not met, with their reasons.
fn failed(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|l| match &l.outcome {
            Outcome::NotMet(why) => Some((l.expectation.name.as_str(), why.as_str())),
            _ => None,
        })
        .collect()
}

/// The lines that could not be judged, with their reasons.
fn inconclusive(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|l| match &l.outcome {
            Outcome::Inconclusive(why) => Some((l.expectation.name.as_str(), why.as_str())),
            _ => None,
        })
        .collect()
}

/// The names of the lines not met.
fn failed_names(lines: &[Line]) -> Vec<&str> {
    failed(lines).into_iter().map(|(name, _)| name).collect()
}

fn line<'a>(lines: &'a [Line], name: &str) -> &'a Line {
    lines
        .iter()
        .find(|l| l.expectation.name == name)
        .unwrap_or_else(|| panic!("no line {name}: {:?}", names(lines)))
}

#[test]
fn a_read_through_the_dpu_is_proven() {
    let (verdict, lines, notes) = judged(&target(true), &scenario(THROUGH_THE_DPU));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(names(&lines), [SERVED, DPU_RDMA, HOST_NICS, HOST_RDMA]);
    assert!(notes.is_empty(), "{notes:?}");
    let served = line(&lines, SERVED);
    assert_eq!(served.expectation.rule, Rule::Between(N, N + N / 2));
    assert_eq!(served.delta, Some(N + 8192));
    assert_eq!(served.background, Some(0));
    let rdma = line(&lines, DPU_RDMA);
    assert_eq!(rdma.expectation.select.counter, "port_rcv_data");
    assert_eq!(rdma.expectation.rule, Rule::AtLeast(N));
    assert_eq!(rdma.net, Some(N + N / 50));
    // Every host interface but lo; only the host's own RDMA port.
    let nics = &line(&lines, HOST_NICS).expectation;
    assert_eq!(nics.select.objects, ["netdevs/eno1", HOST_NIC]);
    assert_eq!(nics.rule, Rule::AtMost(N / 20));
    assert_eq!(line(&lines, HOST_NICS).net, Some(2048));
    let host_rdma = &line(&lines, HOST_RDMA).expectation;
    assert_eq!(host_rdma.select.objects, [HOST_PORT]);
}

#[test]
fn soft_roce_is_accounted_in_packets() {
    // rxe counts packets only; the lab measured 65,666 for 64 MiB (1024-byte MTU).
    let scenario = base(THROUGH_THE_DPU).grows(
        Side::Dpu,
        Source::RdmaHw,
        SOFT_ROCE,
        "rcvd_pkts",
        Unit::Packets,
        (1_000_000, 65_666),
    );
    let (verdict, lines, notes) = judged(&target(true), &scenario);
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert!(notes.is_empty(), "{notes:?}");
    let rdma = line(&lines, DPU_RDMA);
    assert_eq!(rdma.expectation.select.source, Source::RdmaHw);
    assert_eq!(rdma.expectation.select.objects, [SOFT_ROCE]);
    assert_eq!(rdma.expectation.rule, Rule::AtLeast(N / MAX_ROCE_PAYLOAD));
    assert_eq!(rdma.net, Some(65_666));

    // Fewer packets than N bytes can fill: the data came from somewhere else.
    let short = base(THROUGH_THE_DPU).grows(
        Side::Dpu,
        Source::RdmaHw,
        SOFT_ROCE,
        "rcvd_pkts",
        Unit::Packets,
        (1_000_000, 100),
    );
    let (verdict, lines, _) = judged(&target(true), &short);
    assert_eq!(verdict, Verdict::NotProven);
    let [(name, why)] = failed(&lines)[..] else {
        panic!("{lines:#?}")
    };
    assert_eq!(name, DPU_RDMA);
    assert_eq!(
        why,
        format!(
            "100 is not >= {}: the DPU's RDMA ports did not carry the data: it came from \
             somewhere else (a cache, another path)",
            N / MAX_ROCE_PAYLOAD
        )
    );
}

#[test]
fn the_host_reading_the_target_directly_is_not_proven() {
    // NVMe/RDMA from the host itself: its own RDMA port carried N, the DPU nothing.
    let direct = Moved {
        host_rdma: N + N / 50,
        ..STILL
    };
    let (verdict, lines, _) = judged(&target(true), &scenario(direct));
    assert_eq!(verdict, Verdict::NotProven);
    let why = failed(&lines);
    assert_eq!(failed_names(&lines), [SERVED, DPU_RDMA, HOST_RDMA]);
    assert_eq!(
        why[2].1,
        format!(
            "{} is not <= {}: bytes arrived on the host's own RDMA port: the host read the \
             target directly",
            N + N / 50,
            N / 20
        )
    );
    assert_eq!(
        why[0].1,
        format!(
            "0 is not {N}..{}: the DPU volume did not serve these bytes: the read did not go \
             through the emulated controller",
            N + N / 2
        )
    );
    assert_eq!(line(&lines, HOST_NICS).outcome, Outcome::Met);
}

#[test]
fn the_tcp_path_over_the_host_nic_is_not_proven() {
    // The same file over NVMe/TCP through the host's own network.
    let tcp = Moved {
        host_nic: N + N / 30,
        ..STILL
    };
    let (verdict, lines, _) = judged(&target(true), &scenario(tcp));
    assert_eq!(verdict, Verdict::NotProven);
    let why = failed(&lines);
    assert_eq!(failed_names(&lines), [SERVED, DPU_RDMA, HOST_NICS]);
    // The gRPC session's 2 KB are part of the sum.
    assert_eq!(
        why[2].1,
        format!(
            "{} is not <= {}: bytes crossed the host's own NIC: the read did not go through \
             the emulated controller",
            N + N / 30 + 2048,
            N / 20
        )
    );
    assert_eq!(line(&lines, HOST_RDMA).outcome, Outcome::Met);
}

#[test]
fn a_read_that_missed_the_emulated_controller_is_not_proven() {
    // Offload off, or the wrong device (a local disk, the page cache): the DPU volume is
    // still and so is every path.
    let (verdict, lines, _) = judged(&target(true), &scenario(STILL));
    assert_eq!(verdict, Verdict::NotProven);
    let why = failed(&lines);
    assert_eq!(failed_names(&lines), [SERVED, DPU_RDMA]);
    assert!(
        why[0]
            .1
            .ends_with("the read did not go through the emulated controller"),
        "{}",
        why[0].1
    );
    // Even with the DPU link busy with someone else's N bytes, the volume decides.
    let busy_link = Moved {
        dpu_rdma: N,
        ..STILL
    };
    let (verdict, lines, _) = judged(&target(true), &scenario(busy_link));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(failed_names(&lines), [SERVED]);
    // Twice the bytes (another reader) is not "about N" either.
    let twice = Moved {
        volume: 2 * N,
        ..THROUGH_THE_DPU
    };
    let (verdict, lines, _) = judged(&target(true), &scenario(twice));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(failed_names(&lines), [SERVED]);
}

#[test]
fn a_counter_reset_mid_run_is_inconclusive() {
    // The backend restarted: bytes_read went from 3 GiB down to N / 2.
    let scenario = scenario(THROUGH_THE_DPU).row(
        Side::Dpu,
        Source::Volume,
        VOLUME,
        "bytes_read",
        Unit::Bytes,
        [Some(3 << 30), Some(3 << 30), Some(3 << 30), Some(N / 2)],
    );
    let (verdict, lines, _) = judged(&target(true), &scenario);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            SERVED,
            "bytes_read of volumes/r0n1 went down from 3221225472 to 33554432 (a reset: \
             driver reload, link recreated)"
        )]
    );
    assert_eq!(line(&lines, SERVED).delta, None);
    assert!(failed(&lines).is_empty());
}

#[test]
fn a_counter_missing_after_or_before_is_inconclusive() {
    // The DPU's RDMA port vanished (driver reload) before the after-reading.
    let vanished = base(THROUGH_THE_DPU).row(
        Side::Dpu,
        Source::Rdma,
        DPU_PORT,
        "port_rcv_data",
        Unit::Bytes,
        [Some(9 << 30), Some(9 << 30), Some(9 << 30), None],
    );
    let (verdict, lines, _) = judged(&target(true), &vanished);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            DPU_RDMA,
            "port_rcv_data of rdmaDevices/mlx5_0/ports/1 could not be read after the run"
        )]
    );

    // The volume's counter only exists after the read (the volume was attached late).
    let appeared = scenario(THROUGH_THE_DPU).row(
        Side::Dpu,
        Source::Volume,
        VOLUME,
        "bytes_read",
        Unit::Bytes,
        [None, None, None, Some(N)],
    );
    let (verdict, lines, _) = judged(&target(true), &appeared);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            SERVED,
            "bytes_read of volumes/r0n1 could not be read before the run"
        )]
    );

    // Never there at all: missing, never read as zero.
    let missing = scenario(THROUGH_THE_DPU).row(
        Side::Dpu,
        Source::Volume,
        VOLUME,
        "bytes_read",
        Unit::Bytes,
        [None; 4],
    );
    let (verdict, lines, _) = judged(&target(true), &missing);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            SERVED,
            "counter bytes_read of volumes/r0n1 is missing on the DPU side"
        )]
    );
}

#[test]
fn background_traffic_too_high_in_the_idle_window_is_inconclusive() {
    // Another job reads the volume: N in the 1 s idle window, 2 N during the 1 s read.
    let busy = scenario(THROUGH_THE_DPU).row(
        Side::Dpu,
        Source::Volume,
        VOLUME,
        "bytes_read",
        Unit::Bytes,
        [Some(0), Some(N), Some(2 * N), Some(4 * N)],
    );
    let (verdict, lines, _) = judged(&target(true), &busy);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            SERVED,
            format!(
                "background traffic ({N}) is too large next to the workload ({N}): use a \
                 larger workload or a quieter machine"
            )
            .as_str()
        )]
    );
    let served = line(&lines, SERVED);
    assert_eq!(served.delta, Some(2 * N));
    assert_eq!(served.background, Some(N));
}

/// The DPU uplink the agent routes an NVMe/TCP target out of.
const UPLINK: &str = "p0";
const DPU_UPLINK: &str = "DPU uplink received the data";

/// An NVMe/TCP remote whose agent names `uplinks`.
fn over_tcp(uplinks: &[&str]) -> Target {
    Target {
        uplinks: uplinks.iter().map(|u| (*u).to_owned()).collect(),
        ..target(false)
    }
}

/// The DPU uplink `p0` receiving `bytes` over the window (TCP carries headers too).
fn with_uplink(scenario: Scenario, bytes: u64) -> Scenario {
    scenario.grows(
        Side::Dpu,
        Source::Netdev,
        "netdevs/p0",
        "rx_bytes",
        Unit::Bytes,
        (40 << 30, bytes),
    )
}

#[test]
fn a_remote_over_nvme_tcp_is_proven_by_the_uplink_the_target_is_routed_out_of() {
    let (verdict, lines, notes) = judged(
        &over_tcp(&[UPLINK]),
        &with_uplink(base(THROUGH_THE_DPU), N + N / 30),
    );
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(names(&lines), [SERVED, DPU_UPLINK, HOST_NICS, HOST_RDMA]);
    let uplink = line(&lines, DPU_UPLINK);
    assert_eq!(uplink.expectation.select.objects, ["netdevs/p0"]);
    assert_eq!(uplink.expectation.select.side, Side::Dpu);
    assert_eq!(uplink.net, Some(N + N / 30));
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn a_tcp_read_the_uplink_did_not_carry_is_not_proven() {
    // The volume counted the bytes but the route to the target saw none of them: they
    // came from somewhere else (a cache, another path).
    let (verdict, lines, _) = judged(
        &over_tcp(&[UPLINK]),
        &with_uplink(base(THROUGH_THE_DPU), 4096),
    );
    assert_eq!(verdict, Verdict::NotProven, "{lines:#?}");
    assert_eq!(
        failed(&lines).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [DPU_UPLINK]
    );
}

#[test]
fn an_uplink_the_dpu_snapshot_lacks_is_inconclusive_not_zero() {
    // The agent names p1, but its snapshot has no p1: the line cannot be formed.
    let (verdict, lines, _) = judged(
        &over_tcp(&["p1"]),
        &with_uplink(base(THROUGH_THE_DPU), N + N / 30),
    );
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    let why = inconclusive(&lines);
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].0, DPU_UPLINK);
    assert!(why[0].1.contains("netdevs/p1"), "{why:?}");
}

#[test]
fn a_remote_over_nvme_tcp_without_a_named_uplink_says_it_is_not_accounted() {
    // An agent that cannot tell (a fixture sys root, an older agent): a note, no line.
    let (verdict, lines, notes) = judged(&target(false), &scenario(THROUGH_THE_DPU));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(names(&lines), [SERVED, HOST_NICS, HOST_RDMA]);
    assert!(!lines
        .iter()
        .any(|l| l.expectation.select.side == Side::Dpu
            && l.expectation.select.source == Source::Rdma));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("NVMe/TCP") && notes[0].contains("the DPU uplink is not accounted"),
        "{notes:?}"
    );
    // And an RDMA remote on a DPU without RDMA counters says so too.
    let (verdict, lines, notes) = judged(&target(true), &base(THROUGH_THE_DPU));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(names(&lines), [SERVED, HOST_NICS, HOST_RDMA]);
    assert_eq!(
        notes,
        ["the DPU reports no RDMA port counters; uplink not accounted"]
    );
}

/// An InfiniBand port of the host (no netdev: `gid_attrs/ndevs` is empty for IB).
const IB_PORT: &str = "rdmaDevices/mlx5_3/ports/1";

#[test]
fn a_host_port_without_a_netdev_is_still_watched() {
    // Issue 31 §3: the host reads the target itself over InfiniBand. Its port has no
    // netdev, and the host-RDMA line used to be absent: PROVEN with the data on the
    // host's own port.
    let over_ib = scenario(THROUGH_THE_DPU).grows(
        Side::Host,
        Source::Rdma,
        IB_PORT,
        "port_rcv_data",
        Unit::Bytes,
        (7 << 20, N + N / 50),
    );
    let (verdict, lines, notes) = judge_one(
        &target(true),
        N,
        &over_ib.measured(()),
        &ports(&[HOST_PORT, IB_PORT], &[IB_PORT]),
        &[],
    );
    assert_eq!(verdict, Verdict::NotProven, "{lines:#?}");
    assert_eq!(failed_names(&lines), [HOST_RDMA]);
    assert_eq!(
        line(&lines, HOST_RDMA).expectation.select.objects,
        [HOST_PORT, IB_PORT]
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains(IB_PORT) && n.contains("no netdev")),
        "{notes:?}"
    );
}

#[test]
fn a_host_rdma_control_that_cannot_be_formed_is_a_line_until_waived() {
    // The host has an RDMA port, but no readable counter for it: the only guard against
    // the host reading the target itself cannot be formed. Visible and INCONCLUSIVE.
    let (verdict, lines, _) = judge_one(
        &target(true),
        N,
        &scenario(THROUGH_THE_DPU).measured(()),
        &ports(&[HOST_PORT, IB_PORT], &[IB_PORT]),
        &[],
    );
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    let [(name, why)] = inconclusive(&lines)[..] else {
        panic!("{lines:#?}")
    };
    assert_eq!(name, HOST_RDMA);
    assert!(
        why.contains(IB_PORT) && why.contains("cannot be formed") && why.contains("host-rdma"),
        "{why}"
    );
    // Waived by name: PROVEN, the line shown as waived and the report saying so.
    let (verdict, lines, notes) = judge_one(
        &target(true),
        N,
        &scenario(THROUGH_THE_DPU).measured(()),
        &ports(&[HOST_PORT, IB_PORT], &[IB_PORT]),
        &[StorageWaiver::HostRdma],
    );
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert!(lines
        .iter()
        .any(|l| matches!(l.outcome, Outcome::Waived(_))));
    assert!(
        notes.iter().any(|n| n.starts_with("waived `host-rdma`")),
        "{notes:?}"
    );
    // A waiver never covers a control that can be formed: the host read over its own
    // port is still NOT PROVEN.
    let direct = Moved {
        host_rdma: N + N / 50,
        ..THROUGH_THE_DPU
    };
    let (verdict, lines, notes) = judge_one(
        &target(true),
        N,
        &scenario(direct).measured(()),
        &ports(&[HOST_PORT], &[]),
        &[StorageWaiver::HostRdma],
    );
    assert_eq!(verdict, Verdict::NotProven, "{lines:#?}");
    assert_eq!(failed_names(&lines), [HOST_RDMA]);
    assert!(notes.iter().any(|n| n.contains("not needed")), "{notes:?}");
    // Devices that cannot be listed: the same visible line.
    let unreadable = HostRdmaPorts {
        unreadable: Some("permission denied".to_owned()),
        ..HostRdmaPorts::default()
    };
    let (verdict, lines, _) = judge_one(
        &target(true),
        N,
        &scenario(THROUGH_THE_DPU).measured(()),
        &unreadable,
        &[],
    );
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert!(inconclusive(&lines)[0].1.contains("permission denied"));
}

#[test]
fn a_host_without_rdma_ports_needs_no_rdma_control() {
    let (verdict, lines, notes) = judge_one(
        &target(true),
        N,
        &scenario(THROUGH_THE_DPU).measured(()),
        &HostRdmaPorts::default(),
        &[],
    );
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(names(&lines), [SERVED, DPU_RDMA, HOST_NICS]);
    assert!(
        notes.iter().any(|n| n.contains("no RDMA port of its own")),
        "{notes:?}"
    );
}

#[test]
fn a_burst_in_the_idle_window_cannot_mask_the_host_nic() {
    // Issue 31 §2: 10 MB on the host NIC while the background is measured (1 s), then
    // 69 MB crossing it during the 1 s read. Subtracting the burst made the line met.
    let burst = scenario(THROUGH_THE_DPU).row(
        Side::Host,
        Source::Netdev,
        HOST_NIC,
        "rx_bytes",
        Unit::Bytes,
        [
            Some(0),
            Some(10_000_000),
            Some(10_000_000),
            Some(79_000_000),
        ],
    );
    let (verdict, lines, _) = judged(&target(true), &burst);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    let [(name, why)] = inconclusive(&lines)[..] else {
        panic!("{lines:#?}")
    };
    assert_eq!(name, HOST_NICS);
    assert!(why.contains("own bound"), "{why}");
}

#[test]
fn host_rdma_ports_are_sorted_by_whose_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = |ibdev: &str, ndev: Option<&str>| {
        let base = dir
            .path()
            .join("sys/class/infiniband")
            .join(ibdev)
            .join("ports/1");
        std::fs::create_dir_all(base.join("gids")).expect("mkdir");
        std::fs::create_dir_all(base.join("gid_attrs/ndevs")).expect("mkdir");
        std::fs::write(base.join("state"), "4: ACTIVE\n").expect("state");
        std::fs::write(
            base.join("gids/0"),
            "fe80:0000:0000:0000:0202:c9ff:fe00:0001\n",
        )
        .expect("gid");
        if let Some(ndev) = ndev {
            std::fs::write(base.join("gid_attrs/ndevs/0"), format!("{ndev}\n")).expect("ndev");
        }
    };
    port("mlx5_2", Some("ens1f0np0")); // the host's RoCE port
    port("rxe0", Some("p0")); // the DPU's, seen through a shared kernel (the lab)
    port("mlx5_3", None); // InfiniBand: no netdev
    let host = dpu_probe::snapshot::Snapshot {
        taken_at: std::time::SystemTime::UNIX_EPOCH,
        monotonic_start: Duration::ZERO,
        monotonic_end: Duration::ZERO,
        boot_id: None,
        samples: vec![dpu_probe::snapshot::Sample::cumulative(
            Source::Netdev,
            HOST_NIC,
            "rx_bytes",
            0,
            Unit::Bytes,
        )],
        errors: Vec::new(),
        read: dpu_probe::snapshot::ReadReport::default(),
    };
    let sorted = host_rdma_ports(&SysRoot::new(dir.path()), &host);
    assert_eq!(sorted.own, [HOST_PORT, IB_PORT]);
    assert_eq!(sorted.without_netdev, [IB_PORT]);
    assert_eq!(sorted.unreadable, None);
}

mod trials;
