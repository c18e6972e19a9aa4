//! Which network transport NCCL used, from NCCL_DEBUG=INFO lines (reference §3.4): the
//! "training succeeded, data went over Socket" diagnosis needs it, because NCCL falls back
//! to TCP sockets silently when IB/RoCE initialisation fails.

/// The transport verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclTransport {
    /// NET/IB (InfiniBand verbs; RoCE devices show as `/RoCE`) on at least one network
    /// channel (`via NET/IB`), and no socket traffic. Init lines alone (`Using network IB`,
    /// `NET/IB : Using ...`) only say a plugin loaded, not that a channel used it.
    Ib,
    /// NET/Socket: the TCP fallback (for some or all channels).
    Socket,
    /// No network channel says which transport carried it: no transport lines (single
    /// node, or NCCL_DEBUG was not INFO), or NET/IB initialised while every channel went
    /// through P2P or shared memory.
    Unknown,
}

/// The verdict with what it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportVerdict {
    /// What NCCL used.
    pub transport: NcclTransport,
    /// Devices from `NET/IB : Using [0]mlx5_0:1/RoCE ...`, e.g. `mlx5_0:1/RoCE`.
    pub ib_devices: Vec<String>,
    /// The log lines that decided it (trimmed), in log order.
    pub evidence: Vec<String>,
    /// Every network channel line (`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`),
    /// with whether NCCL used GPUDirect RDMA on it, in log order.
    pub net_channels: Vec<NetChannel>,
    /// NCCL's "GPU Direct RDMA Disabled" lines (trimmed): no peer-memory path for an HCA
    /// (`NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'`), or a GPU too far from it
    /// (`GPU Direct RDMA Disabled for GPU 0 / HCA 0 (distance 8 > 5)`).
    pub gdr_disabled: Vec<String>,
}

/// One network channel NCCL connected, from its `Channel ... via NET/...` line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NetChannel {
    /// The channel and its connection index (`00/0`).
    pub channel: String,
    /// Who talks to whom and which way (`0[0] -> 1[0] [send]`).
    pub route: String,
    /// The transport path after `via` (`NET/IB/0/GDRDMA`, `NET/Socket/0`).
    pub via: String,
    /// Whether the path carries `/GDRDMA`: the NIC reads and writes GPU memory directly
    /// instead of staging through host memory.
    pub gdrdma: bool,
}

/// The message fragments that matter, as NCCL prints them.
const IB_USING: &str = "NET/IB : Using";
const IB_NONE: &str = "NET/IB : No device found";
const SOCKET_USING: &str = "NET/Socket : Using";
const NETWORK_IB: &str = "Using network IB";
const NETWORK_SOCKET: &str = "Using network Socket";
const VIA_IB: &str = "via NET/IB";
const VIA_SOCKET: &str = "via NET/Socket";
/// `Count` is NCCL's typo (misc/ibvsymbols.cc); the corrected spelling is accepted too.
const NO_VERBS: [&str; 2] = ["Count not open libibverbs", "Could not open libibverbs"];
/// `NET/%s : GPU Direct RDMA %s for HCA %d '%s'` (graph/topo.cc; older `(no module)` in
/// transport/net_ib.cc) and `GPU Direct RDMA Disabled for GPU %d / HCA %lx (distance ...)`
/// (graph/paths.cc) both contain it.
const GDR_DISABLED: &str = "GPU Direct RDMA Disabled";

/// Scans a log (any text; non-NCCL lines are ignored). Only a channel line (`via NET/IB`)
/// makes the verdict IB; a socket channel anywhere makes it Socket, because that traffic
/// bypassed RoCE, and so do the socket plugin's init lines without any IB channel (the
/// fallback is the answer to worry about, never to assume away).
pub fn scan_transport(log: &str) -> TransportVerdict {
    let mut evidence = Vec::new();
    let mut ib_devices = Vec::new();
    let (mut net_channels, mut gdr_disabled) = (Vec::new(), Vec::new());
    let (mut via_ib, mut via_socket) = (false, false);
    let (mut net_ib, mut net_socket) = (false, false);
    let (mut ib_using, mut socket_using) = (false, false);
    for line in log.lines().filter(|l| l.contains("NCCL INFO")) {
        let has = |s: &str| line.contains(s);
        let relevant = [
            IB_USING,
            IB_NONE,
            SOCKET_USING,
            NETWORK_IB,
            NETWORK_SOCKET,
            VIA_IB,
            VIA_SOCKET,
        ]
        .into_iter()
        .chain(NO_VERBS)
        .chain([GDR_DISABLED])
        .any(has);
        // Every network channel, a plugin's (`via NET/NCCL RDMA Plugin v9/...`) too; the
        // transport verdict below keeps reading only the lines it knows.
        if let Some(channel) = parse_net_channel(line) {
            net_channels.push(channel);
        }
        if !relevant {
            continue;
        }
        via_ib |= has(VIA_IB);
        via_socket |= has(VIA_SOCKET);
        net_ib |= has(NETWORK_IB);
        net_socket |= has(NETWORK_SOCKET);
        socket_using |= has(SOCKET_USING);
        if let Some((_, devices)) = line.split_once(IB_USING) {
            ib_using = true;
            for device in parse_devices(devices) {
                if !ib_devices.contains(&device) {
                    ib_devices.push(device);
                }
            }
        }
        if has(GDR_DISABLED) {
            gdr_disabled.push(line.trim().to_owned());
        }
        if evidence.len() < 64 {
            evidence.push(line.trim().to_owned());
        }
    }
    let transport = if via_socket {
        NcclTransport::Socket
    } else if via_ib {
        NcclTransport::Ib
    } else if net_socket || (socket_using && !net_ib && !ib_using) {
        NcclTransport::Socket
    } else {
        NcclTransport::Unknown
    };
    TransportVerdict {
        transport,
        ib_devices,
        evidence,
        net_channels,
        gdr_disabled,
    }
}

/// `... Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA` (transport/net.cc; a
/// plugin's name may contain spaces: `via NET/NCCL RDMA Plugin v9/3/GDRDMA`); `None` for
/// other lines and for channels that are not network ones (`via P2P/IPC`).
fn parse_net_channel(line: &str) -> Option<NetChannel> {
    let (_, rest) = line.split_once("Channel ")?;
    let (channel, rest) = rest.split_once(" : ")?;
    let (route, via) = rest.split_once(" via ")?;
    let via = via.trim();
    via.starts_with("NET/").then(|| NetChannel {
        channel: channel.trim().to_owned(),
        route: route.trim().to_owned(),
        via: via.to_owned(),
        gdrdma: via.contains("/GDRDMA"),
    })
}

/// The ` [i]<dev>:<port>[:rail][:plane]/<IB|RoCE>` entries before `; OOB ...`, without
/// their `[i]` prefix; `[RO]` (relaxed ordering) is a flag, not a device.
fn parse_devices(text: &str) -> Vec<String> {
    let list = text.split(';').next().unwrap_or("");
    list.split_whitespace()
        .filter_map(|token| {
            let rest = token.strip_prefix('[')?;
            let (index, device) = rest.split_once(']')?;
            let numeric = !index.is_empty() && index.chars().all(|c| c.is_ascii_digit());
            (numeric && !device.is_empty()).then(|| device.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL 2.2x on a DGX pair: the init lines of graph/topo.cc, a channel with GPUDirect
    /// RDMA, one staged through host memory, the HPC-X plugin's spelling, and a P2P one.
    const LOG_MIXED_GDR: &str = "\
hostA:31842:31905 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.4.19<0>
hostA:31842:31905 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
hostA:31842:31905 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'
hostA:31842:31905 [1] NCCL INFO GPU Direct RDMA Disabled for GPU 1 / HCA 1 (distance 8 > 5)
hostA:31842:31910 [0] NCCL INFO Channel 00/0 : 3[3] -> 8[0] [send] via NET/IB/0/GDRDMA
hostA:31842:31910 [1] NCCL INFO Channel 01/0 : 1[1] -> 9[1] [receive] via NET/IB/1
hostA:31842:31910 [2] NCCL INFO Channel 02/0 : 11[3] -> 3[3] [send] via NET/NCCL RDMA Plugin v9/3/GDRDMA
hostA:31842:31910 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/IPC/read
";

    #[test]
    fn channels_say_whether_they_used_gdrdma() {
        let v = scan_transport(LOG_MIXED_GDR);
        assert_eq!(v.transport, NcclTransport::Ib);
        let seen: Vec<(&str, &str, bool)> = v
            .net_channels
            .iter()
            .map(|c| (c.channel.as_str(), c.via.as_str(), c.gdrdma))
            .collect();
        assert_eq!(
            seen,
            [
                ("00/0", "NET/IB/0/GDRDMA", true),
                ("01/0", "NET/IB/1", false),
                ("02/0", "NET/NCCL RDMA Plugin v9/3/GDRDMA", true),
            ]
        );
        assert_eq!(v.net_channels[1].route, "1[1] -> 9[1] [receive]");
        assert_eq!(
            v.gdr_disabled,
            [
                "hostA:31842:31905 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'",
                "hostA:31842:31905 [1] NCCL INFO GPU Direct RDMA Disabled for GPU 1 / HCA 1 (distance 8 > 5)",
            ]
        );
        assert!(v
            .evidence
            .iter()
            .any(|l| l.ends_with("Disabled for HCA 1 'mlx5_1'")));
    }

    #[test]
    fn the_old_no_module_line_and_a_socket_run_are_named() {
        let old = "node1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n\
                   node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0\n";
        let v = scan_transport(old);
        assert_eq!(v.gdr_disabled.len(), 1);
        assert!(v.gdr_disabled[0].ends_with("(no module)"));
        assert_eq!(v.net_channels.len(), 1);
        assert!(!v.net_channels[0].gdrdma);
        let socket = "node1:1:1 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n\
                      node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n";
        let v = scan_transport(socket);
        assert_eq!(v.transport, NcclTransport::Socket);
        assert_eq!(v.gdr_disabled.len(), 1);
        assert_eq!(v.net_channels[0].via, "NET/Socket/0");
        // A ring listing (`Channel 00/16 :    0   7   6 ...`) is not a connection.
        let ring = "node1:1:1 [0] NCCL INFO Channel 00/16 :    0   7   6   5\n";
        assert!(scan_transport(ring).net_channels.is_empty());
    }

    #[test]
    fn init_lines_alone_never_claim_ib() {
        // Issue 31 §6: `Using network IB` with every channel over P2P/IPC moved nothing
        // over the network, and was reported as NET/IB.
        let local =
            "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
                     node1:1:1 [0] NCCL INFO Using network IB\n\
                     node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n\
                     node1:1:9 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/IPC/read\n";
        let v = scan_transport(local);
        assert_eq!(v.transport, NcclTransport::Unknown);
        assert!(v.net_channels.is_empty());
        assert_eq!(v.ib_devices, ["mlx5_0:1/RoCE"]);
        // The init lines without any channel line: still unknown.
        let init = "node1:1:1 [0] NCCL INFO Using network IB\n";
        assert_eq!(scan_transport(init).transport, NcclTransport::Unknown);
        // One network channel over IB is the evidence.
        let one = format!(
            "{local}node1:1:9 [0] NCCL INFO Channel 02/0 : 0[0] -> 8[0] [send] via NET/IB/0\n"
        );
        assert_eq!(scan_transport(&one).transport, NcclTransport::Ib);
        // The socket plugin's init lines with no IB at all: the fallback.
        let fallback = "node1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n";
        assert_eq!(scan_transport(fallback).transport, NcclTransport::Socket);
    }
}
