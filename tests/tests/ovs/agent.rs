//! The real `dpu-agent` on private OVS daemons, driven by the real `dpuctl` and by the
//! generated gRPC client; what the agent writes is checked with the real `ovs-vsctl`.
//! ovs-vswitchd runs the userspace datapath (no kernel module here), so bridges are
//! created with `datapath_type` netdev, as the API allows.

use std::os::unix::net::UnixStream;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use dpu_proto::v1::{self, switch_client::SwitchClient};
use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use dpu_tests::ovs::{Netns, OvsDaemons};
use tonic::transport::Channel;
use tonic::Code;

use crate::{daemons, unquote};

/// An agent pointed at `daemons`, with its temp dir (fixture sysfs, socket, log).
struct Agent {
    process: AgentProcess,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start(daemons: &OvsDaemons) -> Self {
        let (dir, root) = fixture::bluefield3_tempdir();
        let options =
            AgentOptions::new(dir.path(), &root).with_ovs(&daemons.db_address(), daemons.rundir());
        Self {
            process: AgentProcess::start(&options),
            _dir: dir,
        }
    }

    /// `dpuctl --agent unix:... ARGS`.
    fn ctl(&self, args: &[&str]) -> Output {
        let endpoint = self.process.endpoint();
        let mut all = vec!["--agent", endpoint.as_str()];
        all.extend_from_slice(args);
        dpuctl(&all)
    }

    /// `dpuctl ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctl(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "dpuctl {args:?}: {}\nagent log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.process.log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn switch(&self) -> SwitchClient<Channel> {
        SwitchClient::new(self.process.channel().await)
    }
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridges_and_ports_through_dpuctl_and_grpc_land_in_ovsdb() {
    let daemons = daemons!();
    let agent = Agent::start(&daemons);
    agent.ok(&["switch", "add-bridge", "brag", "--datapath-type", "netdev"]);
    let dp = daemons.vsctl(&["get", "Bridge", "brag", "datapath_type"]);
    assert_eq!(unquote(&dp.expect("get datapath_type")), "netdev");
    for port in ["ag1", "ag2"] {
        let out = agent.ok(&["switch", "add-port", "brag", port, "--type", "internal"]);
        assert!(out.contains(port) && out.contains("internal"), "{out}");
        let kind = daemons.vsctl(&["get", "Interface", port, "type"]);
        assert_eq!(unquote(&kind.expect("get type")), "internal");
    }
    let ports = daemons.vsctl(&["list-ports", "brag"]).expect("list-ports");
    assert_eq!(ports.split_whitespace().collect::<Vec<_>>(), ["ag1", "ag2"]);

    // Idempotent: the same bridge again is fine; other settings are ALREADY_EXISTS.
    agent.ok(&["switch", "add-bridge", "brag", "--datapath-type", "netdev"]);
    let mut switch = agent.switch().await;
    let err = switch
        .create_bridge(v1::CreateBridgeRequest {
            bridge_id: "brag".to_owned(),
            datapath_type: "system".to_owned(),
            options: None,
        })
        .await
        .expect_err("conflicting datapath");
    assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");

    let listed = switch
        .list_bridges(v1::ListBridgesRequest {})
        .await
        .expect("ListBridges")
        .into_inner();
    let brag = listed
        .bridges
        .iter()
        .find(|b| b.bridge == "brag")
        .expect("brag listed");
    assert_eq!(
        (brag.name.as_str(), brag.datapath_type.as_str()),
        ("bridges/brag", "netdev")
    );
    let names: Vec<&str> = brag.ports.iter().map(|p| p.port.as_str()).collect();
    assert_eq!(names, ["ag1", "ag2", "brag"]);
    // Changes wait for ovs-vswitchd, so it has opened the ports by now.
    let ports = switch
        .list_ports(v1::ListPortsRequest {
            parent: "bridges/brag".to_owned(),
        })
        .await
        .expect("ListPorts")
        .into_inner()
        .ports;
    let ag1 = ports.iter().find(|p| p.port == "ag1").expect("ag1");
    assert!(ag1.ofport > 0 && ag1.error.is_empty(), "{ag1:?}");
    assert_eq!(ag1.name, "bridges/brag/ports/ag1");

    let listed = json(&agent.ok(&["-o", "json", "switch", "bridges"]));
    assert_eq!(listed["bridges"][0]["bridge"], "brag", "{listed}");
    let table = agent.ok(&["switch", "ports", "brag"]);
    assert!(
        table.contains("ag2") && table.contains("internal"),
        "{table}"
    );

    let err = switch
        .get_bridge(v1::GetBridgeRequest {
            name: "bridges/nosuch".to_owned(),
        })
        .await
        .expect_err("unknown bridge");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    // A dry run reports and changes nothing.
    let dry = switch
        .create_bridge(v1::CreateBridgeRequest {
            bridge_id: "brdry".to_owned(),
            datapath_type: "netdev".to_owned(),
            options: Some(v1::ApplyOptions {
                timeout: None,
                dry_run: true,
            }),
        })
        .await
        .expect("dry run")
        .into_inner();
    assert_eq!(dry.name, "bridges/brdry");
    let bridges = daemons.vsctl(&["list-br"]).expect("list-br");
    assert!(!bridges.contains("brdry"), "{bridges}");

    agent.ok(&["switch", "del-port", "brag", "ag2"]);
    let ports = daemons.vsctl(&["list-ports", "brag"]).expect("list-ports");
    assert_eq!(ports.trim(), "ag1");
    let out = agent.ctl(&["switch", "del-port", "brag", "ag2"]);
    assert_eq!(out.status.code(), Some(2), "deleting a missing port fails");
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"));

    agent.ok(&["switch", "del-bridge", "brag"]);
    assert!(
        daemons.vsctl(&["br-exists", "brag"]).is_err(),
        "brag is gone"
    );
    let reply = switch
        .delete_bridge(v1::DeleteBridgeRequest {
            name: "bridges/brag".to_owned(),
            allow_missing: true,
            options: None,
        })
        .await
        .expect("allow_missing")
        .into_inner();
    assert!(!reply.deleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offload_on_is_stored_and_says_a_restart_is_required() {
    let daemons = daemons!();
    let agent = Agent::start(&daemons);
    // A userspace datapath, so ovs-vswitchd can report its flow API state.
    agent.ok(&["switch", "add-bridge", "brof", "--datapath-type", "netdev"]);
    let mut switch = agent.switch().await;
    let before = switch
        .get_offload_settings(v1::GetOffloadSettingsRequest {})
        .await
        .expect("GetOffloadSettings")
        .into_inner();
    assert!(!before.hw_offload && !before.offload_active, "{before:?}");
    assert_eq!(before.tc_policy, v1::TcPolicy::None as i32);

    let out = agent.ok(&["switch", "offload", "on"]);
    assert!(out.contains("restart required: yes"), "{out}");
    assert!(out.contains("changed: hw-offload"), "{out}");
    let stored = daemons.vsctl(&["get", "Open_vSwitch", ".", "other_config:hw-offload"]);
    assert_eq!(unquote(&stored.expect("get hw-offload")), "true");

    let again = switch
        .update_offload_settings(v1::UpdateOffloadSettingsRequest {
            hw_offload: Some(true),
            ..Default::default()
        })
        .await
        .expect("same again")
        .into_inner();
    assert!(
        !again.restart_required && again.changed_keys.is_empty(),
        "{again:?}"
    );
    let settings = again.settings.expect("settings");
    assert!(
        settings.hw_offload && settings.cur_cfg >= settings.next_cfg,
        "{settings:?}"
    );
    // OVS 3.1 switches its flow API on when it first sees hw-offload=true.
    assert!(settings.offload_active, "{settings:?}");

    let shown = json(&agent.ok(&["-o", "json", "switch", "offload"]));
    assert_eq!(shown["hwOffload"], true, "{shown}");
    assert_eq!(shown["otherConfig"]["hw-offload"], "true", "{shown}");

    let policy = switch
        .update_offload_settings(v1::UpdateOffloadSettingsRequest {
            tc_policy: v1::TcPolicy::SkipSw as i32,
            max_idle_ms: Some(20_000),
            ..Default::default()
        })
        .await
        .expect("tc-policy and max-idle")
        .into_inner();
    assert_eq!(policy.changed_keys, ["tc-policy", "max-idle"]);
    assert!(
        policy.restart_required,
        "tc-policy is read once: {policy:?}"
    );
    let stored = daemons.vsctl(&["get", "Open_vSwitch", ".", "other_config:tc-policy"]);
    assert_eq!(unquote(&stored.expect("get tc-policy")), "skip_sw");
    let err = switch
        .update_offload_settings(v1::UpdateOffloadSettingsRequest {
            max_idle_ms: Some(100),
            ..Default::default()
        })
        .await
        .expect_err("too short");
    assert_eq!(err.code(), Code::InvalidArgument);

    let out = agent.ok(&["switch", "offload", "off"]);
    assert!(out.contains("restart required: yes"), "{out}");
    let stored = daemons.vsctl(&["get", "Open_vSwitch", ".", "other_config:hw-offload"]);
    assert_eq!(unquote(&stored.expect("get hw-offload")), "false");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_after_ping_are_software_flows_of_the_ovs_datapath() {
    let daemons = daemons!();
    let agent = Agent::start(&daemons);
    agent.ok(&["switch", "add-bridge", "brfl", "--datapath-type", "netdev"]);
    let mut hosts = Vec::new();
    for (port, addr) in [("fl1", "10.201.0.1/24"), ("fl2", "10.201.0.2/24")] {
        agent.ok(&["switch", "add-port", "brfl", port, "--type", "internal"]);
        let ns = Netns::create(port).expect("netns");
        daemons
            .netns()
            .ip(&["link", "set", port, "netns", ns.name()])
            .expect("move port");
        ns.ip(&["addr", "add", addr, "dev", port]).expect("address");
        ns.ip(&["link", "set", port, "up"]).expect("up");
        hosts.push(ns);
    }
    let ping = hosts[0].exec("ping", &["-c", "3", "-i", "0.2", "-W", "2", "10.201.0.2"]);
    assert!(ping.is_ok(), "{ping:?}");
    datapath_lookups_agree_with_ovs_appctl(&agent, &daemons);

    // Datapath flows idle out after 10 s: read them at once.
    let all = json(&agent.ok(&["-o", "json", "switch", "flows"]));
    let flows = all["flows"].as_array().cloned().unwrap_or_default();
    assert_eq!(all["datapath"], "netdev@ovs-netdev", "{all}");
    let icmp: Vec<&serde_json::Value> = flows
        .iter()
        .filter(|f| f["match"].as_str().is_some_and(|m| m.contains("icmp(")))
        .collect();
    assert!(
        icmp.iter()
            .any(|f| f["inPort"] == "fl1" && f["actions"] == "fl2"),
        "{all}"
    );
    for flow in &flows {
        assert_eq!(flow["dpLayer"], "ovs", "{flow}");
        assert_eq!(flow["offloaded"], "OFFLOAD_STATUS_NOT_OFFLOADED", "{flow}");
        assert!(
            flow["ufid"].as_str().is_some_and(|u| u.len() == 36),
            "{flow}"
        );
        // The real daemon's userspace datapath: every packet placed at the datapath level,
        // none in hardware or tc (the one rule, ovs/src/flow/level.rs).
        let placed = &flow["packetsByLevel"];
        let packets = flow["packets"].as_str().unwrap_or("0");
        assert_eq!(
            placed["datapath"].as_str().unwrap_or("0"),
            packets,
            "{flow}"
        );
        for level in ["hardware", "tcSoftware", "unattributed"] {
            assert!(placed.get(level).is_none(), "{level} in {flow}");
        }
    }
    assert!(
        icmp.iter()
            .any(|f| f["packets"].as_str().is_some_and(|p| p != "0")),
        "a flow counted packets: {all}"
    );
    let table = agent.ok(&["switch", "flows", "--type", "non-offloaded"]);
    assert!(
        table.contains("fl1") && table.contains("not-offloaded"),
        "{table}"
    );
    let offloaded = json(&agent.ok(&["-o", "json", "switch", "flows", "--type", "offloaded"]));
    assert!(
        offloaded["flows"].as_array().is_none_or(Vec::is_empty),
        "no hardware here: {offloaded}"
    );

    let mut switch = agent.switch().await;
    let from_fl2 = switch
        .list_flows(v1::ListFlowsRequest {
            filter: v1::FlowFilter::NonOffloaded as i32,
            in_port: "fl2".to_owned(),
            datapath: "netdev@ovs-netdev".to_owned(),
            covering: None,
        })
        .await
        .expect("ListFlows")
        .into_inner()
        .flows;
    assert!(!from_fl2.is_empty());
    assert!(from_fl2.iter().all(|f| f.in_port == "fl2"), "{from_fl2:?}");
    // The real daemon's megaflows against the one covering rule: the ping from fl1 is
    // covered by fl1's ICMP flows; a UDP packet to another host is covered by none.
    let covering = |src: &str, dst: &str, ip_proto: u32| v1::ListFlowsRequest {
        in_port: "fl1".to_owned(),
        covering: Some(v1::FlowPacket {
            src_ip: src.to_owned(),
            dst_ip: dst.to_owned(),
            ip_proto,
            src_port: 40_001,
            dst_port: 9,
        }),
        ..Default::default()
    };
    let the_ping = switch
        .list_flows(covering("10.201.0.1", "10.201.0.2", 1))
        .await
        .expect("ListFlows covering the ping")
        .into_inner()
        .flows;
    assert!(
        the_ping.iter().any(|f| f.r#match.contains("icmp(")),
        "the ping's flows cover it: {the_ping:?}"
    );
    let elsewhere = switch
        .list_flows(covering("10.201.0.1", "10.99.0.9", 17))
        .await
        .expect("ListFlows covering another packet")
        .into_inner()
        .flows;
    assert!(
        elsewhere.iter().all(|f| !f.r#match.contains("icmp(")),
        "an ICMP flow does not cover a UDP packet to another host: {elsewhere:?}"
    );
    let err = switch
        .list_flows(v1::ListFlowsRequest {
            covering: Some(v1::FlowPacket {
                src_ip: "10.201.0.1".to_owned(),
                dst_ip: "not-an-address".to_owned(),
                ip_proto: 17,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect_err("a covering packet with a bad address");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().starts_with("covering.dst_ip"),
        "{}",
        err.message()
    );
    let err = switch
        .list_flows(v1::ListFlowsRequest {
            datapath: "system@ovs-system".to_owned(),
            ..Default::default()
        })
        .await
        .expect_err("no kernel datapath here");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ovsdb_the_agent_answers_unavailable_and_recovers_without_restart() {
    let mut daemons = daemons!();
    // The agent starts while ovsdb-server is down, and must come up anyway.
    kill_ovsdb(&daemons);
    let agent = Agent::start(&daemons);
    let mut switch = agent.switch().await;
    let err = switch
        .list_bridges(v1::ListBridgesRequest {})
        .await
        .expect_err("no ovsdb-server");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("ovsdb"), "{}", err.message());
    let out = agent.ctl(&["switch", "bridges"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Unavailable") && stderr.contains("ovsdb"),
        "{stderr}"
    );

    // ovsdb-server appears: the next call connects. The change waits for ovs-vswitchd,
    // which reconnects on its own backoff (up to 8 s), hence the longer timeout.
    daemons.restart_ovsdb().expect("ovsdb-server back");
    agent.ok(&[
        "--timeout",
        "40",
        "switch",
        "add-bridge",
        "brre",
        "--datapath-type",
        "netdev",
    ]);

    // It goes away again under an open connection, and comes back once more.
    kill_ovsdb(&daemons);
    let err = switch
        .get_bridge(v1::GetBridgeRequest {
            name: "bridges/brre".to_owned(),
        })
        .await
        .expect_err("ovsdb-server killed");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    daemons.restart_ovsdb().expect("ovsdb-server back");
    let bridge = switch
        .get_bridge(v1::GetBridgeRequest {
            name: "bridges/brre".to_owned(),
        })
        .await
        .expect("served again without an agent restart")
        .into_inner();
    assert_eq!(bridge.datapath_type, "netdev");
}

/// Kills the test's own ovsdb-server (SIGKILL, like a crash) by the pid it wrote, and
/// waits until its socket refuses connections.
fn kill_ovsdb(daemons: &OvsDaemons) {
    let pid_file = daemons.rundir().join("ovsdb-server.pid");
    let pid = std::fs::read_to_string(&pid_file).expect("ovsdb-server pid file");
    let status = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill ovsdb-server {pid}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(daemons.db_socket()).is_ok() {
        assert!(Instant::now() < deadline, "ovsdb-server still answering");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `hit`, `missed`, `lost` of datapath `name` in `ovs-appctl dpctl/show` output.
fn appctl_lookups(text: &str, name: &str) -> [u64; 3] {
    let block = text
        .split_once(&format!("{name}:\n"))
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no {name} in dpctl/show: {text}"));
    let line = block
        .lines()
        .find_map(|l| l.trim().strip_prefix("lookups:"))
        .unwrap_or_else(|| panic!("no lookups for {name}: {text}"));
    let value = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
    };
    [value("hit:"), value("missed:"), value("lost:")]
}

/// Upcall accounting against OVS's own `ovs-appctl dpctl/show` (issue 31): after a ping
/// across the userspace datapath, the agent's `lookups_*` of `netdev@ovs-netdev` lie
/// between two readings of the real command taken around it, and the ping's first packets
/// were upcalls (missed > 0); a datapath that does not exist is a source error, not zeros.
fn datapath_lookups_agree_with_ovs_appctl(agent: &Agent, daemons: &OvsDaemons) {
    const DATAPATH: &str = "netdev@ovs-netdev";
    let before = appctl_lookups(
        &daemons.appctl(&["dpctl/show"]).expect("dpctl/show"),
        DATAPATH,
    );
    let snapshot = json(&agent.ok(&["-o", "json", "dpu", "counters", "-s", "datapath"]));
    let after = appctl_lookups(
        &daemons.appctl(&["dpctl/show"]).expect("dpctl/show"),
        DATAPATH,
    );
    let samples = snapshot["samples"].as_array().cloned().unwrap_or_default();
    for (i, counter) in ["lookups_hit", "lookups_missed", "lookups_lost"]
        .iter()
        .enumerate()
    {
        let sample = samples
            .iter()
            .find(|s| s["object"] == format!("datapaths/{DATAPATH}") && s["counter"] == *counter)
            .unwrap_or_else(|| panic!("no {counter} of {DATAPATH}: {snapshot}"));
        assert_eq!(sample["source"], "ovs_datapath", "{sample}");
        let value = sample["value"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
            .or_else(|| sample["value"].as_u64())
            .unwrap_or(0);
        assert!(
            before[i] <= value && value <= after[i],
            "{counter}: the agent said {value}, ovs-appctl {} before and {} after",
            before[i],
            after[i]
        );
    }
    assert!(
        before[1] > 0,
        "the ping's first packets were upcalls: {before:?}"
    );
    let missing = agent.ctl(&[
        "-o",
        "json",
        "dpu",
        "counters",
        "-s",
        "datapath:dummy@nothere",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&missing.stdout),
        String::from_utf8_lossy(&missing.stderr)
    );
    assert_eq!(missing.status.code(), Some(2), "{text}");
    assert!(
        text.contains("-s datapath:dummy@nothere names nothing")
            && text.contains(&format!("(datapath has: {DATAPATH})")),
        "a missing datapath is named with what exists, and only datapaths: {text}"
    );
}

/// The bug this guards: `dpuctl switch add-bridge br1` (kernel datapath by default) on an
/// ovs-vswitchd without the kernel datapath said "ready" while ovs-vswitchd's log said it
/// failed. Now the call fails with FAILED_PRECONDITION quoting OVS, nothing is left in
/// OVSDB, and the same with `--datapath-type netdev` is ready. A port of a device that does
/// not exist is refused the same way; what ovs-vsctl adds behind the agent's back and
/// ovs-vswitchd refuses is listed with OVS's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_ovs_vswitchd_refuses_is_never_ready_and_listings_show_why() {
    let daemons = daemons!();
    let agent = Agent::start(&daemons);
    let out = agent.ctl(&["switch", "add-bridge", "br1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        // The kernel datapath works here: then the bridge must really run.
        let ofport = daemons.vsctl(&["get", "Interface", "br1", "ofport"]);
        assert_eq!(ofport.expect("get ofport").trim(), "65534", "{stdout}");
        agent.ok(&["switch", "del-bridge", "br1"]);
    } else {
        assert!(!stdout.contains("ready"), "{stdout}");
        for part in [
            "(FailedPrecondition)",
            "ovs-vswitchd did not create bridge br1",
            "datapath type system",
            "opening datapath system@ovs-system failed",
            "removed again",
        ] {
            assert!(stderr.contains(part), "{part:?} in:\n{stderr}");
        }
        let mut switch = agent.switch().await;
        let err = switch
            .create_bridge(v1::CreateBridgeRequest {
                bridge_id: "br1".to_owned(),
                datapath_type: "system".to_owned(),
                options: None,
            })
            .await
            .expect_err("refused over gRPC too");
        assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    }
    assert_eq!(daemons.vsctl(&["list-br"]).expect("list-br").trim(), "");

    // Positive control: the userspace datapath.
    let out = agent.ok(&["switch", "add-bridge", "br1", "--datapath-type", "netdev"]);
    assert!(out.contains("bridge br1 ready (datapath netdev"), "{out}");

    // A port of a device that does not exist in ovs-vswitchd's namespace.
    let out = agent.ctl(&["switch", "add-port", "br1", "nodev0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("could not open network device nodev0 (No such device)")
            && stderr.contains("(FailedPrecondition)"),
        "{stderr}"
    );
    let ports = daemons.vsctl(&["list-ports", "br1"]).expect("list-ports");
    assert_eq!(ports.trim(), "", "nothing half-applied");

    // ovs-vsctl does not take refused rows out: the listings say why they do not run.
    daemons
        .vsctl(&["add-port", "br1", "nodev1"])
        .expect("ovs-vsctl only warns");
    daemons
        .vsctl(&["add-br", "brk"])
        .expect("ovs-vsctl add-br returns once applied");
    let table = agent.ok(&["switch", "ports", "br1"]);
    let row = table
        .lines()
        .find(|l| l.contains("nodev1"))
        .unwrap_or_else(|| panic!("nodev1 listed:\n{table}"));
    assert!(
        row.contains("-1") && row.contains("could not open network device nodev1 (No such device)"),
        "{table}"
    );
    let table = agent.ok(&["switch", "bridges"]);
    let brk = table
        .lines()
        .find(|l| l.contains("brk"))
        .unwrap_or_else(|| panic!("brk listed:\n{table}"));
    if !daemons
        .vswitchd_log()
        .contains("failed to create bridge brk")
    {
        return; // the kernel datapath works here
    }
    assert!(brk.contains("did not create the bridge"), "{table}");
    let br1 = table.lines().find(|l| l.contains("br1 ")).expect("br1");
    let last_cell = br1.rsplit('┆').next().map(|c| c.trim_matches(['│', ' ']));
    assert_eq!(last_cell, Some("-"), "br1 runs: {table}");
}
