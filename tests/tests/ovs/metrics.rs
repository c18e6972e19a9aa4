//! `/metrics` against the real ovs-vswitchd: the datapath flows a ping leaves are summed
//! by forwarding level and in_port, and without ovs-vswitchd the flow source is marked
//! unread instead of reporting no flows.

use std::time::Duration;

use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::ovs::{Netns, OvsDaemons};
use dpu_tests::prometheus::wait_for_metrics;

use crate::daemons;

/// An agent on `daemons` with `/metrics` on a free TCP port.
fn agent(daemons: &OvsDaemons) -> (AgentProcess, String, tempfile::TempDir) {
    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options =
        AgentOptions::new(dir.path(), &root).with_ovs(&daemons.db_address(), daemons.rundir());
    let target = format!("127.0.0.1:{}", free_tcp_port());
    options.config_toml =
        format!("[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:{target}\"\n");
    (AgentProcess::start(&options), target, dir)
}

/// The value of the one sample line that starts with `series` (name and labels).
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn flows_a_ping_leaves_are_summed_at_the_datapath_level_per_in_port() {
    let daemons = daemons!();
    let (agent, target, _dir) = agent(&daemons);
    let ctl = |args: &[&str]| {
        let endpoint = agent.endpoint();
        let mut all = vec!["--agent", endpoint.as_str()];
        all.extend_from_slice(args);
        let out = dpuctl(&all);
        assert!(
            out.status.success(),
            "dpuctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ctl(&["switch", "add-bridge", "brmt", "--datapath-type", "netdev"]);
    let mut hosts = Vec::new();
    for (port, addr) in [("mt1", "10.202.0.1/24"), ("mt2", "10.202.0.2/24")] {
        ctl(&["switch", "add-port", "brmt", port, "--type", "internal"]);
        let ns = Netns::create(port).expect("netns");
        daemons
            .netns()
            .ip(&["link", "set", port, "netns", ns.name()])
            .expect("move port");
        ns.ip(&["addr", "add", addr, "dev", port]).expect("address");
        ns.ip(&["link", "set", port, "up"]).expect("up");
        hosts.push(ns);
    }
    let ping = hosts[0].exec("ping", &["-c", "3", "-i", "0.2", "-W", "2", "10.202.0.2"]);
    assert!(ping.is_ok(), "{ping:?}");

    // Datapath flows idle out after 10 s: scrape at once.
    let body = wait_for_metrics(&target, Duration::from_secs(10))
        .expect("scrape")
        .body;
    assert_eq!(
        value(&body, "dpu_counters_source_up{source=\"ovs_flow\"}"),
        Some(1.0),
        "{body}"
    );
    // The userspace datapath here is `dp:ovs`: every flow is at the datapath level,
    // none in hardware or in tc.
    let datapath = value(&body, "dpu_ovs_flows{level=\"datapath\"}").expect("datapath flows");
    assert!(datapath >= 2.0, "a flow each way: {body}");
    assert_eq!(
        value(&body, "dpu_ovs_flows{level=\"hardware\"}"),
        Some(0.0),
        "{body}"
    );
    assert_eq!(
        value(&body, "dpu_ovs_flows{level=\"tc-software\"}"),
        Some(0.0),
        "{body}"
    );
    // Three echo requests entered through mt1. The first packet of a flow goes up to
    // ovs-vswitchd (the upcall that installs the flow) and is not in the flow's stats,
    // so the datapath counted at least the other two: 98-byte frames (ICMP 64 + IP 20 +
    // Ethernet 14).
    let from_mt1 = value(
        &body,
        "dpu_ovs_flow_packets{level=\"datapath\",in_port=\"mt1\"}",
    )
    .unwrap_or_else(|| panic!("no packets from mt1:\n{body}"));
    assert!(from_mt1 >= 2.0, "{from_mt1}: {body}");
    assert!(
        value(
            &body,
            "dpu_ovs_flow_bytes{level=\"datapath\",in_port=\"mt1\"}"
        )
        .is_some_and(|b| b >= 2.0 * 98.0),
        "two 98-byte ICMP frames at least: {body}"
    );
    // The datapath's lookups, through the reader Counters.Snapshot uses: the ping's first
    // packets were upcalls.
    assert_eq!(
        value(&body, "dpu_counters_source_up{source=\"ovs_datapath\"}"),
        Some(1.0),
        "{body}"
    );
    let missed = body
        .lines()
        .find(|l| {
            l.starts_with("dpu_ovs_datapath_lookups_missed")
                && l.contains("datapath=\"netdev@ovs-netdev\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no lookups_missed of netdev@ovs-netdev:\n{body}"));
    assert!(missed >= 1.0, "{missed}: {body}");
}

#[test]
fn without_ovs_vswitchd_the_flow_source_is_unread_not_empty() {
    let daemons = daemons!(start_without_vswitchd);
    let (_agent, target, _dir) = agent(&daemons);
    let body = wait_for_metrics(&target, Duration::from_secs(10))
        .expect("scrape")
        .body;
    assert_eq!(
        value(&body, "dpu_counters_source_up{source=\"ovs_flow\"}"),
        Some(0.0),
        "{body}"
    );
    assert!(
        !body.contains("dpu_ovs_flows{"),
        "no flow counts without a dump: {body}"
    );
    assert_eq!(
        value(&body, "dpu_counters_source_up{source=\"ovs_datapath\"}"),
        Some(0.0),
        "{body}"
    );
    assert!(
        !body.contains("dpu_ovs_datapath_lookups"),
        "no lookups without ovs-vswitchd: {body}"
    );
    // The sysfs counters are still served.
    assert_eq!(
        value(&body, "dpu_counters_source_up{source=\"rdma\"}"),
        Some(1.0),
        "{body}"
    );
}
