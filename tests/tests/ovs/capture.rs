//! OVS in captures against the real daemons: the agent's one-shot reads recorded in
//! capture mode ([`dpu_ovs::capture`]) and replayed by [`FakeOvs`] answer the same bridge
//! listing, flow dumps (parsed) and datapath listing as the live daemons gave at the
//! captured instant. Controls: one altered recorded answer changes exactly that result; a
//! request not recorded is an error naming it; a capture-mode write is refused with
//! nothing sent (the daemons still hold what they held). `dpuctl capture --ovs-rundir`
//! writes both transcripts, redacted: no port MAC in the bundle, and it still replays.

use std::fs;
use std::path::Path;
use std::time::Duration;

use dpu_ovs::capture::{
    ovsdb_recorder, read_all, to_jsonl, vswitchd_recorder, OvsReading, Recorder,
};
use dpu_ovs::flow::{parse_dump_all, DatapathFlow, DumpType, Used};
use dpu_ovs::ovsdb::{InterfaceType, Ovsdb, OvsdbOptions};
use dpu_ovs::unixctl::{self, Unixctl};
use dpu_sim::fake_ovs::FakeOvs;
use dpu_sim::fake_snap::Replay;
use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use dpu_tests::ovs::{Netns, OvsDaemons};
use serde_json::Value;

use crate::{client, daemons};

/// A bridge `brc` with internal ports tp1, tp2 (each in a namespace of its own with an
/// IPv4 address and no IPv6) and tp3, a ping from tp1 to tp2 so the datapath holds flows, and flows kept
/// idle for a minute so the capture still finds them.
pub(crate) async fn bridge_with_flows(daemons: &OvsDaemons) -> (Vec<Netns>, String) {
    let ovs = client(daemons, Duration::from_secs(20));
    ovs.other_config()
        .set("max-idle", "60000")
        .execute()
        .await
        .expect("max-idle");
    ovs.bridges()
        .add("brc")
        .datapath_type("netdev")
        .execute()
        .await
        .expect("add-br");
    let mut hosts = Vec::new();
    for port in ["tp1", "tp2", "tp3"] {
        ovs.ports()
            .add("brc", port)
            .interface_type(InterfaceType::Internal)
            .execute()
            .await
            .expect("internal port");
    }
    for (port, addr) in [("tp1", "10.201.0.1/24"), ("tp2", "10.201.0.2/24")] {
        let ns = Netns::create(port).expect("netns");
        // No IPv6: its listener reports and solicitations would add flows and count
        // packets between one read and the next.
        for key in ["all", "default"] {
            let setting = format!("net.ipv6.conf.{key}.disable_ipv6=1");
            ns.exec("sysctl", &["-qw", &setting]).expect("IPv6 off");
        }
        daemons
            .netns()
            .ip(&["link", "set", port, "netns", ns.name()])
            .expect("move port");
        ns.ip(&["addr", "add", addr, "dev", port]).expect("address");
        ns.ip(&["link", "set", port, "up"]).expect("up");
        hosts.push(ns);
    }
    let ping = hosts[0].exec("ping", &["-c", "2", "-i", "0.2", "-W", "2", "10.201.0.2"]);
    assert!(ping.is_ok(), "{ping:?}");
    let link = hosts[0].ip(&["-o", "link", "show", "tp1"]).expect("tp1");
    let mac = link
        .split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .expect("tp1's MAC")
        .to_owned();
    (hosts, mac)
}

/// The readers the agent uses on the daemons (or the replay) in `rundir`.
fn readers(rundir: &Path) -> (Ovsdb, Unixctl) {
    let address = format!("unix:{}", rundir.join("db.sock").display());
    (
        Ovsdb::new(&address).expect("address"),
        Unixctl::vswitchd(rundir),
    )
}

/// The same readers recording into capture-mode recorders, returned with them.
fn recording_readers(rundir: &Path) -> (Ovsdb, Unixctl, Recorder, Recorder) {
    let address = format!("unix:{}", rundir.join("db.sock").display());
    let (db_recorder, ctl_recorder) = (ovsdb_recorder(), vswitchd_recorder());
    let db =
        Ovsdb::recording(&address, OvsdbOptions::default(), db_recorder.clone()).expect("address");
    let ctl = Unixctl::vswitchd(rundir).recording(ctl_recorder.clone());
    (db, ctl, db_recorder, ctl_recorder)
}

/// The flows of every dump, parsed, with `used:` cleared.
fn flows(reading: &OvsReading) -> Vec<(DumpType, Vec<DatapathFlow<'_>>)> {
    reading
        .flow_dumps
        .iter()
        .map(|(_, dump_type, text)| {
            let mut parsed = parse_dump_all(text).expect("flow dump parses");
            for flow in &mut parsed {
                flow.used = Used::Never;
            }
            (*dump_type, parsed)
        })
        .collect()
}

/// The bridges with their port names, as the agent lists them.
fn bridges(reading: &OvsReading) -> Vec<(String, Vec<String>)> {
    let tables = reading.tables.as_ref().expect("tables read");
    tables
        .bridges()
        .into_iter()
        .map(|b| (b.name, b.ports.into_iter().map(|p| p.name).collect()))
        .collect()
}

/// What `read_all` reads over a replay of the two transcripts in `dir` (created).
async fn replayed(dir: &Path, ovsdb: &str, vswitchd: &str) -> (OvsReading, FakeOvs) {
    fs::create_dir_all(dir).expect("replay dir");
    let fake = FakeOvs::start_replaying(
        dir,
        Replay::from_jsonl(ovsdb).expect("ovsdb transcript"),
        Replay::from_jsonl(vswitchd).expect("vswitchd transcript"),
    )
    .expect("replay");
    let (db, ctl) = readers(dir);
    (read_all(&db, &ctl).await.expect("replayed reading"), fake)
}

/// `vswitchd`'s transcript with the first flow of the first unfiltered flow dump
/// counting one packet more.
fn one_packet_more(vswitchd: &str) -> String {
    let mut done = false;
    let lines: Vec<String> = vswitchd
        .lines()
        .map(|line| {
            let mut exchange: Value = serde_json::from_str(line).expect("exchange");
            let params = exchange["request"]["params"].to_string();
            if !done && exchange["method"] == "dpctl/dump-flows" && !params.contains("type=") {
                let text = exchange["response"]["result"].as_str().expect("text");
                let at = text.find("packets:").expect("a flow") + "packets:".len();
                let end = at + text[at..].find(',').expect("packets:N,");
                let n: u64 = text[at..end].parse().expect("a count");
                let changed = format!("{}{}{}", &text[..at], n + 1, &text[end..]);
                exchange["response"]["result"] = Value::String(changed);
                done = true;
            }
            exchange.to_string()
        })
        .collect();
    assert!(done, "no unfiltered flow dump in the transcript");
    lines.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_reading_replays_to_the_live_answers_and_only_those() {
    let daemons = daemons!();
    let (_hosts, _) = bridge_with_flows(&daemons).await;
    let (db, ctl, db_recorder, ctl_recorder) = recording_readers(daemons.rundir());
    let live = read_all(&db, &ctl).await.expect("live reading");
    assert_eq!(db_recorder.refused(), Vec::<String>::new());
    assert_eq!(ctl_recorder.refused(), Vec::<String>::new());
    let live_bridges = bridges(&live);
    assert_eq!(
        live_bridges,
        [(
            "brc".to_owned(),
            vec![
                "brc".to_owned(),
                "tp1".to_owned(),
                "tp2".to_owned(),
                "tp3".to_owned()
            ]
        )],
        "the bridge set up"
    );
    let live_flows = flows(&live);
    let icmp = |flows: &[(DumpType, Vec<DatapathFlow<'_>>)]| {
        flows[0].1.iter().filter(|f| f.packets > 0).count()
    };
    assert!(
        icmp(&live_flows) > 0,
        "live flows counted packets: {live:?}"
    );
    let (ovsdb_text, vswitchd_text) = (
        to_jsonl(&db_recorder.exchanges()),
        to_jsonl(&ctl_recorder.exchanges()),
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let (replay, fake) = replayed(&dir.path().join("same"), &ovsdb_text, &vswitchd_text).await;
    assert_eq!(bridges(&replay), live_bridges);
    assert_eq!(
        replay.tables, live.tables,
        "every row and column as read live"
    );
    assert_eq!(flows(&replay), live_flows);
    assert_eq!(replay, live, "every answer, texts included");

    // A request the transcript lacks is an error naming it, on either socket.
    let (db, ctl) = readers(fake.rundir());
    let err = ctl
        .dump_flows()
        .filter("in_port(tp1)")
        .execute()
        .await
        .expect_err("not recorded");
    let unixctl::Error::Command { message, .. } = &err else {
        panic!("expected the replay's refusal, got {err:?}");
    };
    assert!(
        message.starts_with("not captured: dpctl/dump-flows with params [\"filter=in_port(tp1)\"]"),
        "{message}"
    );
    let err = db.echo().await.expect_err("echo was not recorded");
    assert!(format!("{err:?}").contains("not captured: echo"), "{err:?}");
    drop(fake);

    // One altered answer: that dump's first flow, nothing else, reads differently.
    let altered = one_packet_more(&vswitchd_text);
    let (changed, _fake) = replayed(&dir.path().join("altered"), &ovsdb_text, &altered).await;
    let changed_flows = flows(&changed);
    assert_ne!(changed_flows, live_flows, "the altered count is noticed");
    assert_eq!(
        changed_flows[0].1[0].packets,
        live_flows[0].1[0].packets + 1
    );
    let mut restored = changed_flows.clone();
    restored[0].1[0].packets -= 1;
    assert_eq!(restored, live_flows, "only that count changed");
    assert_eq!(changed.tables, live.tables);
    assert_eq!(changed.dpif_show, live.dpif_show);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_mode_refuses_writes_before_sending_them() {
    let daemons = daemons!();
    let (_hosts, _) = bridge_with_flows(&daemons).await;
    let (db, ctl, db_recorder, ctl_recorder) = recording_readers(daemons.rundir());
    let (plain_db, plain_ctl) = readers(daemons.rundir());
    let flows_before = plain_ctl.dump_flows().execute().await.expect("dump");
    assert!(flows_before.contains("in_port("), "{flows_before}");

    let err = db
        .bridges()
        .add("brx")
        .no_wait()
        .execute()
        .await
        .expect_err("an insert in capture mode");
    assert!(format!("{err:?}").contains("NotReadOnly"), "{err:?}");
    let err = ctl
        .command("dpctl/del-flows")
        .execute()
        .await
        .expect_err("del-flows in capture mode");
    assert!(format!("{err:?}").contains("NotAllowed"), "{err:?}");

    // Nothing reached the daemons: no bridge brx, the flows are still there.
    let tables = plain_db.snapshot().await.expect("snapshot");
    let names: Vec<String> = tables.bridges().into_iter().map(|b| b.name).collect();
    assert_eq!(names, ["brc"]);
    let flows_after = plain_ctl.dump_flows().execute().await.expect("dump");
    assert!(flows_after.contains("in_port("), "{flows_after}");
    assert!(
        db_recorder
            .refused()
            .iter()
            .any(|r| r.starts_with("transact: operation")),
        "{:?}",
        db_recorder.refused()
    );
    assert_eq!(ctl_recorder.refused(), ["dpctl/del-flows"]);
    // Control: the same del-flows without a recorder is sent and empties the datapath.
    plain_ctl
        .command("dpctl/del-flows")
        .execute()
        .await
        .expect("sent");
    let emptied = plain_ctl.dump_flows().execute().await.expect("dump");
    assert!(!emptied.contains("in_port("), "{emptied}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpuctl_capture_writes_both_transcripts_redacted_and_they_replay() {
    let daemons = daemons!();
    let (_hosts, mac) = bridge_with_flows(&daemons).await;
    let (_fixture_dir, root) = fixture::bluefield3_host_tempdir();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("bundle");
    let (root_arg, out_arg, rundir_arg) = (
        root.display().to_string(),
        out.display().to_string(),
        daemons.rundir().display().to_string(),
    );
    let capture = |out: &str, extra: &[&str]| {
        let mut argv = vec![
            "--sys-root",
            &root_arg,
            "capture",
            "--out",
            out,
            "--ovs-rundir",
            &rundir_arg,
            "--interval",
            "200ms",
        ];
        argv.extend_from_slice(extra);
        let run = dpuctl(&argv);
        assert!(
            run.status.success(),
            "capture: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    // Control for the redaction below: unredacted, the MAC and address are there.
    let plain = dir.path().join("plain");
    capture(&plain.display().to_string(), &["--no-redact"]);
    let plain_text = fs::read_to_string(plain.join("jsonrpc/ovs-vswitchd.jsonl"))
        .expect("plain transcript")
        .to_ascii_lowercase();
    assert!(
        plain_text.contains(&mac.to_ascii_lowercase()),
        "{mac} not in the flows"
    );
    assert!(
        plain_text.contains("10.201.0.1"),
        "tp1's address not in the flows"
    );
    capture(&out_arg, &[]);
    let manifest: Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    let entries = manifest["jsonrpc"].as_array().expect("transcripts listed");
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["transcript"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["jsonrpc/ovsdb-server.jsonl", "jsonrpc/ovs-vswitchd.jsonl"]
    );
    for entry in entries {
        assert_eq!(entry["refused"], serde_json::json!([]), "{entry}");
    }
    // Per reading: list_dbs, get_schema, the select; version, list-commands, dump-dps,
    // three dumps of the one datapath, dpif/show, dpctl/show, offload stats, dpctl/show
    // netdev@ovs-netdev.
    assert_eq!(entries[0]["exchanges"], 2 * 3, "{}", entries[0]);
    assert_eq!(entries[1]["exchanges"], 2 * 10, "{}", entries[1]);
    let ovsdb_text = fs::read_to_string(out.join(names[0])).expect("ovsdb transcript");
    let vswitchd_text = fs::read_to_string(out.join(names[1])).expect("vswitchd transcript");
    // tp1's MAC is in the flows (eth(src=...)) and in OVSDB's mac_in_use: redacted.
    let bundle = format!("{ovsdb_text}{vswitchd_text}").to_ascii_lowercase();
    assert!(
        !bundle.contains(&mac.to_ascii_lowercase()),
        "{mac} left in the bundle"
    );
    assert!(
        !bundle.contains("10.201.0.1"),
        "tp1's address left in the bundle"
    );
    // Both readings are there, and the redacted bundle still replays.
    for reading in [1, 2] {
        let tag = format!("\"reading\":{reading}");
        assert!(vswitchd_text.contains(&tag), "no reading {reading}");
    }
    let (replay, _fake) = replayed(&dir.path().join("replay"), &ovsdb_text, &vswitchd_text).await;
    let listed = bridges(&replay);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, "brc");
    assert!(
        flows(&replay)[0].1.iter().any(|f| f.packets > 0),
        "{replay:?}"
    );
}
