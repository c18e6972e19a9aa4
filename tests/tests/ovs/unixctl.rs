//! The ovs-vswitchd control socket: found through the pid file, commands answered, OVS's
//! own error text surfaced, and real datapath flows after traffic crosses a bridge.

use std::time::Duration;

use dpu_ovs::flow::DumpType;
use dpu_ovs::ovsdb::InterfaceType;
use dpu_ovs::unixctl::{Error, Unixctl};
use dpu_tests::ovs::Netns;

use crate::{client, daemons};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_dpif_show_and_unknown_command() {
    let daemons = daemons!();
    let ctl = Unixctl::vswitchd(daemons.rundir());
    let socket = ctl.socket_path().expect("pid file");
    let name = socket
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    assert!(
        name.starts_with("ovs-vswitchd.") && name.ends_with(".ctl"),
        "{}",
        socket.display()
    );
    let version = ctl.version().await.expect("version");
    assert!(
        version.starts_with("ovs-vswitchd (Open vSwitch) "),
        "{version}"
    );

    client(&daemons, Duration::from_secs(20))
        .bridges()
        .add("brd")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br");
    let dpif = ctl.dpif_show().await.expect("dpif/show");
    assert!(dpif.contains("netdev@ovs-netdev"), "{dpif}");
    assert!(dpif.contains("brd"), "{dpif}");

    let commands = ctl.list_commands().await.expect("list-commands");
    assert!(commands.iter().any(|c| c.name == "dpctl/dump-flows"));

    let err = ctl
        .command("no-such/command")
        .execute()
        .await
        .expect_err("unknown command");
    let Error::Command { message, .. } = &err else {
        panic!("expected OVS's refusal, got {err:?}");
    };
    assert!(message.contains("is not a valid command"), "{message}");
    let err = ctl
        .dump_flows()
        .datapath("nosuch@dp")
        .execute()
        .await
        .expect_err("bad datapath");
    assert!(matches!(err, Error::Command { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_across_a_bridge_shows_real_datapath_flows() {
    let daemons = daemons!();
    let ovs = client(&daemons, Duration::from_secs(20));
    ovs.bridges()
        .add("brt")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br");
    // Two internal ports (taps of the userspace datapath), each moved into a namespace
    // of its own with an address: a ping from one to the other crosses the bridge.
    let mut hosts = Vec::new();
    for (port, addr) in [("tp1", "10.200.0.1/24"), ("tp2", "10.200.0.2/24")] {
        ovs.ports()
            .add("brt", port)
            .interface_type(InterfaceType::Internal)
            .execute()
            .await
            .expect("internal port");
        let ns = Netns::create(port).expect("netns");
        daemons
            .netns()
            .ip(&["link", "set", port, "netns", ns.name()])
            .expect("move port");
        ns.ip(&["addr", "add", addr, "dev", port]).expect("address");
        ns.ip(&["link", "set", port, "up"]).expect("up");
        hosts.push(ns);
    }
    let ping = hosts[0].exec("ping", &["-c", "3", "-i", "0.2", "-W", "2", "10.200.0.2"]);
    assert!(ping.is_ok(), "{ping:?}");

    let ctl = Unixctl::vswitchd(daemons.rundir());
    let flows = ctl
        .dump_flows()
        .more()
        .names(true)
        .execute()
        .await
        .expect("dump-flows");
    let icmp: Vec<&str> = flows
        .lines()
        .filter(|l| l.contains("eth_type(0x0800)") && l.contains("icmp("))
        .collect();
    assert!(
        icmp.iter()
            .any(|l| l.contains("in_port(tp1)") && l.contains("actions:tp2")),
        "{flows}"
    );
    assert!(icmp.iter().all(|l| l.contains("dp:ovs")), "{flows}");
    assert!(
        icmp.iter().any(|l| !l.contains("packets:0,")),
        "a flow counted packets: {flows}"
    );
    // No hardware here: nothing is offloaded, everything is in the software datapath.
    let offloaded = ctl
        .dump_flows()
        .flow_type(DumpType::Offloaded)
        .execute()
        .await
        .expect("offloaded");
    assert!(!offloaded.contains("in_port("), "{offloaded}");
    let software = ctl
        .dump_flows()
        .flow_type(DumpType::NonOffloaded)
        .execute()
        .await
        .expect("non-offloaded");
    assert!(software.contains("in_port("), "{software}");
}
