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
        id: "dcb.pfc",
        verifies: "PFC is enabled on exactly the priority RoCE traffic maps to (DCB_CMD_IEEE_GET of the rail, live system only)",
        why: "without PFC on the RoCE priority a congested switch drops RoCE frames and every drop costs a go-back-N retransmission; PFC on other priorities only spends buffer",
        fix: "dcb pfc set dev IF prio-pfc 3:on (or mlnx_qos -i IF --pfc 0,0,0,1,0,0,0,0) for the RoCE priority, the same on the switch port; disable it on the others",
    },
    CheckSpec {
        id: "dcb.trust",
        verifies: "the rail classifies traffic by DSCP (its APP table has DSCP entries: mlx5 trust dscp), not by VLAN PCP",
        why: "a routed RoCE v2 fabric carries no VLAN tag across L3 hops: under PCP trust the priority, and with it PFC, is lost",
        fix: "mlnx_qos -i IF --trust dscp, or dcb app add dev IF dscp-prio 26:3 (each DSCP entry also switches mlx5 to DSCP trust)",
    },
    CheckSpec {
        id: "dcb.chain",
        verifies: "RoCE's ToS (rdma_cm default_roce_tos in configfs, else 0) gives a DSCP (ToS >> 2), the DSCP a priority (APP table, else DSCP >> 3), and PFC is on that priority",
        why: "PFC on priority 3 protects nothing when the RoCE ToS maps to priority 4: the most common lossless-RoCE misconfiguration, invisible until congestion",
        fix: "make the three agree: echo 106 > /sys/kernel/config/rdma_cm/DEV/ports/1/default_roce_tos (mkdir the DEV directory first), dcb app add dev IF dscp-prio 26:3, dcb pfc set dev IF prio-pfc 3:on",
    },
    CheckSpec {
        id: "dcb.ets",
        verifies: "the ETS bandwidth share of each traffic class and the priority -> class map; the RoCE class has more than 0% under ETS",
        why: "a RoCE class with 0% ETS bandwidth starves whenever other classes are busy: throughput collapses while PFC holds the frames",
        fix: "dcb ets set dev IF tc-bw 0:50 3:50 prio-tc 3:3 (or mlnx_qos -i IF --tcbw 50,0,0,50,0,0,0,0 --prio_tc 0,0,0,3,0,0,0,0)",
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
    CheckSpec {
        id: "ib.port",
        verifies: "every InfiniBand RDMA port is ACTIVE with physical state LinkUp",
        why: "an InfiniBand port carries traffic only once a subnet manager has activated it; INIT with the link up means no SM answered",
        fix: "link down: check the cable, transceiver and switch port; stuck in INIT: start a subnet manager (systemctl start opensm, or enable the switch's SM) and watch ibstat",
    },
    CheckSpec {
        id: "ib.lid",
        verifies: "every InfiniBand port has a unicast LID (lid not 0x0)",
        why: "InfiniBand routes by LID: without one the port is unreachable and verbs address handles cannot be built",
        fix: "run a subnet manager on the fabric (opensm, or the switch's SM) and check it sees this port (sminfo, ibstat)",
    },
    CheckSpec {
        id: "ib.sm",
        verifies: "every InfiniBand port knows its subnet manager (sm_lid not 0x0); records the SM's LID and SL",
        why: "path queries, multicast joins (IPoIB) and reconfiguration all go through the SM; none means a fabric that cannot change",
        fix: "start opensm on one host (or enable the managed switch's SM); sminfo shows which SM answers",
    },
    CheckSpec {
        id: "ib.rate",
        verifies: "every InfiniBand port with link up runs at least --ib-rate Gbit/s, or without it at 4X width or more",
        why: "a port that trained narrow (1X) or slow caps NCCL and storage throughput while every other check passes",
        fix: "reseat or replace the cable and transceiver; check the switch port's speed and width settings (ibportstate, mlxlink); --ib-rate 400 for NDR 4X",
    },
    CheckSpec {
        id: "ib.pkey",
        verifies: "P_Key index 0 of every InfiniBand port holds the default partition key (0xffff full, 0x7fff limited member)",
        why: "verbs users and IPoIB take P_Key index 0 unless told: without the default key there they join no partition, or the wrong one",
        fix: "put the default partition (Default=0x7fff, ipoib : ALL=full;) in the SM's partitions.conf and let it resweep; choose another index explicitly only on purpose",
    },
    CheckSpec {
        id: "gpu.nic-affinity",
        verifies: "every NVIDIA GPU's nearest RDMA NIC is within PXB of it (behind the same PCIe switches; PHB, NODE and SYS in nvidia-smi topo -m terms warn)",
        why: "NCCL sends each GPU's network traffic through its nearest NIC: across sockets (SYS) it crosses QPI/UPI/xGMI and gets no GPUDirect RDMA (NCCL allows it up to PXB by default), so bandwidth drops and latency grows",
        fix: "put the GPU's NIC in a slot behind the same PCIe switch, or at least on the same socket (the server's slot/rail map; nvidia-smi topo -m to confirm); until then, list the nearest NIC first in NCCL_IB_HCA",
    },
    CheckSpec {
        id: "gpu.nic-sharing",
        verifies: "no two GPUs share one nearest RDMA NIC while another NIC is nearest to no GPU",
        why: "NCCL picks each GPU's nearest NIC: two GPUs on one NIC split its bandwidth while the idle NIC carries nothing",
        fix: "rearrange cards or cables so each GPU has a NIC behind its own PCIe switch (the server's rail map); a NIC nearest to no GPU only helps if NCCL_IB_HCA and the rank-to-NIC mapping use it on purpose",
    },
    CheckSpec {
        id: "gpu.numa",
        verifies: "each NVIDIA GPU and its nearest RDMA NIC report the same NUMA node (numa_node)",
        why: "NCCL's proxy threads and host buffers follow the GPU's NUMA node: a NIC on another node DMAs across the socket interconnect, and a wrong node from firmware misleads every affinity tool",
        fix: "move the NIC to a slot on the GPU's socket; if both sit behind one switch yet report different nodes, update the BIOS (the ACPI proximity data is wrong) and check nobody wrote /sys/bus/pci/devices/BDF/numa_node",
    },
    CheckSpec {
        id: "fw.tool",
        verifies: "mlxconfig (NVIDIA MFT) or mstconfig (mstflint) is on PATH and reads every NVIDIA/Mellanox NIC's firmware settings (query only, never set)",
        why: "link type, SR-IOV, NVMe emulation, ATS and RoCE congestion control live in firmware: sysfs cannot show them, and a wrong one silently changes how the card behaves",
        fix: "apt install mstflint (or install NVIDIA MFT); run as root; a device the tool cannot open may need its driver loaded or the mst service started",
    },
    CheckSpec {
        id: "fw.mode",
        verifies: "each BlueField's mode of operation from INTERNAL_CPU_MODEL and INTERNAL_CPU_OFFLOAD_ENGINE: DPU mode (EMBEDDED_CPU, ENABLED), NIC mode (DISABLED), separated host; and the mode after the next firmware reset",
        why: "in NIC mode the Arm owns nothing: no representors, no OVS offload, no SNAP, and the agent's proofs are meaningless; a pending mode change surprises the next reboot",
        fix: "DPU mode: mlxconfig -d BDF set INTERNAL_CPU_OFFLOAD_ENGINE=0 (BlueField-3), then mlxfwreset or a power cycle; pin the intended mode in --profile",
    },
    CheckSpec {
        id: "fw.profile",
        verifies: "every parameter of --profile FILE has its expected value now and after the next firmware reset, on every device that reports it",
        why: "a lab profile (ETH links, SR-IOV, ATS, CNP DSCP, RoCE CC priorities) is only true when the firmware runs it; a value set but not yet active works only after a reset",
        fix: "mlxconfig -d BDF set PARAM=VALUE for the named ones, then mlxfwreset -d BDF reset or a power cycle; a value already set for the next boot needs only the reset",
    },
    CheckSpec {
        id: "fw.pending",
        verifies: "no firmware parameter's next-boot value differs from the value the firmware runs with now",
        why: "a pending change (someone ran mlxconfig set) takes effect at an unplanned reboot or firmware reset and changes the card's behaviour then",
        fix: "apply it on purpose with mlxfwreset -d BDF reset or a power cycle, or undo it with mlxconfig -d BDF set PARAM=CURRENT",
    },
    CheckSpec {
        id: "gdr.peermem",
        verifies: "with NVIDIA GPUs and RDMA NICs present, the NIC can register GPU memory: nvidia_peermem (or nv_peer_mem) is loaded, or DMA-BUF is possible (kernel 5.12+ with the NVIDIA open kernel module)",
        why: "without either NCCL logs \"GPU Direct RDMA Disabled for HCA\" and stages every GPU transfer through host memory: lower bandwidth, more latency, busy CPUs",
        fix: "modprobe nvidia_peermem (ships with the driver since R470; GPU Operator: driver.rdma.enabled=true), or use the open kernel module on a 5.12+ kernel for DMA-BUF; then look for GDRDMA in NCCL_DEBUG=INFO channel lines (dpuctl roce nccl-check)",
    },
    CheckSpec {
        id: "gdr.acs",
        verifies: "no PCIe switch port between a GPU and its nearest NIC has ACS P2P Request or Completion Redirect enabled (ACSCtl ReqRedir/CmpltRedir)",
        why: "ACS redirect sends the NIC's reads and writes of GPU memory up to the root complex (and its IOMMU) instead of across the switch: GPUDirect RDMA bandwidth drops or transfers fail",
        fix: "disable ACS in the BIOS (or VT-d/IOMMU ACS enforcement) on bare-metal GPU servers; at runtime setpci -s BRIDGE ECAP_ACS+6.w=0000 on each listed bridge (lost on reboot); run dpuctl check as root to read the bridges' extended config space",
    },
    CheckSpec {
        id: "gdr.iommu",
        verifies: "the IOMMU does not translate the GPUs' DMA: it is off, or in passthrough (iommu=pt, identity domains)",
        why: "peer-to-peer DMA through a translating IOMMU (DMA, DMA-FQ domains) breaks or slows GPUDirect RDMA: the NIC's addresses for GPU memory go through IOMMU page tables or are refused",
        fix: "add iommu=pt to the kernel command line (GRUB_CMDLINE_LINUX, then update-grub and reboot), or disable the IOMMU in the BIOS when no VMs or SR-IOV need it",
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
