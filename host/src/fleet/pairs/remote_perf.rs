//! `dpuctl roce perf` on the client host of a pair, as the pair's measurement: the words
//! that run it there, and what its `-o json` report says.
//!
//! Why the whole single-node command and not perftest driven from here: `roce perf` reads
//! the client's RDMA counters before and after each run, on the client, through the one
//! accounting engine (`roce::rdma_evidence`, `accounting::deltas`), and starts the server on
//! the peer over ssh itself. Running it on the client keeps "every run's path is decided by
//! RDMA counters" true with no second counter reader and no second perftest parser; this
//! file only reads the report it prints. Its JSON is the contract between the two dpuctl
//! builds (the hosts may run another version): only the fields the verdict needs are read,
//! and unknown ones are ignored.

use serde::Deserialize;

use super::host_port::HostPort;
use crate::roce::perf::{PathVerdict, PerfTest};

/// What runs on the client for one pair run.
#[derive(Debug, Clone)]
pub struct PerfCommand<'a> {
    /// The dpuctl program on the hosts.
    pub dpuctl: &'a str,
    /// The bandwidth tests.
    pub tests: &'a [PerfTest],
    /// Message sizes.
    pub sizes: &'a [u64],
    /// perftest `-n`.
    pub iterations: u64,
    /// Per-run limit on the host, seconds.
    pub run_timeout_s: u64,
    /// The first server port.
    pub base_port: u16,
}

impl PerfCommand<'_> {
    /// The words: `roce perf` from `client` to the server at `server_ssh` (as the client
    /// reaches it over ssh), both sides pinned to the ports the probe found.
    pub fn words(&self, client: &HostPort, server_ssh: &str, server: &HostPort) -> Vec<String> {
        let tests: Vec<&str> = self
            .tests
            .iter()
            .map(|t| t.name().trim_start_matches("ib_"))
            .collect();
        let sizes: Vec<String> = self.sizes.iter().map(u64::to_string).collect();
        let mut words: Vec<String> = [
            self.dpuctl,
            "-o",
            "json",
            "roce",
            "perf",
            "--peer",
            server_ssh,
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let (c, s) = (&client.endpoint, &server.endpoint);
        for (flag, value) in [
            ("--tests", tests.join(",")),
            ("--sizes", sizes.join(",")),
            ("--iterations", self.iterations.to_string()),
            ("--device", c.ibdev.clone()),
            ("--ib-port", c.port.to_string()),
            ("--gid-index", c.gid_index.to_string()),
            ("--peer-device", s.ibdev.clone()),
            ("--peer-ib-port", s.port.to_string()),
            ("--peer-gid-index", s.gid_index.to_string()),
            ("--base-port", self.base_port.to_string()),
            ("--run-timeout", self.run_timeout_s.to_string()),
        ] {
            words.push(flag.to_owned());
            words.push(value);
        }
        words
    }
}

/// The part of `roce perf -o json` a pair verdict reads.
#[derive(Debug, Clone, Deserialize)]
pub struct RemoteSweep {
    /// Every run, in order.
    pub runs: Vec<RemoteRun>,
}

/// One run of the remote sweep.
#[derive(Debug, Clone, Deserialize)]
pub struct RemoteRun {
    /// `write_bw`, ...
    pub test: String,
    /// Message size.
    pub size: u64,
    /// Why it produced no measurement.
    #[serde(default)]
    pub error: Option<String>,
    /// Average bandwidth, Gbit/s.
    #[serde(default)]
    pub bw_gbps: Option<f64>,
    /// The counter evidence.
    pub rdma: RemoteEvidence,
}

/// A remote run's counter evidence.
#[derive(Debug, Clone, Deserialize)]
pub struct RemoteEvidence {
    /// `sysfs`, `rdma-netlink` or `none`.
    pub source: String,
    /// Packets moved; None when unknown (never read as 0).
    #[serde(default)]
    pub packets_delta: Option<u64>,
    /// Why the counters cannot say.
    #[serde(default)]
    pub inconclusive: Option<String>,
    /// Packets the payload needs.
    #[serde(default)]
    pub payload_packets: u64,
    /// `rdma`, `not-rdma` or `unknown`.
    pub path: String,
}

impl RemoteEvidence {
    /// The path verdict; anything but the two decided words is unknown.
    pub fn path(&self) -> PathVerdict {
        match self.path.as_str() {
            "rdma" => PathVerdict::Rdma,
            "not-rdma" => PathVerdict::NotRdma,
            _ => PathVerdict::Unknown,
        }
    }
}

/// Reads the report from the remote's stdout.
pub fn parse(stdout: &str) -> Result<RemoteSweep, String> {
    serde_json::from_str(stdout.trim())
        .map_err(|e| format!("its output is not a `roce perf` JSON report ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::endpoint::Endpoint;

    fn port(dev: &str, gid: u32) -> HostPort {
        HostPort {
            endpoint: Endpoint {
                ibdev: dev.into(),
                port: 1,
                gid_index: gid,
                ipv4: None,
                netdev: None,
            },
            rate: None,
        }
    }

    #[test]
    fn both_sides_are_pinned_and_the_peer_is_the_servers_ssh() {
        let cmd = PerfCommand {
            dpuctl: "/opt/dpu/bin/dpuctl",
            tests: &[PerfTest::WriteBw, PerfTest::ReadBw],
            sizes: &[65536, 1048576],
            iterations: 500,
            run_timeout_s: 60,
            base_port: 18600,
        };
        let w = cmd.words(&port("mlx5_0", 3), "root@gpu-02", &port("mlx5_1", 5));
        let after = |flag: &str| w.iter().position(|a| a == flag).map(|i| w[i + 1].as_str());
        assert_eq!(
            w[..5],
            ["/opt/dpu/bin/dpuctl", "-o", "json", "roce", "perf"]
        );
        assert_eq!(after("--peer"), Some("root@gpu-02"));
        assert_eq!(after("--tests"), Some("write_bw,read_bw"));
        assert_eq!(after("--sizes"), Some("65536,1048576"));
        assert_eq!(after("--device"), Some("mlx5_0"));
        assert_eq!(after("--gid-index"), Some("3"));
        assert_eq!(after("--peer-device"), Some("mlx5_1"));
        assert_eq!(after("--peer-gid-index"), Some("5"));
        assert_eq!(after("--base-port"), Some("18600"));
    }

    #[test]
    fn the_report_reads_with_unknown_counts_kept_unknown() {
        let json = r#"{"peer":"b","verdict":"inconclusive","extra":1,"runs":[
            {"test":"write_bw","size":65536,"error":null,"bw_gbps":93.5,"flagged":false,
             "rdma":{"source":"sysfs","packets_delta":null,"bytes_delta":null,
                     "inconclusive":"port_xmit_packets reset","payload_packets":64000,
                     "payload_bytes":65536000,"path":"unknown"}}]}"#;
        let sweep = parse(json).expect("parse");
        let run = &sweep.runs[0];
        assert_eq!(run.bw_gbps, Some(93.5));
        assert_eq!(run.rdma.packets_delta, None);
        assert_eq!(run.rdma.path(), PathVerdict::Unknown);
        assert!(parse("dpuctl: error: no RDMA device").is_err());
    }
}
