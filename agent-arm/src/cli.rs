//! Command-line flags. Every flag overrides the matching key of the config file.

use std::path::PathBuf;

use clap::Parser;
use dpu_proto::Endpoint;

use crate::config::{Config, LogFormat, StorageBackendKind};

const EXAMPLES: &str = "\
Examples:
  # Serve on the default Unix socket with the packaged config
  dpu-agent --config /etc/dpu-agent/config.toml

  # Try it on a workstation without root: a private socket and state directory, and
  # plaintext TCP on the loopback (plaintext is for a trusted link only)
  dpu-agent --listen unix:/tmp/dpu-agent.sock --listen tcp:127.0.0.1:50051 \\
      --insecure-listen --state-dir /tmp/dpu-agent-state

  # Validate a config file and print the effective configuration
  dpu-agent --config ./config.toml --check-config

  # Readiness probe: exit 0 when the Storage service is SERVING
  dpu-agent --config /etc/dpu-agent/config.toml --health-check dpu.v1.Storage
";

/// gRPC agent for NVIDIA BlueField DPUs: manages SNAP NVMe emulation and OVS offload and
/// serves consistent counter snapshots for offload proofs.
#[derive(Debug, Parser)]
#[command(name = "dpu-agent", version = crate::version::AGENT_VERSION, after_help = EXAMPLES)]
pub(crate) struct Args {
    /// TOML config file (unknown keys are rejected).
    #[arg(long, value_name = "FILE", env = "DPU_AGENT_CONFIG")]
    pub(crate) config: Option<PathBuf>,

    /// Where to serve: unix:PATH or tcp:HOST:PORT. Repeat for several listeners; replaces
    /// the config file's list.
    #[arg(long = "listen", value_name = "ENDPOINT")]
    pub(crate) listen: Vec<Endpoint>,

    /// Read DIR/sys, DIR/proc and DIR/etc instead of /sys, /proc and /etc.
    #[arg(long, value_name = "DIR")]
    pub(crate) sys_root: Option<PathBuf>,

    /// Directory for the agent's desired state.
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    /// Accept plaintext TCP listeners (no TLS, no client certificates); logs a warning.
    /// For a trusted point-to-point link only (the lab, an isolated rshim tmfifo).
    #[arg(long)]
    pub(crate) insecure_listen: bool,

    /// Storage backend: snap (BlueField) or kernel (nvmet + nvme-fabrics).
    #[arg(long, value_name = "BACKEND")]
    pub(crate) storage_backend: Option<StorageBackendKind>,

    /// SNAP/SPDK JSON-RPC socket.
    #[arg(long, value_name = "PATH")]
    pub(crate) snap_socket: Option<PathBuf>,

    /// OVSDB endpoint, unix:PATH.
    #[arg(long, value_name = "unix:PATH")]
    pub(crate) ovsdb: Option<Endpoint>,

    /// OVS run directory (pid files and ovs-vswitchd control sockets).
    #[arg(long, value_name = "DIR")]
    pub(crate) ovs_rundir: Option<PathBuf>,

    /// Log filter, e.g. "info" or "dpu_agent=debug,tonic=info" (RUST_LOG syntax).
    #[arg(long, value_name = "FILTER")]
    pub(crate) log_level: Option<String>,

    /// Log format.
    #[arg(long, value_name = "FORMAT")]
    pub(crate) log_format: Option<LogFormat>,

    /// Validate the configuration and load the files it names (the TLS certificate, key
    /// and client CA, as the start does), print the effective config as TOML and exit.
    #[arg(long)]
    pub(crate) check_config: bool,

    /// With --check-config: validate the config alone, without reading the files it
    /// names: for a ConfigMap or an image checked where the TLS Secret is not mounted.
    #[arg(long, requires = "check_config")]
    pub(crate) skip_file_checks: bool,

    /// Ask the running agent, on the first unix: listener, for the gRPC health of each
    /// SERVICE (none: the whole server) and exit 0 if all are SERVING, 1 if not: a probe
    /// for Kubernetes exec checks (e.g. `--health-check dpu.v1.Storage dpu.v1.Switch`).
    #[arg(long, value_name = "SERVICE", num_args = 0..)]
    pub(crate) health_check: Option<Vec<String>>,

    /// Print the man page (roff, section 8) to stdout and exit. Hidden: the package
    /// carries the page (scripts/gen-shell-assets.sh).
    #[arg(long, hide = true)]
    pub(crate) print_man: bool,
}

/// The agent's man page in roff: section 8, a daemon. Generated from these flags, so it
/// never drifts from `--help`.
pub(crate) fn man_page() -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(<Args as clap::CommandFactory>::command())
        .section("8")
        .render(&mut out)?;
    Ok(out)
}

impl Args {
    /// Overrides the matching keys of `config` (read from the file) with the flags given,
    /// so a flag always wins over the file; `main` validates the result afterwards. This
    /// lives here, not in `config`, so the arrow runs `cli -> config` only.
    pub(crate) fn apply_to(&self, config: &mut Config) {
        if !self.listen.is_empty() {
            config.listen.clone_from(&self.listen);
        }
        if let Some(root) = &self.sys_root {
            config.sys_root.clone_from(root);
        }
        if let Some(dir) = &self.state_dir {
            config.state_dir.clone_from(dir);
        }
        if self.insecure_listen {
            config.security.insecure_listen = true;
        }
        if let Some(backend) = self.storage_backend {
            config.storage.backend = backend;
        }
        if let Some(socket) = &self.snap_socket {
            config.snap.socket.clone_from(socket);
        }
        if let Some(ovsdb) = &self.ovsdb {
            config.ovs.ovsdb = Some(ovsdb.clone());
        }
        if let Some(rundir) = &self.ovs_rundir {
            config.ovs.rundir.clone_from(rundir);
        }
        if let Some(level) = &self.log_level {
            config.log.level.clone_from(level);
        }
        if let Some(format) = self.log_format {
            config.log.format = format;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::*;

    #[test]
    fn flags_override_the_file() {
        let args = Args::parse_from([
            "dpu-agent",
            "--listen",
            "tcp:127.0.0.1:0",
            "--snap-socket",
            "/tmp/s.sock",
            "--sys-root",
            "/fixture",
        ]);
        let mut config =
            Config::from_toml("listen = [\"unix:/a.sock\"]\n[snap]\nsocket = \"/b\"\n")
                .expect("parse");
        args.apply_to(&mut config);
        assert_eq!(config.listen, args.listen);
        assert_eq!(config.snap.socket, PathBuf::from("/tmp/s.sock"));
        assert_eq!(config.sys_root, PathBuf::from("/fixture"));
    }

    /// Every example of `--help` parses, and one that names no config file is a config
    /// the agent accepts as it stands (the earlier plaintext-TCP example was refused).
    #[test]
    fn every_help_example_is_accepted_as_written() {
        let mut command = String::new();
        let mut checked = 0;
        for line in EXAMPLES.lines().map(str::trim) {
            if !line.starts_with("dpu-agent") && command.is_empty() {
                continue;
            }
            command.push_str(line.trim_end_matches('\\'));
            command.push(' ');
            if line.ends_with('\\') {
                continue;
            }
            let words: Vec<&str> = command.split_whitespace().collect();
            let args = Args::try_parse_from(&words).unwrap_or_else(|e| panic!("{command}: {e}"));
            if args.config.is_none() {
                let mut config = Config::default();
                args.apply_to(&mut config);
                config
                    .validate()
                    .unwrap_or_else(|e| panic!("{command}: {e}"));
            }
            checked += 1;
            command.clear();
        }
        assert_eq!(checked, 4, "{EXAMPLES}");
    }

    #[test]
    fn man_page_is_roff_in_section_8_without_the_hidden_flag() {
        let page = String::from_utf8(man_page().expect("render")).expect("utf-8");
        // After clap_mangen's preamble (the apostrophe string: `.ie`, `.el`), the header.
        let header = page
            .lines()
            .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "));
        assert!(
            header.is_some_and(|l| l.starts_with(".TH dpu-agent 8 ")),
            "{page}"
        );
        assert!(page.contains("\\-\\-check\\-config"), "{page}");
        assert!(!page.contains("print\\-man"), "{page}");
        assert!(Args::parse_from(["dpu-agent", "--print-man"]).print_man);
    }
}
