//! dpuctl against an agent it cannot trust: a stand-in `dpu.v1.Inventory` server (tonic, in
//! this process) whose answers carry terminal control sequences and an enum value from a
//! newer proto. The operator's terminal must see the sequences escaped, a table must say
//! `unknown(5)`, and `-o json` must print one whole, valid document with the number.

use std::path::Path;
use std::process::Output;

use dpu_proto::v1::{self, inventory_server::Inventory, inventory_server::InventoryServer};
use dpu_tests::command::describe;
use dpu_tests::harness::dpuctl;
use serde_json::Value;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

/// Clear screen, then an OSC window title ended by BEL.
const CLEAR_AND_RETITLE: &str = "\x1b[2J\x1b]0;owned\x07";

/// An enum value no dpuctl of this proto knows.
const NEWER_DPU_MODE: i32 = 5;

/// The stand-in; `big` answers `ListNetdevs` with more than tonic's default 4 MiB client
/// limit, within the agent's 64 MiB.
struct Hostile {
    big: bool,
}

/// Netdevs in a big answer, each with a 1 KiB driver string: about 5 MiB.
const BIG_NETDEVS: usize = 5_000;

#[tonic::async_trait]
impl Inventory for Hostile {
    async fn get_system(
        &self,
        _: Request<v1::GetSystemRequest>,
    ) -> Result<Response<v1::System>, Status> {
        Ok(Response::new(v1::System {
            hostname: format!("dpu{CLEAR_AND_RETITLE}0"),
            model: "BlueField-3\r\u{202e}".to_owned(),
            dpu_mode: NEWER_DPU_MODE,
            ..Default::default()
        }))
    }

    async fn list_netdevs(
        &self,
        _: Request<v1::ListNetdevsRequest>,
    ) -> Result<Response<v1::ListNetdevsResponse>, Status> {
        if self.big {
            let netdevs = (0..BIG_NETDEVS)
                .map(|i| v1::Netdev {
                    ifname: format!("pf0vf{i}"),
                    driver: "d".repeat(1024),
                    ..Default::default()
                })
                .collect();
            return Ok(Response::new(v1::ListNetdevsResponse {
                netdevs,
                ..Default::default()
            }));
        }
        Ok(Response::new(v1::ListNetdevsResponse {
            netdevs: vec![v1::Netdev {
                ifname: format!("p0{CLEAR_AND_RETITLE}"),
                role: 77,
                oper_state: 42,
                ..Default::default()
            }],
            ..Default::default()
        }))
    }

    async fn get_netdev(
        &self,
        _: Request<v1::GetNetdevRequest>,
    ) -> Result<Response<v1::Netdev>, Status> {
        Err(Status::unimplemented("stand-in"))
    }

    async fn list_rdma_devices(
        &self,
        _: Request<v1::ListRdmaDevicesRequest>,
    ) -> Result<Response<v1::ListRdmaDevicesResponse>, Status> {
        Ok(Response::new(v1::ListRdmaDevicesResponse::default()))
    }

    async fn get_rdma_device(
        &self,
        _: Request<v1::GetRdmaDeviceRequest>,
    ) -> Result<Response<v1::RdmaDevice>, Status> {
        Err(Status::unimplemented("stand-in"))
    }

    async fn list_pci_functions(
        &self,
        _: Request<v1::ListPciFunctionsRequest>,
    ) -> Result<Response<v1::ListPciFunctionsResponse>, Status> {
        Err(Status::unimplemented("stand-in"))
    }

    async fn list_emulation_functions(
        &self,
        _: Request<v1::ListEmulationFunctionsRequest>,
    ) -> Result<Response<v1::ListEmulationFunctionsResponse>, Status> {
        Err(Status::failed_precondition(format!(
            "no emulation here{CLEAR_AND_RETITLE}"
        )))
    }

    async fn get_fabric_config(
        &self,
        _: Request<v1::GetFabricConfigRequest>,
    ) -> Result<Response<v1::FabricConfig>, Status> {
        Err(Status::unimplemented("stand-in"))
    }
}

/// Serves the stand-in on `socket` until the runtime ends.
fn serve(socket: &Path, big: bool) {
    let listener = tokio::net::UnixListener::bind(socket).expect("bind the stand-in's socket");
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(InventoryServer::new(Hostile { big }))
            .serve_with_incoming(UnixListenerStream::new(listener)),
    );
}

/// dpuctl, run off the runtime's threads (it is a blocking child process).
async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        dpuctl(&args)
    })
    .await
    .expect("dpuctl task")
}

fn agent_args(socket: &Path, rest: &[&str]) -> Vec<String> {
    let mut args = vec!["--agent".to_owned(), format!("unix:{}", socket.display())];
    args.extend(rest.iter().map(|s| (*s).to_owned()));
    args
}

/// No byte a terminal would obey: ESC, BEL, CR, or (for text meant for people) a
/// bidirectional override.
fn assert_printable(what: &str, bytes: &[u8]) {
    assert_no_controls(what, bytes, true);
}

fn assert_no_controls(what: &str, bytes: &[u8], bidi_too: bool) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text
        .chars()
        .filter(|c| (c.is_control() && *c != '\n' && *c != '\t') || (bidi_too && *c == '\u{202e}'))
        .collect();
    assert!(
        bad.is_empty(),
        "{what} has raw control characters {bad:?}:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_agents_escapes_and_unknown_enums_are_shown_safely() {
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("hostile.sock");
    serve(&socket, false);

    let table = run(agent_args(&socket, &["dpu", "info"])).await;
    assert!(table.status.success(), "dpu info: {}", describe(&table));
    assert_printable("dpu info's table", &table.stdout);
    let shown = String::from_utf8_lossy(&table.stdout);
    assert!(
        shown.contains("\\x1b[2J"),
        "the escape is shown, escaped: {shown}"
    );
    assert!(shown.contains("\\u{202e}"), "{shown}");
    assert!(
        shown.contains(&format!("unknown({NEWER_DPU_MODE})")),
        "a newer agent's dpu mode is shown as its number: {shown}"
    );
    assert!(
        shown.contains("unknown(77)") && shown.contains("unknown(42)"),
        "{shown}"
    );

    let json = run(agent_args(&socket, &["-o", "json", "dpu", "info"])).await;
    assert!(
        json.status.success(),
        "-o json dpu info: {}",
        describe(&json)
    );
    let document: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("one whole JSON document ({e}): {}", describe(&json)));
    assert_eq!(document["system"]["dpuMode"], NEWER_DPU_MODE, "{document}");
    assert_eq!(document["netdevs"][0]["role"], 77, "{document}");
    // JSON escapes control characters itself; the value is kept exactly.
    assert_eq!(
        document["system"]["hostname"],
        format!("dpu{CLEAR_AND_RETITLE}0"),
        "{document}"
    );
    // JSON escapes every control character; a bidirectional override is a printable
    // character there, kept exactly, for the program that reads it.
    assert_no_controls("-o json dpu info", &json.stdout, false);

    // An error message from the agent reaches stderr escaped too.
    let failed = run(agent_args(&socket, &["storage", "functions"])).await;
    assert!(!failed.status.success(), "{}", describe(&failed));
    assert_printable("an error from the agent", &failed.stderr);
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("no emulation here\\x1b[2J"),
        "{}",
        describe(&failed)
    );
}

/// The agent may answer up to 64 MiB (`[limits] max_response_bytes`); dpuctl reads what it
/// may send, not only tonic's default 4 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_above_four_mib_is_read_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("big.sock");
    serve(&socket, true);
    let json = run(agent_args(&socket, &["-o", "json", "dpu", "info"])).await;
    assert!(
        json.status.success(),
        "-o json dpu info: {}",
        describe(&json).chars().take(2000).collect::<String>()
    );
    let document: Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(
        document["netdevs"].as_array().map(Vec::len),
        Some(BIG_NETDEVS)
    );
}
