//! Which network transport NCCL used, from NCCL_DEBUG=INFO lines (reference §3.4): the
//! "training succeeded, data went over Socket" diagnosis needs it, because NCCL falls back
//! to TCP sockets silently when IB/RoCE initialisation fails.

/// The transport verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclTransport {
    /// NET/IB (InfiniBand verbs; RoCE devices show as `/RoCE`) and no socket traffic.
    Ib,
    /// NET/Socket: the TCP fallback (for some or all channels).
    Socket,
    /// No network transport lines (single node, or NCCL_DEBUG was not INFO).
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

/// Scans a log (any text; non-NCCL lines are ignored). Channel lines (`via NET/...`) are
/// the strongest evidence, then `Using network ...`, then the plugins' `Using` lines; a
/// socket channel anywhere makes the verdict Socket, because that traffic bypassed RoCE.
pub fn scan_transport(log: &str) -> TransportVerdict {
    let mut evidence = Vec::new();
    let mut ib_devices = Vec::new();
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
        .any(has);
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
        if evidence.len() < 64 {
            evidence.push(line.trim().to_owned());
        }
    }
    let transport = if via_socket {
        NcclTransport::Socket
    } else if via_ib {
        NcclTransport::Ib
    } else if net_socket {
        NcclTransport::Socket
    } else if net_ib || ib_using {
        NcclTransport::Ib
    } else if socket_using {
        NcclTransport::Socket
    } else {
        NcclTransport::Unknown
    };
    TransportVerdict {
        transport,
        ib_devices,
        evidence,
    }
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
