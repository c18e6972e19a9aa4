//! The OVS part of a capture (`dpuctl capture --ovs-rundir DIR`): the agent's one-shot
//! reads of ovsdb-server (`DIR/db.sock`) and ovs-vswitchd (its control socket, found
//! through `DIR/ovs-vswitchd.pid` as the agent finds it), made by
//! [`dpu_ovs::capture::read_all`] through the agent's own readers, each daemon's
//! [`Recorder`] in capture mode (read-only: see [`dpu_ovs::capture`]), once per reading.
//! Written as `jsonrpc/ovsdb-server.jsonl` and `jsonrpc/ovs-vswitchd.jsonl`, one
//! [`dpu_jsonrpc::Exchange`] per line, the format of the SNAP/SPDK transcript
//! (docs/hardware.md, "JSON-RPC transcripts"), redacted with the capture's mapping.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_jsonrpc::{ClientOptions, Recorder};
use dpu_ovs::capture::{ovsdb_recorder, read_all, vswitchd_recorder, ReadError};
use dpu_ovs::ovsdb::{Ovsdb, OvsdbOptions};
use dpu_ovs::unixctl::Unixctl;

use super::error::CaptureError;
use super::jsonrpc::{write_transcript, TranscriptEntry};
use super::redact::Redactor;

/// The transcript of ovsdb-server's answers, under `jsonrpc/`.
pub const OVSDB_TRANSCRIPT: &str = "ovsdb-server";
/// The transcript of ovs-vswitchd's control-socket answers, under `jsonrpc/`.
pub const VSWITCHD_TRANSCRIPT: &str = "ovs-vswitchd";

/// The deadline of one call: a daemon that does not answer a listing in this long fails
/// the capture rather than hanging it.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The recording of one OVS run directory across both readings.
#[derive(Debug)]
pub(super) struct OvsCapture {
    rundir: PathBuf,
    ovsdb: Recorder,
    vswitchd: Recorder,
}

impl OvsCapture {
    /// A capture of the daemons in `rundir`; nothing is asked until [`read`](Self::read).
    pub(super) fn new(rundir: &Path) -> Self {
        Self {
            rundir: rundir.to_owned(),
            ovsdb: ovsdb_recorder(),
            vswitchd: vswitchd_recorder(),
        }
    }

    /// Reading `reading` (1 or 2), on a thread and runtime of its own so the caller need
    /// not be async; fresh clients each time, their connections living on that runtime.
    pub(super) fn read(&mut self, reading: u32) -> Result<(), CaptureError> {
        self.ovsdb.set_reading(reading);
        self.vswitchd.set_reading(reading);
        let rpc = ClientOptions {
            call_timeout: CALL_TIMEOUT,
            ..ClientOptions::v1()
        };
        let socket = dpu_ovs::default_ovsdb_socket(&self.rundir);
        let options = OvsdbOptions {
            rpc: rpc.clone(),
            ..OvsdbOptions::default()
        };
        let address = format!("unix:{}", socket.display());
        let ovsdb = Ovsdb::recording(&address, options, self.ovsdb.clone()).map_err(|e| {
            CaptureError::Ovs {
                rundir: self.rundir.clone(),
                source: Box::new(ReadError::Ovsdb(Box::new(e))),
            }
        })?;
        let vswitchd = Unixctl::vswitchd(&self.rundir)
            .with_options(rpc)
            .recording(self.vswitchd.clone());
        let outcome = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|source| CaptureError::Write {
                            path: self.rundir.clone(),
                            source,
                        })?;
                    runtime
                        .block_on(read_all(&ovsdb, &vswitchd))
                        .map_err(|e| CaptureError::Ovs {
                            rundir: self.rundir.clone(),
                            source: Box::new(e),
                        })
                })
                .join()
        });
        let found = match outcome {
            Ok(result) => result?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        tracing::debug!(
            reading,
            datapaths = found.datapaths.len(),
            flow_dumps = found.flow_dumps.len(),
            failed = found.failed.len(),
            "OVS reading recorded"
        );
        Ok(())
    }

    /// Writes both transcripts under `out` (redacted when `redactor` is given) and says
    /// what each holds.
    pub(super) fn write(
        self,
        out: &Path,
        mut redactor: Option<&mut Redactor>,
    ) -> Result<Vec<TranscriptEntry>, CaptureError> {
        let socket = dpu_ovs::default_ovsdb_socket(&self.rundir);
        let db = write_transcript(
            out,
            OVSDB_TRANSCRIPT,
            &socket,
            &self.ovsdb,
            redactor.as_deref_mut(),
        )?;
        let ctl_socket = Unixctl::vswitchd(&self.rundir)
            .socket_path()
            .unwrap_or_else(|_| self.rundir.join("ovs-vswitchd.PID.ctl"));
        let ctl = write_transcript(
            out,
            VSWITCHD_TRANSCRIPT,
            &ctl_socket,
            &self.vswitchd,
            redactor,
        )?;
        Ok(vec![db, ctl])
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{capture, CaptureError, CaptureOptions};

    #[test]
    fn a_run_directory_without_ovs_fails_the_capture_naming_it_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (root, rundir, out) = (
            dir.path().join("root"),
            dir.path().join("no-ovs-here"),
            dir.path().join("bundle"),
        );
        std::fs::create_dir_all(&root).expect("root");
        std::fs::create_dir_all(&rundir).expect("rundir");
        let options = CaptureOptions {
            sys_root: root,
            out: out.clone(),
            redact: true,
            interval: Duration::from_millis(10),
            snap_socket: None,
            ovs_rundir: Some(rundir.clone()),
        };
        let err = capture(&options).expect_err("no ovsdb-server to read");
        assert!(
            matches!(&err, CaptureError::Ovs { rundir: r, .. } if *r == rundir),
            "{err:?}"
        );
        assert!(err.to_string().contains("no-ovs-here"), "{err}");
        assert!(!out.exists(), "the failed capture left {}", out.display());
        // Control: the same capture without --ovs-rundir succeeds.
        let options = CaptureOptions {
            ovs_rundir: None,
            ..options
        };
        capture(&options).expect("a capture asking no OVS");
        assert!(out.join("manifest.json").is_file());
    }
}

#[cfg(test)]
mod redaction_tests {
    use std::path::Path;

    use dpu_jsonrpc::Exchange;
    use serde_json::json;

    use super::super::jsonrpc::redact_exchange;
    use super::super::redact::Redactor;

    #[test]
    fn a_flow_dump_and_an_ovsdb_row_get_the_placeholders_of_the_sysfs_files() {
        let mut redactor = Redactor::default();
        let mac = "aa:c6:9b:8f:08:03";
        let placeholder = |r: &mut Redactor, path: &str, text: &str| {
            let out = r.file(Path::new(path), format!("{text}\n").as_bytes());
            String::from_utf8(out).expect("text").trim().to_owned()
        };
        let mac_placeholder = placeholder(&mut redactor, "sys/class/net/tp1/address", mac);
        let ip_placeholder = placeholder(&mut redactor, "sys/x/ip", "10.201.0.1");
        assert_ne!(mac_placeholder, mac);
        let flow = format!(
            "ufid:7de4967b-3515-4c7e-890c-d95231720265, in_port(tp1),eth(src={mac},dst=72:ee:61:53:51:dd),\
             eth_type(0x0800),ipv4(src=10.201.0.1/0.0.0.0,dst=10.201.0.2/0.0.0.0), packets:1, bytes:98, used:0.5s, actions:tp2"
        );
        let mut exchange = Exchange {
            reading: 1,
            method: "dpctl/dump-flows".to_owned(),
            request: json!({"id": 3, "method": "dpctl/dump-flows", "params": ["-m", "--names", "netdev@ovs-netdev"]}),
            response: json!({"id": 3, "result": flow, "error": null}),
        };
        redact_exchange(&mut redactor, &mut exchange, "jsonrpc/ovs-vswitchd.jsonl");
        let text = exchange.response["result"].as_str().expect("text");
        assert!(
            !text.contains(mac) && !text.contains("10.201.0.1/"),
            "{text}"
        );
        assert!(
            text.contains(&format!("eth(src={mac_placeholder},")),
            "{text}"
        );
        assert!(
            text.contains(&format!("ipv4(src={ip_placeholder}/0.0.0.0")),
            "{text}"
        );
        assert!(
            !text.contains("7de4967b-3515"),
            "the ufid is a UUID: {text}"
        );
        // What is not an identifier stays, so the dump still parses the same.
        for kept in [
            "in_port(tp1)",
            "eth_type(0x0800)",
            "packets:1, bytes:98",
            "actions:tp2",
        ] {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        assert_eq!(
            exchange.params(),
            &json!(["-m", "--names", "netdev@ovs-netdev"])
        );

        let mut row = Exchange {
            reading: 1,
            method: "transact".to_owned(),
            request: json!({"id": 4, "method": "transact", "params": ["Open_vSwitch"]}),
            response: json!({"id": 4, "result": [{"rows": [{"name": "tp1", "mac_in_use": mac}]}], "error": null}),
        };
        redact_exchange(&mut redactor, &mut row, "jsonrpc/ovsdb-server.jsonl");
        assert_eq!(
            row.response["result"][0]["rows"][0]["mac_in_use"],
            mac_placeholder.as_str()
        );
        assert_eq!(row.response["result"][0]["rows"][0]["name"], "tp1");
    }
}
