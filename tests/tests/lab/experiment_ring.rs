//! An A/B/A ring experiment on the real kernel (issue 37): `dpuctl experiment run` on the
//! DPU side sets `p0`'s RX ring 256 → 128 → 256 through ethtool's generic netlink
//! (`ETHTOOL_MSG_RINGS_SET`). `p0` is virtio-net: Debian's 6.1 `virtio_net` resizes a
//! ring when the device offers `VIRTIO_F_RING_RESET`, which QEMU 7.2's `virtio-net-pci`
//! does on the lab's q35 machine (found in the lab: `ethtool -G p0 rx 128` works there).
//!
//! Each trial's "bandwidth" is the RX ring in force as `ethtool -g p0` reads it (another
//! netlink client than dpuctl's), printed as qperf would: so the trials prove what the
//! kernel had during each phase (256 in A, 128 in B), and the verdict is REGRESSION
//! (B's 1.024 "Gb/s" against A's 2.048) with no noise to hide behind.
//!
//! Asserted, on the real kernel: every trial saw its phase's ring, the ring is back at
//! 256 after a normal end with no journal left; a B past the driver's maximum (4096 >
//! 256) is refused naming both numbers, with the ring untouched; and a run killed with
//! SIGKILL in phase B leaves the ring at 128 and the journal on disk, which `dpuctl
//! experiment recover` undoes.

use serde_json::Value;

use crate::{shown, Lab};

/// The measurement: the RX ring in force, as a qperf `tcp_bw` line in MB/sec.
const RX_SCRIPT: &str = "\
rx=$(ethtool -g p0 | awk '/^Current/ {c = 1} c && /^RX:/ {print $2; exit}')
printf 'tcp_bw:\\n    bw  =  %s MB/sec\\n' \"$rx\"
";

fn plan(trials: u32, b: u32) -> String {
    format!(
        "trials = {trials}\n[measurement]\nkind = \"command\"\n\
         argv = [\"sh\", \"/tmp/exp/rx.sh\"]\nparser = \"qperf\"\n\
         [metric]\nbetter = \"higher\"\n\
         [knob]\nkind = \"ring\"\ninterface = \"p0\"\nring = \"rx\"\na = 256\nb = {b}\n"
    )
}

/// `p0`'s RX ring in force, by `ethtool -g`.
fn rx_ring(lab: &Lab) -> String {
    let (code, out, err) = lab.run(
        "bluefield",
        "dpu",
        "ethtool -g p0 | awk '/^Current/ {c = 1} c && /^RX:/ {print $2; exit}'",
    );
    assert_eq!(code, 0, "{err}");
    out.trim().to_owned()
}

pub(crate) fn a_ring_experiment_on_virtio_net_sets_the_rx_ring_and_puts_it_back(lab: &Lab) {
    let dpu = |script: &str| lab.run("bluefield", "dpu", script);
    let (code, _, err) = dpu(&format!(
        "mkdir -p /tmp/exp && cat > /tmp/exp/rx.sh <<'SCRIPT'\n{RX_SCRIPT}SCRIPT\n\
         cat > /tmp/exp/ring.toml <<'PLAN'\n{}PLAN\n\
         cat > /tmp/exp/ring-past-max.toml <<'PLAN'\n{}PLAN\n\
         cat > /tmp/exp/ring-long.toml <<'PLAN'\n{}PLAN",
        plan(3, 128),
        plan(3, 4096),
        plan(40, 128)
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(rx_ring(lab), "256", "the lab's p0 starts at its maximum");

    // A normal end: each phase's trials saw its ring; the ring is back, no journal.
    let (code, stdout, stderr) =
        dpu("dpuctl -o json experiment run /tmp/exp/ring.toml --journal /tmp/exp/ring.json");
    assert_eq!(code, 0, "a verdict\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"));
    assert_eq!(report["analysis"]["verdict"], "REGRESSION", "{report:#}");
    let trials = report["trials"].as_array().expect("trials");
    assert_eq!(trials.len(), 9, "{report:#}");
    for trial in trials {
        let in_b = trial["phase"].as_str().is_some_and(|p| p.starts_with('B'));
        // MB/sec x 8 / 1000 = Gb/s: 256 -> 2.048, 128 -> 1.024.
        let expected = if in_b { 1.024 } else { 2.048 };
        let value = trial["value"].as_f64().expect("a value");
        assert!((value - expected).abs() < 1e-9, "{trial:#}");
    }
    assert!(stderr.contains("phase B1: 128"), "{stderr}");
    assert!(stderr.contains("rx ring of p0 restored to 256"), "{stderr}");
    assert_eq!(rx_ring(lab), "256");
    let (code, _, _) = dpu("test -e /tmp/exp/ring.json");
    assert_ne!(code, 0, "the journal was removed");
    shown(&format!(
        "[lab] ring experiment: {}",
        report["analysis"]["summary"]
    ));

    // Past the driver's maximum: refused naming the value and the maximum, ring untouched.
    let (code, _, stderr) =
        dpu("dpuctl experiment run /tmp/exp/ring-past-max.toml --journal /tmp/exp/ring.json");
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("4096 is above the driver's maximum of 256 for the rx ring of p0"),
        "{stderr}"
    );
    assert_eq!(rx_ring(lab), "256");
    let (code, _, _) = dpu("test -e /tmp/exp/ring.json");
    assert_ne!(code, 0, "nothing left to recover");

    // SIGKILL in phase B: the ring stays at 128 with the journal on disk; recover undoes it.
    let (code, out, err) = dpu(
        "dpuctl experiment run /tmp/exp/ring-long.toml --journal /tmp/exp/ring.json \
         2> /tmp/exp/long.err > /dev/null & pid=$!\n\
         for i in $(seq 600); do grep -q 'B1 trial 1:' /tmp/exp/long.err && break; sleep 0.1; done\n\
         kill -9 $pid; wait $pid; cat /tmp/exp/long.err",
    );
    assert!(out.contains("B1 trial 1:"), "exit {code}: {out}{err}");
    assert_eq!(rx_ring(lab), "128", "SIGKILL leaves B in force: {out}");
    let (code, _, _) = dpu("test -e /tmp/exp/ring.json");
    assert_eq!(code, 0, "the journal stays for recover");
    let (code, out, err) = dpu("dpuctl experiment recover --journal /tmp/exp/ring.json");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("rx ring of p0"),
        "{out}{err}"
    );
    assert_eq!(rx_ring(lab), "256");
    let (code, _, _) = dpu("test -e /tmp/exp/ring.json");
    assert_ne!(code, 0, "recover removed the journal");
}
