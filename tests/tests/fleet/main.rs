//! The fleet tier: `dpuctl fleet` against many real `dpu-agent` processes on this
//! machine (tests/src/fleet.rs), a few of them broken on purpose. What is asserted is what
//! an operator relies on: every broken node is found and named with its fault, no healthy
//! node is blamed, failures are grouped by cause, a hung agent costs its deadline and no
//! more, and a bad inventory is refused before any agent is asked.

mod harness;
mod inventory;
mod scale;
mod select;
mod table;

use std::path::Path;

use dpu_tests::harness::dpuctl;
use serde_json::Value;

/// One `dpuctl -o json fleet` run: its exit code, the parsed report (Null when stdout is
/// not JSON) and both streams for messages.
#[derive(Debug)]
pub(crate) struct FleetRun {
    pub(crate) code: Option<i32>,
    pub(crate) report: Value,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl FleetRun {
    /// The report's row for node `name`.
    pub(crate) fn node(&self, name: &str) -> &Value {
        self.nodes()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {}", self.stdout))
    }

    /// Every node row.
    pub(crate) fn nodes(&self) -> &[Value] {
        self.report["nodes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no nodes array: {}\n{}", self.stdout, self.stderr))
    }

    /// The names of the rows, in report order.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.nodes()
            .iter()
            .map(|n| n["name"].as_str().expect("a row's name"))
            .collect()
    }

    /// Every failure group.
    pub(crate) fn groups(&self) -> &[Value] {
        self.report["groups"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no groups array: {}", self.stdout))
    }

    /// Every drift entry (an absent `drift` is none).
    pub(crate) fn drift(&self) -> &[Value] {
        self.report["drift"].as_array().map_or(&[], Vec::as_slice)
    }

    /// Context for a failed assertion: exit code, stderr and the start of stdout.
    pub(crate) fn context(&self) -> String {
        let head: String = self.stdout.chars().take(4000).collect();
        format!(
            "exit {:?}\nstderr: {}\nstdout: {head}",
            self.code, self.stderr
        )
    }
}

/// How a fleet run is paced: `--timeout` (each call) and `--deadline` (each target's
/// whole command), in seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub(crate) timeout: &'static str,
    pub(crate) deadline: &'static str,
}

// The limits are far above what a healthy node needs (about 1 s for 128 debug agents
// answering at once on two idle cores), so a loaded CI machine does not make a healthy
// node UNREACHABLE; a hung one costs them in full.

/// A hung agent costs the per-call `--timeout` (8 s), well inside the deadline (15 s).
pub(crate) const CALL_TIMEOUT_FIRST: Pace = Pace {
    timeout: "8",
    deadline: "15",
};

/// A hung agent runs out its `--deadline` (10 s) before the per-call timeout (30 s).
pub(crate) const DEADLINE_FIRST: Pace = Pace {
    timeout: "30",
    deadline: "10",
};

/// Runs `dpuctl -o json fleet --inventory FILE EXTRA... COMMAND...`, paced by
/// [`CALL_TIMEOUT_FIRST`].
pub(crate) fn run_fleet(inventory: &Path, extra: &[&str], command: &[&str]) -> FleetRun {
    run_fleet_paced(CALL_TIMEOUT_FIRST, inventory, extra, command)
}

/// Runs `dpuctl -o json --timeout T fleet --inventory FILE --deadline D EXTRA... COMMAND...`.
pub(crate) fn run_fleet_paced(
    pace: Pace,
    inventory: &Path,
    extra: &[&str],
    command: &[&str],
) -> FleetRun {
    let inventory = inventory.display().to_string();
    let mut args = vec![
        "-o",
        "json",
        "--timeout",
        pace.timeout,
        "fleet",
        "--inventory",
    ];
    args.push(&inventory);
    args.extend(["--deadline", pace.deadline]);
    args.extend(extra);
    args.extend(command);
    let out = dpuctl(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    FleetRun {
        code: out.status.code(),
        report: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The problems of a node row whose check id is `check`.
pub(crate) fn problems<'a>(row: &'a Value, check: &str) -> Vec<&'a Value> {
    row["problems"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|p| p["check"] == check)
        .collect()
}

/// A JSON string field as text ("" when absent).
pub(crate) fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}
