//! The second witness for an NCCL run: the local RDMA ports' counters around it. NCCL's
//! log can say `NET/IB` while the bytes went through another HCA, or say nothing useful;
//! the RDMA counters (which TCP never moves, reference §1.2) settle it (reference §3.4
//! "diagnosis recipe", step 2).

use dpu_probe::rdma::list_rdma_devices;
use dpu_probe::SysRoot;
use serde::Serialize;

use super::endpoint::Endpoint;
use super::nccl_transport::NcclTransport;
use super::rdma_evidence::{read_totals, RdmaTotals};

/// Under this many packets the RDMA ports count as still: NVMe-oF keep-alives and
/// connection management move a few.
pub(crate) const STILL_PACKETS: u64 = 200;
/// Over this many packets the ports count as having carried a collective (a 1 MiB
/// all-reduce over 20 iterations is thousands of packets at MTU 4096).
pub(crate) const MOVED_PACKETS: u64 = 1000;

/// Every local RDMA port's totals, in a stable order.
pub(crate) fn snapshot(root: &SysRoot) -> Vec<(String, RdmaTotals)> {
    let Ok(devices) = list_rdma_devices(root) else {
        return Vec::new();
    };
    devices
        .into_iter()
        .flat_map(|d| {
            let ibdev = d.ibdev;
            d.ports.into_iter().map(move |p| (ibdev.clone(), p.port))
        })
        .map(|(ibdev, port)| {
            let ep = Endpoint {
                ibdev: ibdev.clone(),
                port,
                gid_index: 0,
                ipv4: None,
                netdev: None,
            };
            (format!("{ibdev}/{port}"), read_totals(root, &ep).0)
        })
        .collect()
}

/// What the counters say about the transport NCCL reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Corroboration {
    /// Packets sent + received per RDMA port during the run (ports without counters
    /// are absent).
    pub(crate) ports: Vec<(String, u64)>,
    /// Their sum; None when no port has packet counters.
    pub(crate) packets: Option<u64>,
    /// `agrees`, `contradicts` or `unknown`.
    pub(crate) verdict: &'static str,
    /// Why, in words.
    pub(crate) reason: String,
}

/// Compares two [`snapshot`]s with the transport NCCL reported.
pub(crate) fn corroborate(
    before: &[(String, RdmaTotals)],
    after: &[(String, RdmaTotals)],
    transport: NcclTransport,
) -> Corroboration {
    let ports: Vec<(String, u64)> = after
        .iter()
        .filter_map(|(name, a)| {
            let b = before.iter().find(|(n, _)| n == name)?.1;
            Some((name.clone(), a.packets?.saturating_sub(b.packets?)))
        })
        .collect();
    let packets = (!ports.is_empty()).then(|| ports.iter().map(|(_, v)| v).sum::<u64>());
    let (verdict, reason) = match (transport, packets) {
        (_, None) => ("unknown", "no local RDMA port has packet counters".to_owned()),
        (NcclTransport::Ib, Some(p)) if p >= MOVED_PACKETS => (
            "agrees",
            format!("NET/IB, and the RDMA ports carried {p} packets"),
        ),
        (NcclTransport::Ib, Some(p)) if p < STILL_PACKETS => (
            "contradicts",
            format!(
                "NCCL says NET/IB but the local RDMA ports moved only {p} packets: the data \
                 went elsewhere (another HCA than the ones counted, intra-node P2P, or not \
                 this host)"
            ),
        ),
        (NcclTransport::Socket, Some(p)) if p < STILL_PACKETS => (
            "agrees",
            format!("NET/Socket, and the RDMA ports stayed still ({p} packets): the collective went over TCP"),
        ),
        (NcclTransport::Socket, Some(p)) if p >= MOVED_PACKETS => (
            "contradicts",
            format!(
                "NCCL says NET/Socket but the RDMA ports moved {p} packets: other RDMA \
                 traffic ran at the same time, so the counters cannot confirm the fallback"
            ),
        ),
        (_, Some(p)) => (
            "unknown",
            format!("{p} RDMA packets: too few to confirm a collective, too many to call the ports still"),
        ),
    };
    Corroboration {
        ports,
        packets,
        verdict,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(p: u64) -> Vec<(String, RdmaTotals)> {
        vec![(
            "mlx5_0/1".to_owned(),
            RdmaTotals {
                packets: Some(p),
                bytes: None,
            },
        )]
    }

    #[test]
    fn the_counters_confirm_or_contradict_the_log() {
        assert_eq!(
            corroborate(&snap(10), &snap(50_010), NcclTransport::Ib).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Ib).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Socket).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(90_000), NcclTransport::Socket).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(0), &snap(500), NcclTransport::Ib).verdict,
            "unknown"
        );
        assert_eq!(corroborate(&[], &[], NcclTransport::Ib).verdict, "unknown");
    }
}
