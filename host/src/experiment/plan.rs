//! A validated experiment plan: what is measured, which knob changes between which two
//! values, how many trials, in which order, and which way the metric is better.
//!
//! Only [`super::plan_load::parse`] makes one, after every field was checked
//! (`plan_check.rs`), so code that runs a plan never meets an unchecked name or
//! value: interface and device names are safe to use as path components and netlink
//! attributes, environment names are on the allow-list, and every value is already the
//! knob's type and range.

use std::path::PathBuf;

use serde::Serialize;

use super::design::{Direction, Order};
use crate::roce::perf::PerfTest;

/// Trials per phase when the plan does not say.
pub const DEFAULT_TRIALS: u32 = 5;

/// The trials per phase a plan may ask for: fewer than 3 give no spread (the statistics
/// call that INCONCLUSIVE anyway); more than 50 per phase is hours of benchmark for an
/// interval that has long stopped narrowing much (it shrinks as 1/√n).
pub const TRIALS: std::ops::RangeInclusive<u32> = 3..=50;

/// A checked plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// What one trial measures.
    pub measurement: Measurement,
    /// What changes between A and B.
    pub knob: Knob,
    /// Trials per phase.
    pub trials: u32,
    /// The order of the phases.
    pub order: Order,
    /// Which way the measured metric is better.
    pub better: Direction,
}

/// What one trial runs and measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Measurement {
    /// One `roce perf` test at one message size against a peer (ssh).
    RocePerf {
        /// The ssh destination of the peer, `[user@]host`.
        peer: String,
        /// The test.
        test: PerfTest,
        /// The message size in bytes.
        size: u64,
        /// perftest `-n` (messages per run); None: `roce perf`'s default, 1000.
        #[serde(skip_serializing_if = "Option::is_none")]
        iterations: Option<u64>,
        /// The address the client connects to; None: the one ssh reaches.
        #[serde(skip_serializing_if = "Option::is_none")]
        peer_address: Option<std::net::IpAddr>,
    },
    /// A `storage read` of `size` bytes in `bs` blocks.
    StorageRead {
        /// The block device or file (an absolute path).
        device: PathBuf,
        /// Bytes per trial.
        size: u64,
        /// Block size in bytes.
        bs: u64,
    },
    /// An nccl-tests binary (`all_reduce_perf -b 8 -e 8G -f 2 -g 1`), its table parsed.
    NcclTests {
        /// The argv, run without a shell.
        command: Vec<String>,
    },
    /// Any command whose output one of the project's parsers reads.
    Command {
        /// The argv, run without a shell.
        argv: Vec<String>,
        /// Which parser reads its output.
        parser: OutputParser,
    },
}

/// The output parsers a `command` measurement can name: the ones the project has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputParser {
    /// perftest's table (`ib_write_bw` and friends, `roce::perftest::parse`).
    Perftest,
    /// qperf's `tcp_bw`/`tcp_lat` lines (`roce::qperf::parse`).
    Qperf,
    /// nccl-tests' table (`roce::nccl::parse_results`).
    NcclTests,
}

impl OutputParser {
    /// Every parser, in the order errors list them.
    pub const ALL: [Self; 3] = [Self::Perftest, Self::Qperf, Self::NcclTests];

    /// The name plans use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Perftest => "perftest",
            Self::Qperf => "qperf",
            Self::NcclTests => "nccl-tests",
        }
    }
}

/// The two values of a knob: A, the baseline the experiment starts and ends on, and B.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Values<T> {
    /// The baseline.
    pub a: T,
    /// The value under test.
    pub b: T,
}

/// The one thing an experiment changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Knob {
    /// An interface's MTU (68..=65535; the device's own maximum is checked when applied).
    Mtu {
        /// The interface.
        interface: String,
        /// The two MTUs.
        values: Values<u32>,
    },
    /// An NCCL or UCX environment variable of the measured command.
    Env {
        /// `NCCL_*` or `UCX_*`.
        name: String,
        /// The two values.
        values: Values<String>,
    },
    /// The rdma_cm default ToS of an RDMA device (configfs `default_roce_tos`, 0..=255).
    RdmaCmTos {
        /// The RDMA device, e.g. `mlx5_0`.
        device: String,
        /// The two ToS bytes.
        values: Values<u8>,
    },
    /// An interface's RX or TX ring size (the driver's maximum is checked when applied).
    Ring {
        /// The interface.
        interface: String,
        /// Which ring.
        ring: RingDirection,
        /// The two sizes.
        values: Values<u32>,
    },
    /// The priorities PFC is enabled on, on one interface (DCB netlink `DCB_ATTR_IEEE_PFC`;
    /// the driver must implement DCB, which no virtual device does).
    Pfc {
        /// The interface.
        interface: String,
        /// The two sets of priorities.
        values: Values<PfcPriorities>,
    },
    /// A sysctl from the allow-list.
    Sysctl {
        /// Which one.
        name: Sysctl,
        /// The two values.
        values: Values<SysctlValue>,
    },
}

/// Which ring of an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RingDirection {
    /// Receive.
    Rx,
    /// Transmit.
    Tx,
}

/// The 802.1p priorities PFC is enabled on, as the kernel's `ieee_pfc.pfc_en` bitmask
/// (bit *p* set: PFC on priority *p*). A plan lists them (`[3]`, `[3, 4]`, `[]` for none);
/// the journal and the knob's read-back use [`text`](Self::text) (`3,4`, `none`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PfcPriorities(pub u8);

impl std::fmt::Debug for PfcPriorities {
    /// The list a plan writes (`[3, 4]`), so "is the same as knob.a" reads as the plan.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.list())
    }
}

impl PfcPriorities {
    /// The priorities, ascending.
    pub fn list(self) -> Vec<u8> {
        (0..8u8).filter(|p| self.0 & (1 << p) != 0).collect()
    }

    /// The canonical text: priorities ascending, comma-separated, or `none`.
    pub fn text(self) -> String {
        if self.0 == 0 {
            return "none".to_owned();
        }
        let list: Vec<String> = self.list().iter().map(u8::to_string).collect();
        list.join(",")
    }

    /// The inverse of [`text`](Self::text): `none`, or distinct priorities 0 to 7
    /// separated by commas (any order, spaces allowed).
    pub fn parse_text(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text == "none" {
            return Ok(Self(0));
        }
        let mut mask = 0u8;
        for word in text.split(',') {
            let priority: u8 = word
                .trim()
                .parse()
                .ok()
                .filter(|p| *p < 8)
                .ok_or_else(|| format!("{word:?} is not a priority 0 to 7"))?;
            if mask & (1 << priority) != 0 {
                return Err(format!("priority {priority} is listed twice"));
            }
            mask |= 1 << priority;
        }
        Ok(Self(mask))
    }
}

impl Serialize for PfcPriorities {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.list().serialize(serializer)
    }
}

/// The sysctls an experiment may change. Short on purpose: the socket-buffer limits that
/// decide whether a TCP baseline (qperf, NCCL's socket transport) can fill a fast link,
/// and the backlog a busy receiver drops at. Each is a plain integer or integer triple,
/// writable in `/proc/sys`, and a wrong value costs throughput, never the host's
/// reachability; sysctls that can cut a host off (forwarding, rp_filter, ARP) are not
/// here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Sysctl {
    /// `net.core.rmem_max`: the largest receive buffer a socket may ask for.
    #[serde(rename = "net.core.rmem_max")]
    CoreRmemMax,
    /// `net.core.wmem_max`: the largest send buffer a socket may ask for.
    #[serde(rename = "net.core.wmem_max")]
    CoreWmemMax,
    /// `net.core.rmem_default`: a socket's receive buffer unless it asks.
    #[serde(rename = "net.core.rmem_default")]
    CoreRmemDefault,
    /// `net.core.wmem_default`: a socket's send buffer unless it asks.
    #[serde(rename = "net.core.wmem_default")]
    CoreWmemDefault,
    /// `net.core.netdev_max_backlog`: packets queued per CPU before the kernel drops.
    #[serde(rename = "net.core.netdev_max_backlog")]
    CoreNetdevMaxBacklog,
    /// `net.ipv4.tcp_rmem`: TCP receive buffer min, default, max.
    #[serde(rename = "net.ipv4.tcp_rmem")]
    Ipv4TcpRmem,
    /// `net.ipv4.tcp_wmem`: TCP send buffer min, default, max.
    #[serde(rename = "net.ipv4.tcp_wmem")]
    Ipv4TcpWmem,
}

impl Sysctl {
    /// Every allowed sysctl.
    pub const ALL: [Self; 7] = [
        Self::CoreRmemMax,
        Self::CoreWmemMax,
        Self::CoreRmemDefault,
        Self::CoreWmemDefault,
        Self::CoreNetdevMaxBacklog,
        Self::Ipv4TcpRmem,
        Self::Ipv4TcpWmem,
    ];

    /// Its dotted name.
    pub fn name(self) -> &'static str {
        match self {
            Self::CoreRmemMax => "net.core.rmem_max",
            Self::CoreWmemMax => "net.core.wmem_max",
            Self::CoreRmemDefault => "net.core.rmem_default",
            Self::CoreWmemDefault => "net.core.wmem_default",
            Self::CoreNetdevMaxBacklog => "net.core.netdev_max_backlog",
            Self::Ipv4TcpRmem => "net.ipv4.tcp_rmem",
            Self::Ipv4TcpWmem => "net.ipv4.tcp_wmem",
        }
    }

    /// Whether its value is three integers (min, default, max).
    pub fn is_triple(self) -> bool {
        matches!(self, Self::Ipv4TcpRmem | Self::Ipv4TcpWmem)
    }
}

/// A sysctl's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SysctlValue {
    /// One integer.
    One(u32),
    /// Min, default, max.
    Three([u32; 3]),
}

#[cfg(test)]
mod tests;
