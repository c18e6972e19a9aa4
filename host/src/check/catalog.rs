//! The lab checklist as data: what each check verifies, why it matters and how to fix a
//! failure. `dpuctl check --list` prints this table; the results carry the same ids.

use serde::Serialize;

/// One entry of the checklist.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CheckSpec {
    /// Stable id, for scripts and `--only`.
    pub id: &'static str,
    /// What passing means.
    pub verifies: &'static str,
    /// What breaks when it fails.
    pub why: &'static str,
    /// What to do about a failure.
    pub fix: &'static str,
}

/// Every check, in the order they run and print.
pub const CHECKS: &[CheckSpec] = &[
    CheckSpec {
        id: "pcie.bluefield",
        verifies: "a BlueField NIC function is on PCIe, bound to mlx5_core, not in flash recovery",
        why: "every other check, the agent and the offload need the card enumerated and driven",
        fix: "lspci -d 15b3: ; reseat the card; load mlx5_core; a flash-recovery (livefish) ID means reflashing firmware",
    },
    CheckSpec {
        id: "pcie.link",
        verifies: "each BlueField NIC function negotiated its maximum PCIe width and speed",
        why: "a x8 link on a x16 card halves host<->DPU bandwidth and caps RDMA and storage throughput",
        fix: "move the card to a full-width slot of the right generation, check the riser and BIOS bifurcation",
    },
    CheckSpec {
        id: "netdev.up",
        verifies: "the data interface is up with carrier",
        why: "no carrier, no RoCE and no traffic for the offload to carry",
        fix: "ip link set IF up; check the cable, the switch port and the DPU side (p0 up, OVS bridge)",
    },
    CheckSpec {
        id: "netdev.mtu",
        verifies: "the data interface has the expected MTU (--mtu), and the RoCE path MTU it implies",
        why: "RoCE path MTU follows the netdev MTU: 1500 gives 1024-byte RDMA frames, 9000 gives 4096",
        fix: "ip link set IF mtu N, on every hop (host PF, DPU uplink and representor, switch)",
    },
    CheckSpec {
        id: "rdma.bound",
        verifies: "an RDMA device is bound to the data interface",
        why: "without it RDMA traffic cannot use this interface (NCCL falls back to sockets)",
        fix: "load mlx5_ib / ib_core; rdma link show; check the function is not in a restricted mode",
    },
    CheckSpec {
        id: "rdma.port",
        verifies: "the RDMA port is ACTIVE with physical state LinkUp",
        why: "a port that is not ACTIVE carries no RDMA even when the Ethernet link is up",
        fix: "physical link up but port not ACTIVE: restart the driver or check the DPU side owns and brings up the port",
    },
    CheckSpec {
        id: "rdma.link-layer",
        verifies: "the RDMA port's link layer is Ethernet (RoCE) or InfiniBand",
        why: "tools and GID selection differ: RoCE needs a GID index, InfiniBand needs a subnet manager",
        fix: "set LINK_TYPE_P1/P2 with mlxconfig (2 = Ethernet) and reboot the card",
    },
    CheckSpec {
        id: "rdma.gid",
        verifies: "a RoCE v2 IPv4 GID exists for the data interface, and which index tools would pick",
        why: "perftest and NCCL default to index 0 (RoCE v1 link-local) unless told: traffic then fails or uses the wrong path",
        fix: "give the interface an IPv4 address; pass the index explicitly (ib_write_bw -x N, NCCL_IB_GID_INDEX=N)",
    },
    CheckSpec {
        id: "rdma.mtu",
        verifies: "the netdev RoCE uses for the data interface's GIDs has the data interface's MTU",
        why: "an MTU mismatch between the netdev and the RDMA port (a VLAN or bond on top) silently shrinks RDMA frames",
        fix: "set the same MTU on the VLAN/bond interface the RoCE v2 GID belongs to",
    },
    CheckSpec {
        id: "agent.reachable",
        verifies: "the dpu-agent answers gRPC health at --agent",
        why: "storage, switch offload, counters on the DPU and the proofs all go through the agent",
        fix: "systemctl status dpu-agent on the DPU; check --agent (tcp:192.168.100.2:50051 over tmfifo_net0) and TLS settings",
    },
    CheckSpec {
        id: "agent.consistent",
        verifies: "the agent's DPU is this host's card (model and firmware match) and its mode is DPU mode",
        why: "an agent on another card, or a card in NIC mode, makes every offload proof meaningless",
        fix: "point --agent at the DPU in this host; switch to DPU mode (mlxconfig INTERNAL_CPU_OFFLOAD_ENGINE=0) if needed",
    },
    CheckSpec {
        id: "agent.mtu",
        verifies: "the DPU's uplink and host-PF representor MTUs are at least the host interface's MTU",
        why: "in DPU mode every host frame crosses the Arm's eswitch: a smaller MTU there drops jumbo frames",
        fix: "on the DPU: ip link set p0 mtu N; ip link set pf0hpf mtu N (and the OVS bridge)",
    },
];

/// The spec for an id; ids are compile-time constants, so a miss is a bug caught by tests.
pub fn spec(id: &str) -> &'static CheckSpec {
    CHECKS
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| unreachable!("check {id} is not in the catalog"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_field_is_filled() {
        let mut ids: Vec<_> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
        for c in CHECKS {
            assert!(
                !c.verifies.is_empty() && !c.why.is_empty() && !c.fix.is_empty(),
                "{}",
                c.id
            );
        }
    }
}
