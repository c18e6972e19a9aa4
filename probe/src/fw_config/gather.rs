//! Queries every NVIDIA/Mellanox NIC function 0 of a machine with the firmware tool and
//! keeps each table or why there is none. A GPU server has eight ConnectX cards and one
//! query takes a second or more, so the cards are queried at once, one thread each (at
//! most [`MAX_PARALLEL_QUERIES`]), and the results are put back in PCI address order.
//! `dpuctl check` runs it on the host, the agent on the BlueField's Arm.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::query::{parse_fw_query, FwQuery};
use super::tool::{query_args, FwTool, FwToolRunner, ToolOutput, QUERY_TIMEOUT};
use crate::pci::{self, PciFilter, PciFunction, PciFunctionKind, MELLANOX_VENDOR_ID};
use crate::{error_chain, SysRoot};

/// How many queries run at once: one per card of an eight-GPU server. Each is its own
/// process reading its own card's configuration space, so they do not wait on each
/// other; the bound keeps a host with many more functions from starting dozens at once.
pub const MAX_PARALLEL_QUERIES: usize = 8;

/// One queried device.
#[derive(Debug, Clone)]
pub struct FwDevice {
    /// Its PCI address (function 0).
    pub address: String,
    /// Its kind by PCI ID (BlueField NIC, ConnectX, ...).
    pub kind: PciFunctionKind,
    /// `BlueField-3`, when it is a BlueField.
    pub model: Option<&'static str>,
    /// The parsed table, or why there is none (the tool's words).
    pub query: Result<FwQuery, String>,
}

impl FwDevice {
    /// `0000:03:00.0 (BlueField-3)`, for verdicts.
    pub fn label(&self) -> String {
        match self.model {
            Some(model) => format!("{} ({model})", self.address),
            None => self.address.clone(),
        }
    }

    /// Whether the `fw.mode` check applies: a BlueField's NIC function.
    pub fn is_bluefield(&self) -> bool {
        self.kind == PciFunctionKind::BlueFieldNic
    }
}

/// The firmware settings of the host's NVIDIA/Mellanox devices, or why they were not read.
#[derive(Debug, Clone)]
pub enum FwFacts {
    /// Not attempted (a `--sys-root` that is not this machine); says why.
    NotRun(String),
    /// Not attempted: the tools open the devices' configuration space, which only root
    /// may, and the caller is not root.
    NotRoot,
    /// Neither tool is on PATH.
    NoTool,
    /// The PCI functions could not be listed.
    PciUnreadable(String),
    /// The tool ran for every device.
    Queried {
        /// The tool used.
        tool: FwTool,
        /// Every NVIDIA/Mellanox PCI function 0, in address order.
        devices: Vec<FwDevice>,
    },
}

impl FwFacts {
    /// The devices whose table was read, with their tables.
    pub fn read_devices(&self) -> Vec<(&FwDevice, &FwQuery)> {
        match self {
            Self::Queried { devices, .. } => devices
                .iter()
                .filter_map(|d| d.query.as_ref().ok().map(|q| (d, q)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Queries every NVIDIA/Mellanox function 0 under `root` with `runner`, as root only. The
/// tool talks to this machine's devices, so a root other than `/` (a fixture tree, an
/// image) is not queried.
pub fn gather_fw(root: &SysRoot, runner: &dyn FwToolRunner) -> FwFacts {
    if root.path() != Path::new("/") {
        return FwFacts::NotRun(format!(
            "--sys-root {}: mlxconfig/mstconfig query this machine's devices, not a tree",
            root.path().display()
        ));
    }
    // The tools open the devices' configuration space, which only root may: as another
    // user every query would fail, and a check run without root is not a firmware fault.
    if !nix::unistd::geteuid().is_root() {
        return FwFacts::NotRoot;
    }
    gather_fw_devices(root, runner)
}

/// [`gather_fw`] without the root check, for tests over fixture trees.
pub fn gather_fw_devices(root: &SysRoot, runner: &dyn FwToolRunner) -> FwFacts {
    let Some(tool) = runner.locate() else {
        return FwFacts::NoTool;
    };
    let functions = match pci::list_pci_functions(root, PciFilter::Mellanox) {
        Ok(functions) => functions,
        Err(e) => return FwFacts::PciUnreadable(error_chain(&e)),
    };
    let queried: Vec<&PciFunction> = functions.iter().filter(|f| is_queried(root, f)).collect();
    let addresses: Vec<&str> = queried.iter().map(|f| f.address.as_str()).collect();
    let queries = query_all(runner, &tool, &addresses);
    let devices = queried
        .into_iter()
        .zip(queries)
        .map(|(f, query)| FwDevice {
            address: f.address.clone(),
            kind: f.kind,
            model: f.model(),
            query,
        })
        .collect();
    FwFacts::Queried { tool, devices }
}

/// Function 0 of a Mellanox NIC: not a VF (no `physfn` link), not an emulated or SoC
/// function, which have no firmware configuration of their own.
fn is_queried(root: &SysRoot, f: &PciFunction) -> bool {
    let nic = matches!(
        f.kind,
        PciFunctionKind::BlueFieldNic | PciFunctionKind::ConnectX | PciFunctionKind::OtherMellanox
    );
    let is_vf = crate::root::exists(&root.sys("bus/pci/devices").join(&f.address).join("physfn"));
    nic && !is_vf && f.vendor_id == Some(MELLANOX_VENDOR_ID) && f.address.ends_with(".0")
}

/// Queries every address at once (at most [`MAX_PARALLEL_QUERIES`] threads, each taking
/// the next address until none is left) and returns the results in the order of
/// `addresses`. A thread that panicked leaves its addresses with an error saying so.
fn query_all(
    runner: &dyn FwToolRunner,
    tool: &FwTool,
    addresses: &[&str],
) -> Vec<Result<FwQuery, String>> {
    let next = AtomicUsize::new(0);
    let workers = addresses.len().min(MAX_PARALLEL_QUERIES);
    let mut results: Vec<Option<Result<FwQuery, String>>> = vec![None; addresses.len()];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(address) = addresses.get(index) else {
                            break done;
                        };
                        done.push((index, query_one(runner, tool, address)));
                    }
                })
            })
            .collect();
        for handle in handles {
            // A panicked worker's results are lost; its slots stay empty and say so below.
            if let Ok(done) = handle.join() {
                for (index, result) in done {
                    results[index] = Some(result);
                }
            }
        }
    });
    results
        .into_iter()
        .zip(addresses)
        .map(|(result, address)| {
            result.unwrap_or_else(|| {
                Err(format!(
                    "{} {}: the query thread panicked",
                    tool.name,
                    query_args(address).join(" ")
                ))
            })
        })
        .collect()
}

fn query_one(runner: &dyn FwToolRunner, tool: &FwTool, address: &str) -> Result<FwQuery, String> {
    let argv = query_args(address);
    let shown = format!("{} {}", tool.name, argv.join(" "));
    let out = runner
        .run(tool, &argv, QUERY_TIMEOUT)
        .map_err(|e| format!("{shown}: cannot run {}: {e}", tool.path.display()))?;
    if out.timed_out {
        return Err(format!("{shown}: no answer within {QUERY_TIMEOUT:?}"));
    }
    let parsed = parse_fw_query(&out.stdout);
    match (out.exit_code, parsed) {
        (Some(0), Ok(query)) => Ok(query),
        (Some(0), Err(e)) => Err(format!("{shown}: unreadable output: {e}")),
        // A partial table (some TLVs unreadable) still says what it could; the tool's
        // errors travel with it.
        (_, Ok(query)) if !query.params.is_empty() => Ok(query),
        (code, _) => Err(format!(
            "{shown} exited {}: {}",
            code.map_or("on a signal".to_owned(), |c| c.to_string()),
            tool_message(&out)
        )),
    }
}

/// The tool's own words about a failure: its `-E-` lines, else stderr, else stdout's tail.
fn tool_message(out: &ToolOutput) -> String {
    let errors: Vec<&str> = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .map(str::trim)
        .filter(|l| l.starts_with("-E-"))
        .collect();
    let text = if !errors.is_empty() {
        errors.join("; ")
    } else if !out.stderr.trim().is_empty() {
        out.stderr.trim().to_owned()
    } else {
        out.stdout
            .trim()
            .lines()
            .last()
            .unwrap_or("no output")
            .to_owned()
    };
    text.chars().take(300).collect()
}
