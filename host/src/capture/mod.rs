//! `dpuctl capture`: records exactly the sysfs/procfs files the project reads on a host,
//! redacts the machine's identifiers, and writes a bundle whose `root/` is a `--sys-root`.
//!
//! Bundle layout (docs/hardware.md):
//! - `root/`: the first reading, a sys root: what `check`'s fact gathering, the local
//!   inventory `dpu info` shows (system, PCI, netdevs, RDMA) and a counter snapshot of
//!   every local source read, as files, directories and symlinks;
//! - `readings/1/root/`: the same tree with the second counter snapshot's values over it,
//!   taken `interval` later: a sys root at the second instant;
//! - `root.netlink`, `readings/1/root.netlink`: each reading's netlink exchanges (the
//!   requests the passes sent, route/RDMA/DCB, and the kernel's answers), beside its tree
//!   where the probe looks for them, so each reading replays its netlink answers too
//!   (`netlink.rs`);
//! - `jsonrpc/<socket-name>.jsonl`: with `--snap-socket`, the SNAP/SPDK transcript of both
//!   readings ([`jsonrpc`]);
//! - `jsonrpc/ovsdb-server.jsonl`, `jsonrpc/ovs-vswitchd.jsonl`: with `--ovs-rundir`, the
//!   OVS transcripts of both readings ([`ovs`]);
//! - `manifest.json`: see [`manifest::Manifest`].
//!
//! The recording goes through the probe's own readers ([`dpu_probe::capture`]), not a copy
//! of `/sys`: what is in the bundle is what the project read, nothing else.

mod error;
pub mod jsonrpc;
pub mod manifest;
mod netlink;
pub mod ovs;
pub mod redact;
mod tc;
mod tc_redact;
mod tree;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use dpu_probe::capture::{self as recorder, RecordedNode, Recording};
use dpu_probe::counters::{NetdevSource, Sampler};
use dpu_probe::pci::PciFilter;
use dpu_probe::{netdev, pci, rdma, system, SysRoot};

use crate::check::facts::HostFacts;
pub use error::CaptureError;
use manifest::Manifest;
use redact::Redactor;

/// What to capture and where.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The root read (`/` live; a fixture or mounted image otherwise).
    pub sys_root: PathBuf,
    /// The bundle directory: absent or empty.
    pub out: PathBuf,
    /// Replace identifiers (the default) or keep them (`--no-redact`).
    pub redact: bool,
    /// Time between the two counter readings.
    pub interval: Duration,
    /// SNAP's (or SPDK's) JSON-RPC socket to record the read-only answers of, in both
    /// readings (`None`: no JSON-RPC is asked).
    pub snap_socket: Option<PathBuf>,
    /// OVS's run directory (`db.sock`, `ovs-vswitchd.pid` and its control socket) to
    /// record the agent's read-only OVS reads of, in both readings (`None`: OVS is not
    /// asked).
    pub ovs_rundir: Option<PathBuf>,
}

/// What a finished capture wrote.
#[derive(Debug, Clone)]
pub struct CaptureSummary {
    /// The bundle directory.
    pub out: PathBuf,
    /// The manifest written.
    pub manifest: Manifest,
}

/// What was run with the recorder on, in order: named in the manifest.
const FIRST_PASS: [&str; 5] = [
    "check: host fact gathering (PCI, netdevs, RDMA, GPU topology, IB ports, firmware, GDR, DCB, hypervisor)",
    "dpu info: local inventory (system facts, PCI functions, netdevs, RDMA devices)",
    "counters: snapshot of every local source as the root's own sampler reads it (netdevs over netlink where the root answers netlink; its samples kept as ROOT.live-samples) (reading 0)",
    "counters: snapshot of every local source, netdevs from sysfs (reading 0)",
    "tc: every link's ingress and egress filters, as the agent's flow join and the tc counter source read them (reading 0)",
];

/// Runs the capture and writes the bundle.
pub fn capture(options: &CaptureOptions) -> Result<CaptureSummary, CaptureError> {
    if options.interval.is_zero() {
        return Err(CaptureError::ZeroInterval);
    }
    let created = prepare_out(&options.out)?;
    let result = capture_into(options);
    if result.is_err() {
        clear_out(&options.out, created);
    }
    result
}

fn capture_into(options: &CaptureOptions) -> Result<CaptureSummary, CaptureError> {
    // The directory must be writable before minutes of reading: fail now if it is not.
    let first_dir = options.out.join("root");
    fs::create_dir(&first_dir).map_err(|source| CaptureError::Write {
        path: first_dir.clone(),
        source,
    })?;
    let root = SysRoot::new(&options.sys_root);
    let taken_at = SystemTime::now();

    let session = recorder::start(root.path()).map_err(CaptureError::Record)?;
    let facts = HostFacts::gather(&root);
    let system = system::read_system_facts(&root);
    let inventory = (
        pci::list_pci_functions(&root, PciFilter::All),
        netdev::list_netdevs(&root),
        rdma::list_rdma_devices(&root),
    );
    // First the sampler the agent uses on this root: over netlink on a live system, so
    // its link and RDMA requests are recorded, and the files it reads hold what it saw
    // (the first read of a path is the one recorded), so a replay answers what it did.
    let mut own_sampler = Sampler::new(root.clone());
    let own_first = own_sampler.snapshot(&[]);
    let mut sampler = Sampler::with_netdev_source(root.clone(), NetdevSource::Sysfs);
    let first_snapshot = sampler.snapshot(&[]);
    let first_filters = tc::read_filters(&root);
    let first = session.finish();
    let mut snap = options
        .snap_socket
        .as_deref()
        .map(jsonrpc::SnapCapture::new);
    if let Some(snap) = snap.as_mut() {
        snap.read(1)?;
    }
    let mut ovs = options.ovs_rundir.as_deref().map(ovs::OvsCapture::new);
    if let Some(ovs) = ovs.as_mut() {
        ovs.read(1)?;
    }
    tracing::debug!(
        paths = first.nodes.len(),
        samples = first_snapshot.samples.len(),
        hostfacts_rdma_ok = facts.rdma.is_ok(),
        inventory_ok = inventory.0.is_ok() && inventory.1.is_ok() && inventory.2.is_ok(),
        own_samples = own_first.samples.len(),
        tc_filters = first_filters,
        netlink_exchanges = first.netlink.len(),
        "first reading recorded"
    );

    std::thread::sleep(options.interval);
    let session = recorder::start(root.path()).map_err(CaptureError::Record)?;
    let own_second = own_sampler.snapshot(&[]);
    let second_snapshot = sampler.snapshot(&[]);
    let second_filters = tc::read_filters(&root);
    let second = session.finish();
    if let Some(snap) = snap.as_mut() {
        snap.read(2)?;
    }
    if let Some(ovs) = ovs.as_mut() {
        ovs.read(2)?;
    }
    tracing::debug!(
        paths = second.nodes.len(),
        samples = second_snapshot.samples.len(),
        own_samples = own_second.samples.len(),
        tc_filters = second_filters,
        netlink_exchanges = second.netlink.len(),
        "second reading recorded"
    );

    let mut redactor = options.redact.then(Redactor::default);
    let first_contents = contents(&first, redactor.as_mut());
    tree::write_tree(&first_dir, &first.nodes, &first_contents)?;

    let mut overlaid = first.nodes.clone();
    overlaid.extend(second.nodes.clone());
    let mut second_contents = first_contents;
    second_contents.extend(contents(&second, redactor.as_mut()));
    let second_dir = options.out.join("readings/1/root");
    fs::create_dir_all(&second_dir).map_err(|source| CaptureError::Write {
        path: second_dir.clone(),
        source,
    })?;
    tree::write_tree(&second_dir, &overlaid, &second_contents)?;
    netlink::write_live_samples(&options.out, "root", &own_first)?;
    netlink::write_live_samples(&options.out, "readings/1/root", &own_second)?;
    // A root that answers no netlink (a fixture tree, an image) gets no recording, so
    // its replay answers none either, as the source did.
    let netlink_files = if dpu_probe::netlink::answers_netlink(&root) {
        [
            Some(netlink::write_reading(
                &options.out,
                "root",
                first.netlink.clone(),
                redactor.as_mut(),
            )?),
            Some(netlink::write_reading(
                &options.out,
                "readings/1/root",
                netlink::overlay(&first.netlink, &second.netlink),
                redactor.as_mut(),
            )?),
        ]
    } else {
        [None, None]
    };
    let mut transcripts = match snap {
        Some(snap) => vec![snap.write(&options.out, redactor.as_mut())?],
        None => Vec::new(),
    };
    if let Some(ovs) = ovs {
        transcripts.extend(ovs.write(&options.out, redactor.as_mut())?);
    }

    let mut commands: Vec<String> = FIRST_PASS.iter().map(|c| (*c).to_owned()).collect();
    commands.push(format!(
        "counters: snapshot of every local source, netdevs from sysfs (reading 1, {} later)",
        humantime::format_duration(options.interval)
    ));
    commands.insert(
        commands.len() - 1,
        "counters: the root's own sampler again (reading 1; its name map kept from reading 0)"
            .to_owned(),
    );
    commands.push("tc: every link's ingress and egress filters (reading 1)".to_owned());
    let manifest = Manifest::new(manifest::ManifestInput {
        taken_at,
        kernel: system.kernel_release.clone(),
        sys_root: &options.sys_root,
        interval: options.interval,
        commands,
        readings: [("root", &first), ("readings/1/root", &second)],
        netlink: netlink_files,
        redactions: redactor.as_ref().map(|r| r.redactions().to_vec()),
        jsonrpc: transcripts,
    });
    let path = options.out.join("manifest.json");
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| CaptureError::Write {
        path: path.clone(),
        source: io::Error::other(e),
    })?;
    fs::write(&path, json).map_err(|source| CaptureError::Write { path, source })?;
    Ok(CaptureSummary {
        out: options.out.clone(),
        manifest,
    })
}

/// Each recorded file's bytes as they go into the tree.
fn contents(
    recording: &Recording,
    mut redactor: Option<&mut Redactor>,
) -> BTreeMap<PathBuf, Vec<u8>> {
    recording
        .nodes
        .iter()
        .filter_map(|(path, node)| match node {
            RecordedNode::File(bytes) => {
                let bytes = match redactor.as_deref_mut() {
                    Some(r) => r.file(path, bytes),
                    None => bytes.clone(),
                };
                Some((path.clone(), bytes))
            }
            _ => None,
        })
        .collect()
}

/// Makes sure `out` is a new or empty directory; `true` when this call created it.
fn prepare_out(out: &Path) -> Result<bool, CaptureError> {
    match fs::symlink_metadata(out) {
        Ok(meta) if !meta.is_dir() => Err(CaptureError::OutNotDir {
            path: out.to_owned(),
        }),
        Ok(_) => {
            let mut entries = fs::read_dir(out).map_err(|source| CaptureError::Write {
                path: out.to_owned(),
                source,
            })?;
            if entries.next().is_some() {
                return Err(CaptureError::OutNotEmpty {
                    path: out.to_owned(),
                });
            }
            Ok(false)
        }
        Err(_) => fs::create_dir(out)
            .map(|()| true)
            .map_err(|source| CaptureError::Write {
                path: out.to_owned(),
                source,
            }),
    }
}

/// Takes back what a failed capture wrote: the directory when it made it, else what it
/// put in the empty one it was given.
fn clear_out(out: &Path, created: bool) {
    if created {
        let _ = fs::remove_dir_all(out);
        return;
    }
    for name in [
        "root",
        "root.netlink",
        "root.live-samples",
        "readings",
        jsonrpc::TRANSCRIPT_DIR,
        "manifest.json",
    ] {
        let path = out.join(name);
        let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
    }
}
