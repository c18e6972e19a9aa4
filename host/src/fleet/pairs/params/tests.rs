//! Parameters and targets refused by the field or target they are about.

use std::time::Duration;

use super::*;
use crate::remote::ssh::Ssh;

/// Parameters every check accepts; each test changes one value.
pub(in crate::fleet::pairs) fn params() -> PairsParams {
    PairsParams {
        tests: vec![PerfTest::WriteBw],
        sizes: vec![1 << 20],
        iterations: 1000,
        base_port: 18515,
        run_timeout_s: 300,
        line_rate_percent: 90.0,
        line_rate_gbps: None,
        dpuctl: "dpuctl".into(),
        hop: Ssh::new("ssh".into(), None, None),
        probe_timeout: Duration::from_secs(60),
        parallel: 128,
    }
}

#[test]
fn only_rdma_bandwidth_tests_are_accepted() {
    let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(parse_tests(&[]).expect("default"), [PerfTest::WriteBw]);
    assert_eq!(
        parse_tests(&names(&["send_bw", "ib_read_bw", "send_bw"])).expect("tests"),
        [PerfTest::SendBw, PerfTest::ReadBw]
    );
    for bad in ["tcp_bw", "write_lat", "rc_bw"] {
        let err = parse_tests(&names(&[bad])).expect_err(bad);
        assert!(
            err.to_string()
                .starts_with(&format!("tests: {bad:?} is not an RDMA bandwidth test")),
            "{err}"
        );
    }
}

#[test]
fn values_out_of_range_name_their_field() {
    assert!(params().validate().is_ok());
    type Change = fn(&mut PairsParams);
    let cases: [(Change, Field); 7] = [
        (|p| p.line_rate_percent = 0.0, Field::LineRatePercent),
        (|p| p.line_rate_percent = 101.0, Field::LineRatePercent),
        (|p| p.line_rate_gbps = Some(f64::NAN), Field::LineRateGbps),
        (|p| p.base_port = 65100, Field::BasePort),
        (|p| p.dpuctl = "-oProxyCommand=x".into(), Field::Dpuctl),
        (|p| p.iterations = 0, Field::Iterations),
        (|p| p.parallel = 0, Field::Parallel),
    ];
    for (change, field) in cases {
        let mut p = params();
        change(&mut p);
        let err = p.validate().expect_err(field.words());
        let PairsError::Param(param) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(param.about(), field, "{err}");
        assert!(err.to_string().starts_with(field.words()), "{err}");
        assert!(!err.to_string().contains("--"), "{err}");
    }
}

#[test]
fn targets_with_odd_ssh_or_interface_are_refused_before_anything_runs() {
    use super::super::pattern::PairPattern;
    let target = |name: &str, ssh: &str| {
        let mut t = Target::new(name, "unix:/run/x.sock".parse().expect("endpoint"));
        t.ssh = Some(ssh.to_owned());
        t
    };
    let mut targets = vec![target("a", "root@a"), target("b", "root@b;reboot")];
    let plan = super::super::plan::plan(&targets, &PairPattern::Ring, 4).expect("plan");
    let err = check_targets(&targets, &plan).expect_err("ssh");
    assert!(
        err.to_string().contains("target b: ssh \"root@b;reboot\""),
        "{err}"
    );
    targets[1].ssh = Some("root@b".into());
    targets[1].interface = Some("eth0 -x".into());
    let err = check_targets(&targets, &plan).expect_err("interface");
    assert!(err.to_string().starts_with("target b: interface"), "{err}");
    targets[1].interface = Some("ens1f0np0".into());
    assert!(check_targets(&targets, &plan).is_ok());
}
