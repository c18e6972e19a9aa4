//! The `gpu.*` checks: is every NVIDIA GPU next to an RDMA NIC on PCIe, does each GPU
//! have a NIC of its own, and do a GPU and its NIC agree on their NUMA node. NCCL sends a
//! GPU's network traffic through its nearest NIC (ties shared) and uses GPUDirect RDMA
//! only up to PXB by default, so the relations decide a training job's bandwidth.
//! Relations come from [`dpu_probe::pci::topology`]; the legend and its sources are in
//! `docs/reference/gpu-topology.md`.

use dpu_probe::pci::topology::{PciRelation, PciTopology, TopologyGpu, TopologyNic};

use super::facts::HostFacts;
use super::verdict::{pass, put, skip, warn, CheckVerdict, FactValue, Facts};

/// A GPU with the NICs nearest to it (several when tied) and how near they are.
struct Nearest<'a> {
    gpu: &'a TopologyGpu,
    relation: PciRelation,
    nics: Vec<&'a TopologyNic>,
}

/// The topology, or the skip that says why there is nothing to judge. Never a pass: a
/// host without GPUs or NICs has not shown that its GPUs are placed well.
fn readable(host: &HostFacts) -> Result<&PciTopology, CheckVerdict> {
    host.gpu_topology
        .as_ref()
        .map_err(|e| skip(format!("cannot read the PCIe topology: {e}")))
}

/// Each GPU's nearest NICs, or the skip when there are no GPUs or no NICs to relate.
fn nearest(topo: &PciTopology) -> Result<Vec<Nearest<'_>>, CheckVerdict> {
    if topo.gpus().is_empty() {
        return Err(skip(
            "no NVIDIA GPU on PCIe (vendor 0x10de, class 0x0302xx or 0x0300xx)",
        ));
    }
    if topo.nics().is_empty() {
        let soft = if topo.unplaced_rdma().is_empty() {
            String::new()
        } else {
            format!(" ({} has no PCI function)", topo.unplaced_rdma().join(", "))
        };
        return Err(skip(format!(
            "no RDMA NIC on a PCI function{soft}: nothing carries the {} GPU(s)' network traffic",
            topo.gpus().len()
        )));
    }
    Ok((0..topo.gpus().len())
        .filter_map(|g| {
            let (relation, nics) = topo.nearest_nics(g)?;
            Some(Nearest {
                gpu: &topo.gpus()[g],
                relation,
                nics: nics.into_iter().map(|n| &topo.nics()[n]).collect(),
            })
        })
        .collect())
}

fn numa_text(node: Option<u32>) -> String {
    node.map_or("unknown".to_owned(), |n| n.to_string())
}

fn names(nics: &[&TopologyNic]) -> String {
    let names: Vec<&str> = nics.iter().map(|n| n.ibdev.as_str()).collect();
    names.join(", ")
}

fn ibdevs(nics: &[&TopologyNic]) -> FactValue {
    nics.iter()
        .map(|n| n.ibdev.as_str())
        .collect::<Vec<_>>()
        .into()
}

/// The whole GPU x NIC matrix as facts: `gpus`, `nics`, `matrix` (rows in `gpus` order,
/// columns in `nics` order, `nvidia-smi topo -m` labels) and `unplaced_rdma`.
fn put_matrix(f: &mut Facts, topo: &PciTopology) {
    let gpus: Vec<Facts> = topo
        .gpus()
        .iter()
        .map(|g| {
            let mut r = Facts::new();
            r.insert("address", (&g.placement.address).into());
            r.insert("class", format!("0x{:06x}", g.class_code).into());
            r.insert("host_bridge", g.placement.host_bridge_name().into());
            put(&mut r, "numa_node", g.placement.numa_node);
            r
        })
        .collect();
    let nics: Vec<Facts> = topo
        .nics()
        .iter()
        .map(|n| {
            let mut r = Facts::new();
            r.insert("rdma_device", (&n.ibdev).into());
            r.insert("address", (&n.placement.address).into());
            r.insert("host_bridge", n.placement.host_bridge_name().into());
            put(&mut r, "numa_node", n.placement.numa_node);
            r.insert("ports", n.ports.clone().into());
            r
        })
        .collect();
    let matrix: Vec<FactValue> = (0..topo.gpus().len())
        .map(|g| {
            let row: Vec<&str> = topo.row(g).iter().map(|r| r.label()).collect();
            row.into()
        })
        .collect();
    f.insert("gpus", gpus.into());
    f.insert("nics", nics.into());
    f.insert("matrix", FactValue::List(matrix));
    if !topo.unplaced_rdma().is_empty() {
        f.insert("unplaced_rdma", topo.unplaced_rdma().to_vec().into());
    }
}

/// `gpu.nic-affinity`: WARN when a GPU's nearest NIC is SYS (on another socket).
pub(super) fn nic_affinity(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    let topo = match readable(host) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    put_matrix(f, topo);
    let nearest = match nearest(topo) {
        Ok(nearest) => nearest,
        Err(skipped) => return skipped,
    };
    let records: Vec<Facts> = nearest
        .iter()
        .map(|n| {
            let mut r = Facts::new();
            r.insert("gpu", (&n.gpu.placement.address).into());
            r.insert("rdma_devices", ibdevs(&n.nics));
            r.insert("relation", n.relation.label().into());
            r
        })
        .collect();
    f.insert("nearest", records.into());
    let line = |n: &Nearest<'_>| {
        format!(
            "{} -> {} {}",
            n.gpu.placement.address,
            names(&n.nics),
            n.relation.label()
        )
    };
    let far: Vec<String> = nearest
        .iter()
        .filter(|n| n.relation == PciRelation::Sys)
        .map(|n| {
            let nic_nodes: Vec<String> = n
                .nics
                .iter()
                .map(|nic| numa_text(nic.placement.numa_node))
                .collect();
            format!(
                "GPU {} (NUMA node {}): nearest RDMA NIC {} (node {}) is SYS",
                n.gpu.placement.address,
                numa_text(n.gpu.placement.numa_node),
                names(&n.nics),
                nic_nodes.join(", ")
            )
        })
        .collect();
    if !far.is_empty() {
        return warn(format!(
            "{}: its network traffic crosses the socket interconnect, and NCCL uses no \
             GPUDirect RDMA beyond PXB by default",
            far.join("; ")
        ));
    }
    let undecided: Vec<String> = nearest
        .iter()
        .filter(|n| n.relation == PciRelation::NodeOrSys)
        .map(line)
        .collect();
    let all: Vec<String> = nearest.iter().map(line).collect();
    if !undecided.is_empty() {
        return skip(format!(
            "numa_node unknown (-1 or absent), so NODE cannot be told from SYS for {}; all: {}",
            undecided.join(", "),
            all.join(", ")
        ));
    }
    let staged: Vec<&str> = nearest
        .iter()
        .filter(|n| n.relation > PciRelation::Pxb)
        .map(|n| n.gpu.placement.address.as_str())
        .collect();
    if !staged.is_empty() {
        // Works, but slower than the hardware allows: NCCL_NET_GDR_LEVEL defaults to PXB.
        return warn(format!(
            "each GPU's nearest NIC: {}; beyond PXB for {}: NCCL stages their traffic \
             through host memory (no GPUDirect RDMA) unless NCCL_NET_GDR_LEVEL allows it",
            all.join(", "),
            staged.join(", ")
        ));
    }
    pass(format!("each GPU's nearest NIC: {}", all.join(", ")))
}

/// `gpu.nic-sharing`: WARN when two GPUs share one nearest NIC while another NIC is
/// nearest to no GPU.
pub(super) fn nic_sharing(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    let topo = match readable(host) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    let nearest = match nearest(topo) {
        Ok(nearest) => nearest,
        Err(skipped) => return skipped,
    };
    // A NIC's owners: the GPUs whose only nearest NIC it is (a tie is no claim).
    let owners = |nic: &TopologyNic| -> Vec<&str> {
        nearest
            .iter()
            .filter(|n| n.nics.len() == 1 && n.nics[0].ibdev == nic.ibdev)
            .map(|n| n.gpu.placement.address.as_str())
            .collect()
    };
    let shared: Vec<(&TopologyNic, Vec<&str>)> = topo
        .nics()
        .iter()
        .map(|nic| (nic, owners(nic)))
        .filter(|(_, gpus)| gpus.len() > 1)
        .collect();
    let idle: Vec<&TopologyNic> = topo
        .nics()
        .iter()
        .filter(|nic| {
            !nearest
                .iter()
                .any(|n| n.nics.iter().any(|m| m.ibdev == nic.ibdev))
        })
        .collect();
    let shared_facts: Vec<Facts> = shared
        .iter()
        .map(|(nic, gpus)| {
            let mut r = Facts::new();
            r.insert("rdma_device", (&nic.ibdev).into());
            r.insert("gpus", gpus.clone().into());
            r
        })
        .collect();
    f.insert("shared", shared_facts.into());
    f.insert("idle_nics", ibdevs(&idle));
    let sharing: Vec<String> = shared
        .iter()
        .map(|(nic, gpus)| format!("GPUs {} share nearest NIC {}", gpus.join(", "), nic.ibdev))
        .collect();
    if !shared.is_empty() && !idle.is_empty() {
        return warn(format!(
            "{} while {} is nearest to no GPU: NCCL sends those GPUs' traffic through one \
             NIC and leaves the other unused",
            sharing.join("; "),
            names(&idle)
        ));
    }
    if !shared.is_empty() {
        return pass(format!(
            "{}, but every NIC is some GPU's nearest (none left idle)",
            sharing.join("; ")
        ));
    }
    let each: Vec<String> = nearest
        .iter()
        .map(|n| format!("{} -> {}", n.gpu.placement.address, names(&n.nics)))
        .collect();
    pass(format!(
        "no two GPUs share a nearest NIC: {}",
        each.join(", ")
    ))
}

/// `gpu.numa`: WARN when a GPU and its nearest NIC report different NUMA nodes.
pub(super) fn numa(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    let topo = match readable(host) {
        Ok(topo) => topo,
        Err(skipped) => return skipped,
    };
    let nearest = match nearest(topo) {
        Ok(nearest) => nearest,
        Err(skipped) => return skipped,
    };
    let mut pairs = Vec::new();
    let mut mismatched = Vec::new();
    let mut mismatched_facts = Vec::new();
    let mut unknown = Vec::new();
    let mut agreeing = Vec::new();
    for n in &nearest {
        for nic in &n.nics {
            let (gpu_node, nic_node) = (n.gpu.placement.numa_node, nic.placement.numa_node);
            let mut r = Facts::new();
            r.insert("gpu", (&n.gpu.placement.address).into());
            put(&mut r, "gpu_numa_node", gpu_node);
            r.insert("rdma_device", (&nic.ibdev).into());
            put(&mut r, "nic_numa_node", nic_node);
            r.insert("relation", n.relation.label().into());
            let pair = format!("GPU {} and {}", n.gpu.placement.address, nic.ibdev);
            match (gpu_node, nic_node) {
                (Some(g), Some(m)) if g == m => agreeing.push(format!("{pair} node {g}")),
                (Some(g), Some(m)) => {
                    let firmware = if n.relation <= PciRelation::Phb {
                        " (one host bridge on two nodes: the firmware's NUMA report or a \
                         numa_node override is wrong)"
                    } else {
                        ""
                    };
                    mismatched.push(format!(
                        "GPU {} on NUMA node {g} but its nearest NIC {} ({}) on node {m}{firmware}",
                        n.gpu.placement.address,
                        nic.ibdev,
                        n.relation.label()
                    ));
                    mismatched_facts.push(r.clone());
                }
                _ => unknown.push(format!(
                    "{pair} (nodes {}, {})",
                    numa_text(gpu_node),
                    numa_text(nic_node)
                )),
            }
            pairs.push(r);
        }
    }
    f.insert("pairs", pairs.into());
    f.insert("mismatched", mismatched_facts.into());
    if !mismatched.is_empty() {
        return warn(mismatched.join("; "));
    }
    if !unknown.is_empty() {
        return skip(format!(
            "numa_node unknown (-1 or absent) for {}",
            unknown.join(", ")
        ));
    }
    pass(format!(
        "each GPU on its nearest NIC's NUMA node: {}",
        agreeing.join(", ")
    ))
}
