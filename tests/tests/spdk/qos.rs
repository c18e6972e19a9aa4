//! QoS limits on a volume through the agent onto real SPDK: set with `dpuctl storage qos`,
//! read back with SPDK's own `rpc.py bdev_get_bdevs` (`assigned_rate_limits`), replaced as a
//! whole, put back by the reconciler after a change behind the agent's back and after an
//! SPDK restart, cleared; and every key's bad values refused before anything is applied.

use std::time::Duration;

use dpu_tests::spdk::REMOTE_NQN;
use serde_json::Value;

use crate::{bdev, bench, json_u64, ok, refused, wait_until, Bench};

/// How long the reconciler (every second here) may take to repair SPDK.
const REPAIR_TIMEOUT: Duration = Duration::from_secs(60);

/// `assigned_rate_limits` of `volume` per `rpc.py bdev_get_bdevs -b`: rw IOPS, rw, read and
/// write MiB/s.
/// The agent stopped (SIGSTOP) until this is dropped (SIGCONT), whatever the test does
/// meanwhile.
struct Frozen(nix::unistd::Pid);

impl Frozen {
    fn agent(bench: &Bench) -> Self {
        let pid = nix::unistd::Pid::from_raw(
            i32::try_from(bench.agent.pid()).expect("a pid fits an i32"),
        );
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("stop the agent");
        Self(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.0, nix::sys::signal::Signal::SIGCONT);
    }
}

fn spdk_limits(bench: &Bench, volume: &str) -> Result<[u64; 4], String> {
    let bdev = bdev(&bench.dpu, volume).ok_or_else(|| format!("SPDK has no bdev {volume}"))?;
    let limits = &bdev["assigned_rate_limits"];
    let mut out = [0; 4];
    for (slot, key) in out.iter_mut().zip([
        "rw_ios_per_sec",
        "rw_mbytes_per_sec",
        "r_mbytes_per_sec",
        "w_mbytes_per_sec",
    ]) {
        *slot = limits[key]
            .as_u64()
            .ok_or_else(|| format!("no {key} in {bdev}"))?;
    }
    Ok(out)
}

/// The `qos` and `appliedQos` of volume `volumes/r0n1` in `dpuctl -o json storage list`.
fn listed_qos(bench: &Bench) -> (Value, Value) {
    let listing = bench.ctl_json(&["storage", "list"]);
    let volume = listing["remoteControllers"][0]["status"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "volumes/r0n1")
        .cloned()
        .unwrap_or_else(|| panic!("volumes/r0n1 not listed: {listing}"));
    (volume["qos"].clone(), volume["appliedQos"].clone())
}

fn limits_json(limits: &Value) -> [u64; 4] {
    [
        json_u64(&limits["rwIosPerSec"]),
        json_u64(&limits["rwMbytesPerSec"]),
        json_u64(&limits["rMbytesPerSec"]),
        json_u64(&limits["wMbytesPerSec"]),
    ]
}

#[test]
fn qos_is_applied_read_back_by_spdk_reconciled_and_cleared() {
    let mut bench = bench!("reconcile_interval = 1");
    ok(&bench.attach("r0", "127.0.0.1", bench.remote.port(), REMOTE_NQN, &[]));
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok([0, 0, 0, 0]));

    let text = ok(&bench.ctl(&[
        "storage",
        "qos",
        "volumes/r0n1",
        "--iops",
        "2000",
        "--read-mbps",
        "10",
    ]));
    assert!(
        text.contains(
            "set volumes/r0n1 QoS: 2000 IOPS, read 10 MiB/s (in force: 2000 IOPS, read 10 MiB/s)"
        ),
        "{text}"
    );
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok([2000, 0, 10, 0]));
    let (asked, applied) = listed_qos(&bench);
    assert_eq!(limits_json(&asked), [2000, 0, 10, 0], "{asked}");
    assert_eq!(limits_json(&applied), [2000, 0, 10, 0], "{applied}");
    let table = ok(&bench.ctl(&["storage", "list"]));
    assert!(
        table.contains("volumes/r0n1") && table.contains("2000 IOPS, read 10 MiB/s"),
        "{table}"
    );

    // The whole set is replaced: SPDK alone would keep the IOPS and read limits beside a
    // new write limit (a partial update), the agent sends all four keys.
    ok(&bench.ctl(&["storage", "qos", "r0n1", "--write-mbps", "5"]));
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok([0, 0, 0, 5]));

    // Lifted behind the agent's back with SPDK's own client: the reconciler sets it again.
    // The agent is frozen while the lift is made and checked, so a reconcile cannot put
    // the limit back before the check (on a slow machine it did, within rpc.py's start).
    {
        let _frozen = Frozen::agent(&bench);
        bench
            .dpu
            .rpc("bdev_set_qos_limit", &["r0n1", "--w-mbytes-per-sec", "0"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spdk_limits(&bench, "r0n1"), Ok([0, 0, 0, 0]));
    }
    wait_until(REPAIR_TIMEOUT, || match spdk_limits(&bench, "r0n1")? {
        [0, 0, 0, 5] => Ok(()),
        other => Err(format!("SPDK has {other:?}")),
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));

    // SPDK restarted: the bdev comes back (re-attached) without limits, then with them.
    bench.dpu.restart().unwrap_or_else(|e| panic!("{e}"));
    wait_until(REPAIR_TIMEOUT, || match spdk_limits(&bench, "r0n1")? {
        [0, 0, 0, 5] => Ok(()),
        other => Err(format!("SPDK has {other:?}")),
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));

    // Cleared: SPDK has no limits, the listing none asked and none in force.
    let text = ok(&bench.ctl(&["storage", "qos", "volumes/r0n1", "--clear"]));
    assert!(
        text.contains("cleared volumes/r0n1 QoS: unlimited (in force: unlimited)"),
        "{text}"
    );
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok([0, 0, 0, 0]));
    let (asked, applied) = listed_qos(&bench);
    assert!(asked.is_null(), "{asked}");
    assert_eq!(limits_json(&applied), [0, 0, 0, 0], "{applied}");
    let table = ok(&bench.ctl(&["storage", "list"]));
    assert!(!table.contains("MiB/s"), "{table}");
    // And it stays cleared: the reconciler does not put it back.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok([0, 0, 0, 0]));
}

#[test]
fn bad_qos_input_is_refused_before_anything_is_applied() {
    let bench = bench!();
    ok(&bench.attach("r0", "127.0.0.1", bench.remote.port(), REMOTE_NQN, &[]));
    ok(&bench.ctl(&["storage", "qos", "volumes/r0n1", "--iops", "3000"]));
    let held = [3000, 0, 0, 0];
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok(held));

    // (arguments, gRPC code, what the message must say). SPDK itself would accept the
    // first five and round or clamp them (docs/reference/storage.md §7.2).
    let table: &[(&[&str], &str, &str)] = &[
        (
            &["volumes/r0n1", "--iops", "1500"],
            "InvalidArgument",
            "limits.rw_ios_per_sec: 1500 is not a multiple of 1000 (SPDK would round it up to 2000)",
        ),
        (
            &["volumes/r0n1", "--iops", "1"],
            "InvalidArgument",
            "limits.rw_ios_per_sec: 1 is not a multiple of 1000",
        ),
        (
            &["volumes/r0n1", "--iops", "18446744073709551615"],
            "InvalidArgument",
            "limits.rw_ios_per_sec: 18446744073709551615 is not a multiple of 1000",
        ),
        (
            &["volumes/r0n1", "--rw-mbps", "17592186044416"],
            "InvalidArgument",
            "limits.rw_mbytes_per_sec: 17592186044416 is above SPDK's largest bandwidth limit 17592186044415",
        ),
        (
            &["volumes/r0n1", "--read-mbps", "17592186044416"],
            "InvalidArgument",
            "limits.r_mbytes_per_sec: 17592186044416 is above",
        ),
        (
            &["volumes/r0n1", "--write-mbps", "18446744073709551615"],
            "InvalidArgument",
            "limits.w_mbytes_per_sec: 18446744073709551615 is above",
        ),
        (
            &["volumes/r0n1", "--iops", "1500", "--dry-run"],
            "InvalidArgument",
            "limits.rw_ios_per_sec",
        ),
        (
            &["volumes/r0n1", "--iops", "2000", "--read-mbps", "17592186044416"],
            "InvalidArgument",
            "limits.r_mbytes_per_sec",
        ),
        (
            &["volumes/a/b", "--iops", "1000"],
            "InvalidArgument",
            "volume:",
        ),
        (
            &["volumes/r9n1", "--iops", "1000"],
            "NotFound",
            "volumes/r9n1 is not a volume of a remote controller this agent attached",
        ),
        // A volume of r0 that SPDK does not have: refused by SPDK (-19), rolled back.
        (
            &["volumes/r0n2", "--iops", "1000"],
            "NotFound",
            "No such device",
        ),
    ];
    for (args, code, says) in table {
        let mut all = vec!["storage", "qos"];
        all.extend_from_slice(args);
        let (got_code, message) = refused(&bench.ctl(&all));
        assert_eq!(got_code, *code, "{args:?}: {message}");
        assert!(message.contains(says), "{args:?}: {message}");
        assert_eq!(spdk_limits(&bench, "r0n1"), Ok(held), "{args:?}");
    }
    // The refused volume left nothing in the desired state.
    let listing = bench.ctl_json(&["storage", "list"]);
    let text = listing.to_string();
    assert!(!text.contains("r0n2"), "{text}");

    // What never reaches the agent: negative numbers and --clear with a limit (usage, 2).
    for args in [
        &["volumes/r0n1", "--iops", "-1000"][..],
        &["volumes/r0n1", "--clear", "--iops", "1000"][..],
        &["volumes/r0n1"][..],
    ] {
        let mut all = vec!["storage", "qos"];
        all.extend_from_slice(args);
        let out = bench.ctl(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Usage"), "{args:?}: {stderr}");
    }

    // A dry run answers what would be set and changes nothing.
    let text = ok(&bench.ctl(&[
        "storage",
        "qos",
        "volumes/r0n1",
        "--iops",
        "5000",
        "--dry-run",
    ]));
    assert!(
        text.contains("would set volumes/r0n1 QoS: 5000 IOPS"),
        "{text}"
    );
    assert_eq!(spdk_limits(&bench, "r0n1"), Ok(held));
}
