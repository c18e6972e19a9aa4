//! The `ring` and `pfc` knobs on the real kernel, where no virtual device implements
//! them: a veth in a private namespace refuses both, and the refusal is a clear error
//! naming the interface and the kernel's answer, both from dpu-probe's netlink clients
//! (ethtool's `ETHTOOL_MSG_RINGS_SET`, DCB's `DCB_CMD_IEEE_SET`) and from `dpuctl
//! experiment run`, which stops before journaling anything.
//!
//! Negative controls: an interface that does not exist is not reported as "does not
//! support" (ENODEV is a different answer), so the classification is the kernel's, not
//! a blanket label. That a ring *is* set and reverted on a driver that supports it is the
//! lab tier's (virtio-net there, tests/tests/lab/experiment_ring.rs); PFC on hardware is
//! UNVERIFIED (docs/experiments.md).
//!
//! Needs root (namespaces); SKIPs with the reason without it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dpu_probe::dcb::{DcbError, DcbNetlink, IeeePfc};
use dpu_probe::ethtool_netlink::{EthtoolError, EthtoolNetlink, Ring};
use dpu_probe::netlink::NETNS_RUN_DIR;
use dpu_sim::netns::Netns;
use dpu_tests::harness::bin_dir;
use dpu_tests::{running_as_root, skip};

/// A namespace holding the veth pair v0/v1, and a temp dir for plans and the journal.
struct Setup {
    ns: Netns,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(purpose: &str) -> Self {
        let ns = Netns::create(purpose).expect("namespace");
        ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"])
            .expect("veth pair");
        Self {
            ns,
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self) -> PathBuf {
        Path::new(NETNS_RUN_DIR).join(self.ns.name())
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal.json")
    }

    /// `dpuctl experiment run` of a plan whose trial is `true`'s empty output read as
    /// qperf (never reached: the knob is refused first).
    fn run(&self, knob: &str) -> Output {
        let plan = self.dir.path().join("plan.toml");
        let text = format!(
            "[measurement]\nkind = \"command\"\nargv = [\"true\"]\nparser = \"qperf\"\n\
             [metric]\nbetter = \"higher\"\n[knob]\n{knob}\n"
        );
        std::fs::write(&plan, text).expect("plan written");
        Command::new("ip")
            .args(["netns", "exec", self.ns.name()])
            .arg(bin_dir().join("dpuctl"))
            .args(["experiment", "run"])
            .arg(&plan)
            .arg("--journal")
            .arg(self.journal())
            .stdin(Stdio::null())
            .output()
            .expect("dpuctl runs")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ethtool_netlink_refuses_a_veth_ring_naming_it_and_the_kernel_answer() {
    if !running_as_root() {
        skip!("needs root for a network namespace with a veth pair");
    }
    let s = Setup::new("ring-nl");
    let mut ethtool = EthtoolNetlink::open_in_netns(s.path()).expect("ethtool family");
    match ethtool.set_ring("v0", Ring::Rx, 128) {
        Err(EthtoolError::NotSupported {
            ifname,
            what,
            source,
        }) => {
            assert_eq!((ifname.as_str(), what), ("v0", "setting ring sizes"));
            assert_eq!(source.raw_os_error(), Some(95), "EOPNOTSUPP");
        }
        other => panic!("a veth ring set answered {other:?}"),
    }
    let err = ethtool.rings("v0").expect_err("veth has no get_ringparam");
    let message = dpu_probe::error_chain(&err);
    assert!(
        message.contains("v0: the driver does not support reading ring sizes"),
        "{message}"
    );
    assert!(message.contains("Operation not supported"), "{message}");
    // Negative control: a missing interface is ENODEV, not "does not support".
    let err = ethtool
        .set_ring("nosuch0", Ring::Rx, 128)
        .expect_err("no device");
    assert!(matches!(err, EthtoolError::Netlink { .. }), "{err:?}");
    assert!(dpu_probe::error_chain(&err).contains("nosuch0"), "{err}");
}

#[test]
fn dcb_netlink_refuses_a_veth_pfc_set_naming_it_and_the_kernel_answer() {
    if !running_as_root() {
        skip!("needs root for a network namespace with a veth pair");
    }
    let s = Setup::new("pfc-nl");
    let mut dcb = DcbNetlink::open_in_netns(s.path()).expect("socket in the namespace");
    let pfc = IeeePfc {
        pfc_cap: 8,
        pfc_en: 0b1000,
        ..IeeePfc::default()
    };
    match dcb.set_ieee_pfc("v0", &pfc) {
        Err(DcbError::NotSupported { ifname, source }) => {
            assert_eq!(ifname, "v0");
            assert_eq!(source.raw_os_error(), Some(95), "EOPNOTSUPP");
        }
        other => panic!("a veth PFC set answered {other:?}"),
    }
    // Negative control: a missing interface is not "does not support DCB".
    let err = dcb.set_ieee_pfc("nosuch0", &pfc).expect_err("no device");
    assert!(!matches!(err, DcbError::NotSupported { .. }), "{err:?}");
}

#[test]
fn dpuctl_stops_a_ring_or_pfc_experiment_on_a_veth_before_journaling() {
    if !running_as_root() {
        skip!("needs root for a network namespace with a veth pair");
    }
    let s = Setup::new("knobs-cli");
    for (knob, words) in [
        (
            "kind = \"ring\"\ninterface = \"v0\"\nring = \"rx\"\na = 256\nb = 128",
            [
                "rx ring of v0",
                "v0: the driver does not support reading ring sizes",
            ],
        ),
        (
            "kind = \"pfc\"\ninterface = \"v0\"\na = []\nb = [3]",
            ["pfc of v0", "v0 does not support DCB"],
        ),
    ] {
        let out = s.run(knob);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        for word in words {
            assert!(stderr.contains(word), "{word:?} missing from: {stderr}");
        }
        assert!(stderr.contains("Operation not supported"), "{stderr}");
        assert!(
            !s.journal().exists(),
            "nothing was changed, so nothing journaled"
        );
    }
}
