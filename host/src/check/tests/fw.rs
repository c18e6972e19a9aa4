//! The `fw.*` checks over canned `mstconfig`/`mlxconfig -e query` output (layouts of
//! mstflint 4.2x and 4.3x, `mlxconfig/mlxcfg_ui.cpp`), a fake runner and a sysfs fixture
//! with the devices: no test needs the tool or a card.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use dpu_probe::testing::SysTree;

use super::super::fw;
use super::super::fw_profile::FwProfile;
use super::super::verdict::{CheckVerdict, FactValue, Facts, Status};
use dpu_probe::fw_config::{
    gather_fw, gather_fw_devices, query_args, FwFacts, FwTool, FwToolRunner, ToolOutput,
    MAX_PARALLEL_QUERIES,
};
use dpu_probe::fw_config::{parse_fw_query, FwColumn};

/// BlueField-3 in DPU mode, mstflint 4.3x layout (`RO` column), one read-only row.
const BF3_DPU: &str = "
Device #1:
----------

Device type:        BlueField3
Name:               900-9D3B6-00CV-AA0_Ax
Description:        NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112
Device:             0000:03:00.0

Configurations:                                         Default              Current              Next Boot
          INTERNAL_CPU_MODEL                            EMBEDDED_CPU(1)      EMBEDDED_CPU(1)      EMBEDDED_CPU(1)
          INTERNAL_CPU_OFFLOAD_ENGINE                   ENABLED(0)           ENABLED(0)           ENABLED(0)
          INTERNAL_CPU_PAGE_SUPPLIER                    ECPF(0)              ECPF(0)              ECPF(0)
          INTERNAL_CPU_ESWITCH_MANAGER                  ECPF(0)              ECPF(0)              ECPF(0)
          INTERNAL_CPU_IB_VPORT0                        ECPF(0)              ECPF(0)              ECPF(0)
*         LINK_TYPE_P1                                  IB(1)                ETH(2)               ETH(2)
*         LINK_TYPE_P2                                  IB(1)                ETH(2)               ETH(2)
          SRIOV_EN                                      True(1)              True(1)              True(1)
          NUM_OF_VFS                                    16                   16                   16
          NVME_EMULATION_ENABLE                         False(0)             False(0)             False(0)
          NVME_EMULATION_NUM_PF                         1                    1                    1
          ATS_ENABLED                                   False(0)             False(0)             False(0)
          ROCE_CC_PRIO_MASK_P1                          255                  255                  255
          CNP_DSCP_P1                                   48                   48                   48
          PCI_DOWNSTREAM_PORT_OWNER                     Array[0..15]         Array[0..15]         Array[0..15]
  RO      BOOT_SETTINGS_KEY                             0x00000000           0x00000000           0x00000000
The '*' shows parameters with next value different from default/current value.

The 'RO' shows parameters which are for read only and cannot be changed
";

/// BlueField-3 in NIC mode, mstflint 4.2x layout (no `RO` column).
const BF3_NIC: &str = "
Device #1:
----------

Device type:    BlueField3
Name:           900-9D3B4-00EN-EA0_Ax
Description:    NVIDIA BlueField-3 B3140L E-Series FHHL SuperNIC; 400GbE / NDR IB (default mode); Single-port QSFP112
Device:         0000:03:00.0

Configurations:                              Default         Current         Next Boot
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)
*        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      DISABLED(1)     DISABLED(1)
         INTERNAL_CPU_PAGE_SUPPLIER          ECPF(0)         ECPF(0)         ECPF(0)
         LINK_TYPE_P1                        ETH(2)          ETH(2)          ETH(2)
         CNP_DSCP_P1                         48              48              48
The '*' shows parameters with next value different from default/current value.
";

/// BlueField-3 in DPU mode now, NIC mode and SR-IOV off after the next reset.
const BF3_PENDING: &str = "
Device #1:
----------

Device type:    BlueField3
Device:         0000:03:00.0

Configurations:                              Default         Current         Next Boot
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)
*        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      DISABLED(1)
         LINK_TYPE_P1                        ETH(2)          ETH(2)          ETH(2)
*        SRIOV_EN                            True(1)         True(1)         False(0)
         CNP_DSCP_P1                         48              48              48
The '*' shows parameters with next value different from default/current value.
";

/// ConnectX-7, both ports Ethernet, ATS on (a VM host), CC on priority 3 only.
const CX7_ETH: &str = "
Device #1:
----------

Device type:        ConnectX7
Name:               MCX755106AS-HEA_Ax
Description:        NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112
Device:             0000:17:00.0

Configurations:                                         Default              Current              Next Boot
          LINK_TYPE_P1                                  ETH(2)               ETH(2)               ETH(2)
          LINK_TYPE_P2                                  ETH(2)               ETH(2)               ETH(2)
          SRIOV_EN                                      False(0)             False(0)             False(0)
*         ATS_ENABLED                                   False(0)             True(1)              True(1)
*         ROCE_CC_PRIO_MASK_P1                          255                  8                    8
          CNP_DSCP_P1                                   48                   48                   48
The '*' shows parameters with next value different from default/current value.
";

/// What an unreadable device prints (stdout, exit 3).
const OPEN_FAILED: &str =
    "-E- Failed to open the device: 0000:03:00.0: No such file or directory\n";

/// A table cut short: some TLVs could not be read (exit non-zero, table kept).
const PARTIAL: &str = "
Device #1:
----------

Device type:    BlueField3
Device:         0000:03:00.0

Configurations:                              Default         Current         Next Boot
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)
         INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      ENABLED(0)
-E- Failed to query some of the TLVs:
    Failed to query the current values of the following TLVs:
    nv_internal_cpu_conf
";

const PROFILE: &str = "\
# GPU node, lossless RoCE
[fw]
LINK_TYPE_P1 = \"ETH\"
CNP_DSCP_P1 = 48
";

/// Answers each device's query with canned output and records every argument vector.
/// With a [`Gate`], each query also waits until that many queries are in flight.
struct FakeTool {
    tool: Option<FwTool>,
    outputs: BTreeMap<String, (Option<i32>, String)>,
    calls: Mutex<Vec<Vec<String>>>,
    gate: Option<Gate>,
}

/// Holds each query until `wanted` are in flight at once, which only happens when they
/// run in parallel. A query that waits `patience` without seeing them opens the gate for
/// good and records that it gave up, so serialized queries fail the test once, not eight
/// times over.
struct Gate {
    wanted: usize,
    patience: Duration,
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    in_flight: usize,
    most_in_flight: usize,
    open: bool,
    gave_up: usize,
}

impl Gate {
    fn new(wanted: usize) -> Self {
        Self {
            wanted,
            // Generous: the test only fails when the queries never overlap.
            patience: Duration::from_secs(30),
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
        }
    }

    fn enter(&self) {
        let mut state = self.state.lock().expect("gate");
        state.in_flight += 1;
        state.most_in_flight = state.most_in_flight.max(state.in_flight);
        if state.in_flight >= self.wanted {
            state.open = true;
            self.changed.notify_all();
        }
        let (mut state, waited) = self
            .changed
            .wait_timeout_while(state, self.patience, |s| !s.open)
            .expect("gate");
        if waited.timed_out() {
            state.gave_up += 1;
            state.open = true;
            self.changed.notify_all();
        }
    }

    fn leave(&self) {
        self.state.lock().expect("gate").in_flight -= 1;
    }
}

impl FakeTool {
    fn new(name: &'static str, outputs: &[(&str, Option<i32>, &str)]) -> Self {
        Self {
            tool: Some(FwTool {
                name,
                path: PathBuf::from(format!("/usr/bin/{name}")),
            }),
            outputs: outputs
                .iter()
                .map(|(bdf, code, text)| ((*bdf).to_owned(), (*code, (*text).to_owned())))
                .collect(),
            calls: Mutex::new(Vec::new()),
            gate: None,
        }
    }

    fn missing() -> Self {
        Self {
            tool: None,
            outputs: BTreeMap::new(),
            calls: Mutex::new(Vec::new()),
            gate: None,
        }
    }

    fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().expect("calls").clone()
    }
}

impl FwToolRunner for FakeTool {
    fn locate(&self) -> Option<FwTool> {
        self.tool.clone()
    }

    fn run(
        &self,
        _tool: &FwTool,
        args: &[String],
        _timeout: Duration,
    ) -> std::io::Result<ToolOutput> {
        self.calls.lock().expect("calls").push(args.to_vec());
        if let Some(gate) = &self.gate {
            gate.enter();
        }
        let bdf = args.get(2).cloned().unwrap_or_default();
        let answer = self
            .outputs
            .get(&bdf)
            .cloned()
            .ok_or_else(|| std::io::Error::other(format!("no canned output for {bdf}")));
        if let Some(gate) = &self.gate {
            gate.leave();
        }
        let (code, text) = answer?;
        Ok(ToolOutput {
            stdout: text,
            stderr: String::new(),
            exit_code: code,
            timed_out: false,
        })
    }
}

/// A sysfs tree with these PCI functions: (address, vendor, device, is a VF).
fn tree(functions: &[(&str, u16, u16, bool)]) -> SysTree {
    let tree = SysTree::new();
    for (address, vendor, device, vf) in functions {
        let d = format!("sys/bus/pci/devices/{address}");
        tree.attrs(
            &d,
            &[
                ("vendor", &format!("0x{vendor:04x}")),
                ("device", &format!("0x{device:04x}")),
                ("class", "0x020000"),
            ],
        );
        if *vf {
            tree.dir(&format!("{d}/physfn"));
        }
    }
    tree
}

const BF3: (&str, u16, u16, bool) = ("0000:03:00.0", 0x15b3, 0xa2dc, false);

/// Facts for one BlueField-3 (plus its second PF, its VF and an Intel NIC, which are not
/// queried) answered with `output`.
fn bf3_with(output: &str, code: i32) -> (FwFacts, FakeTool) {
    let dir = tree(&[
        BF3,
        ("0000:03:00.1", 0x15b3, 0xa2dc, false),
        ("0000:03:00.2", 0x15b3, 0x101e, true),
        ("0000:5e:00.0", 0x8086, 0x1592, false),
    ]);
    let runner = FakeTool::new("mstconfig", &[("0000:03:00.0", Some(code), output)]);
    let facts = gather_fw_devices(&dir.root(), &runner);
    (facts, runner)
}

fn judged(check: impl Fn(&mut Facts) -> CheckVerdict) -> CheckVerdict {
    let mut facts = Facts::new();
    let mut v = check(&mut facts);
    v.facts = facts;
    v
}

fn profile(text: &str) -> FwProfile {
    FwProfile::parse(text).expect("profile")
}

// ---- the parser ----

#[test]
fn a_bluefield3_dpu_table_parses_into_typed_values() {
    let q = parse_fw_query(BF3_DPU).expect("parse");
    assert_eq!(q.device_type.as_deref(), Some("BlueField3"));
    assert_eq!(q.device.as_deref(), Some("0000:03:00.0"));
    assert!(q
        .description
        .as_deref()
        .is_some_and(|d| d.contains("B3220")));
    assert_eq!(
        q.columns,
        [FwColumn::Default, FwColumn::Current, FwColumn::NextBoot]
    );
    assert_eq!(q.params.len(), 16);
    let model = q.param("INTERNAL_CPU_MODEL").expect("model");
    let current = model.current.as_ref().expect("current");
    assert_eq!(current.name.as_deref(), Some("EMBEDDED_CPU"));
    assert_eq!(current.number, Some(1));
    let link = q.param("LINK_TYPE_P1").expect("link");
    assert!(
        link.marked && !link.pending(),
        "default IB, current = next = ETH"
    );
    assert_eq!(link.default.as_ref().and_then(|v| v.number), Some(1));
    assert_eq!(
        q.param("CNP_DSCP_P1").map(|p| p.next_boot.number),
        Some(Some(48))
    );
    let sriov = q.param("SRIOV_EN").expect("sriov");
    assert_eq!(sriov.next_boot.name.as_deref(), Some("True"));
    let key = q.param("BOOT_SETTINGS_KEY").expect("ro row");
    assert!(key.read_only);
    assert_eq!(key.next_boot.number, Some(0));
    let array = q.param("PCI_DOWNSTREAM_PORT_OWNER").expect("array");
    assert_eq!(
        (array.next_boot.name.as_ref(), array.next_boot.number),
        (None, None)
    );
    assert!(q.errors.is_empty() && q.notes.is_empty());
}

#[test]
fn an_older_layout_and_a_next_boot_only_table_parse() {
    let q = parse_fw_query(BF3_NIC).expect("parse");
    assert_eq!(q.params.len(), 5);
    let engine = q.param("INTERNAL_CPU_OFFLOAD_ENGINE").expect("engine");
    assert!(engine.marked && !engine.pending());
    let plain = "Device #1:\n----------\n\nDevice type:    ConnectX7\n\nConfigurations:                              Next Boot\n         LINK_TYPE_P1                        ETH(2)\n";
    let q = parse_fw_query(plain).expect("parse");
    assert_eq!(q.columns, [FwColumn::NextBoot]);
    assert!(!q.shows_current());
    assert_eq!(
        q.param("LINK_TYPE_P1").map(|p| p.current.is_none()),
        Some(true)
    );
}

#[test]
fn every_malformed_line_is_an_error_naming_its_line() {
    let short_row = BF3_NIC.replace(
        "CNP_DSCP_P1                         48              48              48",
        "CNP_DSCP_P1                         48              48",
    );
    let e = parse_fw_query(&short_row).expect_err("two values");
    assert_eq!(e.line, 15, "{e}");
    assert!(
        e.reason.contains("CNP_DSCP_P1: 2 values for 3 columns"),
        "{e}"
    );
    let bad_value = BF3_NIC.replace("DISABLED(1)     DISABLED(1)", "DISABLED(x)     DISABLED(1)");
    let e = parse_fw_query(&bad_value).expect_err("DISABLED(x)");
    assert_eq!(e.line, 12, "{e}");
    assert!(
        e.reason.contains("\"DISABLED(x)\" is not NAME(NUMBER)"),
        "{e}"
    );
    let bad_name = BF3_NIC.replace("LINK_TYPE_P1    ", "link type p1    ");
    let e = parse_fw_query(&bad_name).expect_err("lower case");
    assert_eq!(e.line, 14, "{e}");
    let bad_header = BF3_NIC.replace("Next Boot", "Later");
    let e = parse_fw_query(&bad_header).expect_err("header");
    assert_eq!(e.line, 10, "{e}");
    assert!(e.to_string().starts_with("line 10: unknown column"), "{e}");
    let e = parse_fw_query(OPEN_FAILED).expect_err("no table");
    assert_eq!(e.line, 0);
    assert!(e.reason.contains("Failed to open the device"), "{e}");
    let two = format!("{BF3_NIC}{BF3_NIC}");
    let e = parse_fw_query(&two).expect_err("two devices");
    assert!(e.reason.contains("one device at a time"), "{e}");
}

// ---- the runner and fw.tool ----

#[test]
fn the_tool_missing_is_a_skip_naming_the_debian_package() {
    let dir = tree(&[BF3]);
    let runner = FakeTool::missing();
    let facts = gather_fw_devices(&dir.root(), &runner);
    assert!(matches!(facts, FwFacts::NoTool));
    for check in [
        judged(|f| fw::tool(&facts, f)),
        judged(|f| fw::mode(&facts, None, f)),
        judged(|f| fw::pending(&facts, f)),
        judged(|f| fw::profile(&facts, Some(&profile(PROFILE)), f)),
    ] {
        assert_eq!(check.status, Status::Skip, "{}", check.detail);
        assert!(
            check.detail.contains("mstconfig")
                && check.detail.contains("mlxconfig")
                && check.detail.contains("Debian package mstflint"),
            "{}",
            check.detail
        );
    }
    assert!(runner.calls().is_empty());
}

#[test]
fn a_fixture_root_is_never_queried() {
    let dir = tree(&[BF3]);
    let runner = FakeTool::new("mstconfig", &[("0000:03:00.0", Some(0), BF3_DPU)]);
    let facts = gather_fw(&dir.root(), &runner);
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Skip);
    assert!(v.detail.contains("--sys-root"), "{}", v.detail);
    assert!(runner.calls().is_empty());
}

#[test]
fn only_function_0_of_each_nic_is_queried_read_only() {
    let (facts, runner) = bf3_with(BF3_DPU, 0);
    assert_eq!(
        runner.calls(),
        [query_args("0000:03:00.0")],
        "one query, of function 0, not of .1, the VF or the Intel NIC"
    );
    assert_eq!(
        query_args("0000:03:00.0"),
        ["-e", "-d", "0000:03:00.0", "query"]
    );
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert_eq!(
        v.detail,
        "mstconfig read 0000:03:00.0 (BlueField-3) 16 parameters"
    );
    assert_eq!(v.facts["tool"], FactValue::from("mstconfig"));
    let FactValue::List(devices) = &v.facts["devices"] else {
        panic!("devices: {:?}", v.facts);
    };
    let FactValue::Record(device) = &devices[0] else {
        panic!("a record");
    };
    assert_eq!(device["device_type"], FactValue::from("BlueField3"));
    let FactValue::List(params) = &device["parameters"] else {
        panic!("parameters");
    };
    let FactValue::Record(dscp) = params
        .iter()
        .find(|p| matches!(p, FactValue::Record(r) if r["name"] == FactValue::from("CNP_DSCP_P1")))
        .expect("CNP_DSCP_P1")
    else {
        panic!("a record");
    };
    assert_eq!(dscp["current"], FactValue::Int(48));
    assert_eq!(dscp["next_boot"], FactValue::Int(48));
    assert_eq!(dscp["default"], FactValue::Int(48));
}

/// `count` ConnectX-7 function 0s (and each one's second PF), addresses listed out of
/// order, and a fake that answers each with a table naming its own address.
fn connectx_server(count: usize, gate: Option<Gate>) -> (SysTree, FakeTool) {
    let addresses: Vec<String> = (0..count)
        .rev()
        .map(|i| format!("0000:{:02x}:00.0", 0x18 + 0x10 * i))
        .collect();
    let mut functions: Vec<(&str, u16, u16, bool)> = Vec::new();
    let second: Vec<String> = addresses.iter().map(|a| a.replace(".0", ".1")).collect();
    for (a, b) in addresses.iter().zip(&second) {
        functions.push((a.as_str(), 0x15b3, 0x1021, false));
        functions.push((b.as_str(), 0x15b3, 0x1021, false));
    }
    let dir = tree(&functions);
    let tables: Vec<String> = addresses
        .iter()
        .map(|a| CX7_ETH.replace("0000:17:00.0", a))
        .collect();
    let outputs: Vec<(&str, Option<i32>, &str)> = addresses
        .iter()
        .zip(&tables)
        .map(|(a, t)| (a.as_str(), Some(0), t.as_str()))
        .collect();
    let mut runner = FakeTool::new("mlxconfig", &outputs);
    runner.gate = gate;
    (dir, runner)
}

#[test]
fn eight_cards_are_queried_at_once_and_reported_in_address_order() {
    let (dir, runner) = connectx_server(8, Some(Gate::new(8)));
    let facts = gather_fw_devices(&dir.root(), &runner);
    let gate = runner.gate.as_ref().expect("gate");
    let state = gate.state.lock().expect("gate");
    assert_eq!(
        state.gave_up, 0,
        "a query waited {:?} without the other seven in flight: the queries ran one after another",
        gate.patience
    );
    assert_eq!(state.most_in_flight, 8);
    drop(state);
    let FwFacts::Queried { devices, .. } = &facts else {
        panic!("queried: {facts:?}");
    };
    let addresses: Vec<&str> = devices.iter().map(|d| d.address.as_str()).collect();
    let mut sorted = addresses.clone();
    sorted.sort_unstable();
    assert_eq!(addresses, sorted, "address order");
    assert_eq!(addresses.len(), 8, "function 0 of each card only");
    for d in devices {
        let q = d.query.as_ref().expect("read");
        assert_eq!(
            q.device.as_deref(),
            Some(d.address.as_str()),
            "each device carries its own table"
        );
    }
    assert_eq!(runner.calls().len(), 8);
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
}

#[test]
fn more_cards_than_the_bound_never_run_more_than_the_bound_at_once() {
    let cards = MAX_PARALLEL_QUERIES + 4;
    let (dir, runner) = connectx_server(cards, Some(Gate::new(MAX_PARALLEL_QUERIES)));
    let facts = gather_fw_devices(&dir.root(), &runner);
    let state = runner
        .gate
        .as_ref()
        .expect("gate")
        .state
        .lock()
        .expect("gate");
    assert_eq!(
        state.gave_up, 0,
        "the first {MAX_PARALLEL_QUERIES} overlapped"
    );
    assert_eq!(state.most_in_flight, MAX_PARALLEL_QUERIES);
    drop(state);
    assert_eq!(facts.read_devices().len(), cards, "every card was read");
    // Negative control: the gate does catch queries that never overlap.
    let (dir, runner) = connectx_server(
        1,
        Some(Gate {
            patience: Duration::from_millis(10),
            ..Gate::new(2)
        }),
    );
    gather_fw_devices(&dir.root(), &runner);
    assert_eq!(
        runner
            .gate
            .as_ref()
            .expect("gate")
            .state
            .lock()
            .expect("gate")
            .gave_up,
        1
    );
}

#[test]
fn one_unreadable_card_among_eight_fails_only_its_own_entry() {
    let (dir, mut runner) = connectx_server(8, None);
    let broken = runner.outputs.keys().nth(3).expect("a fourth card").clone();
    runner.outputs.insert(
        broken.clone(),
        (Some(3), OPEN_FAILED.replace("0000:03:00.0", &broken)),
    );
    let facts = gather_fw_devices(&dir.root(), &runner);
    let FwFacts::Queried { devices, .. } = &facts else {
        panic!("queried: {facts:?}");
    };
    let failed: Vec<&str> = devices
        .iter()
        .filter(|d| d.query.is_err())
        .map(|d| d.address.as_str())
        .collect();
    assert_eq!(failed, [broken.as_str()]);
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Fail);
    assert!(v.detail.contains(&broken), "{}", v.detail);
}

#[test]
fn a_device_the_tool_cannot_open_fails_fw_tool_with_its_words() {
    let (facts, _) = bf3_with(OPEN_FAILED, 3);
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail.contains("0000:03:00.0 (BlueField-3)")
            && v.detail.contains("exited 3")
            && v.detail.contains("Failed to open the device"),
        "{}",
        v.detail
    );
    let v = judged(|f| fw::mode(&facts, None, f));
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
}

#[test]
fn a_partial_table_warns_and_still_judges() {
    let (facts, _) = bf3_with(PARTIAL, 3);
    let v = judged(|f| fw::tool(&facts, f));
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.contains("Failed to query some of the TLVs"),
        "{}",
        v.detail
    );
    assert_eq!(judged(|f| fw::mode(&facts, None, f)).status, Status::Pass);
}

// ---- fw.mode ----

#[test]
fn dpu_mode_passes_and_nic_mode_is_named() {
    let (facts, _) = bf3_with(BF3_DPU, 0);
    let v = judged(|f| fw::mode(&facts, None, f));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert!(
        v.detail.contains("0000:03:00.0 (BlueField-3) DPU mode")
            && v.detail.contains("INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED(0)"),
        "{}",
        v.detail
    );
    let (facts, _) = bf3_with(BF3_NIC, 0);
    let v = judged(|f| fw::mode(&facts, None, f));
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.contains("NIC mode")
            && v.detail.contains("INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED(1)"),
        "{}",
        v.detail
    );
    let nic = profile("[fw]\nINTERNAL_CPU_OFFLOAD_ENGINE = \"DISABLED\"\n");
    let v = judged(|f| fw::mode(&facts, Some(&nic), f));
    assert_eq!(v.status, Status::Pass, "NIC mode on purpose: {}", v.detail);
}

#[test]
fn a_mode_the_profile_does_not_expect_fails() {
    let (facts, _) = bf3_with(BF3_NIC, 0);
    let dpu = profile("[fw]\nINTERNAL_CPU_OFFLOAD_ENGINE = 0\n");
    let v = judged(|f| fw::mode(&facts, Some(&dpu), f));
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail.contains("NIC mode") && v.detail.contains("the profile expects DPU mode"),
        "{}",
        v.detail
    );
    assert_eq!(v.facts["expected_mode"], FactValue::from("DPU mode"));
}

#[test]
fn a_pending_mode_change_warns_and_says_how_it_takes_effect() {
    let (facts, _) = bf3_with(BF3_PENDING, 0);
    let v = judged(|f| fw::mode(&facts, None, f));
    assert_eq!(v.status, Status::Warn);
    assert!(
        v.detail
            .contains("DPU mode now, NIC mode after the next firmware reset")
            && v.detail.contains(fw::TAKES_EFFECT),
        "{}",
        v.detail
    );
}

#[test]
fn a_connectx_is_not_judged_by_fw_mode() {
    let dir = tree(&[("0000:17:00.0", 0x15b3, 0x1021, false)]);
    let runner = FakeTool::new("mlxconfig", &[("0000:17:00.0", Some(0), CX7_ETH)]);
    let facts = gather_fw_devices(&dir.root(), &runner);
    let v = judged(|f| fw::mode(&facts, None, f));
    assert_eq!(v.status, Status::Skip);
    assert!(
        v.detail.contains("no BlueField") && v.detail.contains("0000:17:00.0"),
        "{}",
        v.detail
    );
    assert_eq!(judged(|f| fw::tool(&facts, f)).status, Status::Pass);
}

// ---- fw.pending ----

#[test]
fn fw_pending_lists_every_change_and_passes_without_one() {
    let (facts, _) = bf3_with(BF3_PENDING, 0);
    let v = judged(|f| fw::pending(&facts, f));
    assert_eq!(v.status, Status::Warn);
    assert!(
        v.detail
            .contains("INTERNAL_CPU_OFFLOAD_ENGINE ENABLED(0) -> DISABLED(1)")
            && v.detail.contains("SRIOV_EN True(1) -> False(0)")
            && v.detail.contains(fw::TAKES_EFFECT),
        "{}",
        v.detail
    );
    assert!(!v.detail.contains("CNP_DSCP_P1"), "{}", v.detail);
    let (facts, _) = bf3_with(BF3_DPU, 0);
    let v = judged(|f| fw::pending(&facts, f));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert!(v.detail.contains("no pending change"), "{}", v.detail);
}

// ---- fw.profile ----

#[test]
fn fw_profile_skips_without_a_profile() {
    let (facts, _) = bf3_with(BF3_DPU, 0);
    let v = judged(|f| fw::profile(&facts, None, f));
    assert_eq!(v.status, Status::Skip);
    assert!(v.detail.contains("--profile"), "{}", v.detail);
}

#[test]
fn a_connectx7_with_eth_links_matches_the_shipped_profile() {
    let dir = tree(&[("0000:17:00.0", 0x15b3, 0x1021, false)]);
    let runner = FakeTool::new("mlxconfig", &[("0000:17:00.0", Some(0), CX7_ETH)]);
    let facts = gather_fw_devices(&dir.root(), &runner);
    let shipped = FwProfile::load(&shipped_profile()).expect("shipped profile");
    let v = judged(|f| fw::profile(&facts, Some(&shipped), f));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
}

#[test]
fn a_wrong_setting_fails_naming_param_expected_and_current() {
    let (facts, _) = bf3_with(BF3_DPU, 0);
    let p = profile("[fw]\nROCE_CC_PRIO_MASK_P1 = 8\nLINK_TYPE_P1 = \"ETH\"\n");
    let v = judged(|f| fw::profile(&facts, Some(&p), f));
    assert_eq!(v.status, Status::Fail);
    assert_eq!(
        v.detail,
        "0000:03:00.0 (BlueField-3) ROCE_CC_PRIO_MASK_P1: expected 8, current 255"
    );
    let missing = profile("[fw]\nNO_SUCH_PARAM = 1\n");
    let v = judged(|f| fw::profile(&facts, Some(&missing), f));
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail
            .contains("NO_SUCH_PARAM (profile line 2) is reported by no device"),
        "{}",
        v.detail
    );
}

#[test]
fn a_setting_waiting_for_a_reset_warns() {
    let (facts, _) = bf3_with(BF3_PENDING, 0);
    let p = profile("[fw]\nINTERNAL_CPU_OFFLOAD_ENGINE = \"DISABLED\"\n");
    let v = judged(|f| fw::profile(&facts, Some(&p), f));
    assert_eq!(v.status, Status::Warn);
    assert!(
        v.detail.contains(
            "INTERNAL_CPU_OFFLOAD_ENGINE: expected DISABLED, current ENABLED(0), next boot DISABLED(1)"
        ) && v.detail.contains(fw::TAKES_EFFECT),
        "{}",
        v.detail
    );
    // Right now, undone by the next reset: a failure.
    let p = profile("[fw]\nSRIOV_EN = true\n");
    let v = judged(|f| fw::profile(&facts, Some(&p), f));
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail.contains("the next firmware reset undoes it"),
        "{}",
        v.detail
    );
}

// ---- profile files ----

fn shipped_profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/profiles/gpu-lossless-roce.toml")
}

#[test]
fn the_shipped_profile_loads_with_normalized_values() {
    let p = FwProfile::load(&shipped_profile()).expect("shipped profile");
    let link = p.get("LINK_TYPE_P1").expect("LINK_TYPE_P1");
    assert_eq!((link.name.as_deref(), link.number), (Some("ETH"), Some(2)));
    assert_eq!(p.get("CNP_DSCP_P1").and_then(|e| e.number), Some(48));
    assert!(
        p.entries.windows(2).all(|w| w[0].line < w[1].line),
        "file order"
    );
}

#[test]
fn profile_errors_name_the_key_and_line() {
    let cases = [
        (
            "[fw]\nLINK_TYPE_P1 = \"ETH\"\n[extra]\nX = 1\n",
            3,
            "unknown field `extra`",
        ),
        (
            "[fw]\nCNP_DSCP_P1 = 48\nCNP_DSCP_P1 = 26\n",
            3,
            "duplicate key (`CNP_DSCP_P1 = 26`)",
        ),
        (
            "[fw]\nLINK_TYPE_P1 = \"ETHERNET\"\n",
            2,
            "LINK_TYPE_P1: \"ETHERNET\" is not one of IB (1), ETH (2)",
        ),
        (
            "[fw]\n\nCNP_DSCP_P1 = 64\n",
            3,
            "CNP_DSCP_P1: 64 is out of range 0..=63",
        ),
        (
            "[fw]\nSRIOV_EN = \"yes\"\n",
            2,
            "SRIOV_EN: \"yes\" is not one of False (0), True (1)",
        ),
        ("[fw]\nNUM_OF_VFS = -1\n", 2, "NUM_OF_VFS: -1 is negative"),
        (
            "[fw]\nATS_ENABLED = 1.5\n",
            2,
            "ATS_ENABLED: a float is not a value",
        ),
        (
            "[fw]\nlink_type_p1 = \"ETH\"\n",
            2,
            "link_type_p1: not a firmware parameter name",
        ),
    ];
    for (text, line, says) in cases {
        let e = FwProfile::parse(text).expect_err(text);
        assert_eq!(e.line, Some(line), "{text:?}: {e}");
        assert!(e.to_string().contains(says), "{text:?}: {e}");
        assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
    }
    let e = FwProfile::parse("fw = 3\n").expect_err("not a table");
    assert_eq!(e.line, Some(1), "{e}");
    let e = FwProfile::load(Path::new("/nonexistent/profile.toml")).expect_err("no file");
    assert!(
        e.to_string()
            .starts_with("profile /nonexistent/profile.toml: cannot read it"),
        "{e}"
    );
}
