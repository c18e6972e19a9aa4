//! gRPC reflection (v1 and v1alpha) lists the four services, so standard tools work
//! without .proto files; an independent Python client proves it from outside Rust.

use std::process::Command;

use tokio_stream::StreamExt as _;
use tonic_reflection::pb::v1 as reflection_v1;
use tonic_reflection::pb::v1alpha as reflection_v1alpha;

use crate::Lab;

/// Lists services through one reflection version. The two versions have identical
/// messages in different generated modules, hence a macro rather than a generic.
macro_rules! list_services {
    ($name:ident, $pb:ident) => {
        async fn $name(channel: tonic::transport::Channel) -> Vec<String> {
            use $pb::server_reflection_request::MessageRequest;
            use $pb::server_reflection_response::MessageResponse;
            let mut client = $pb::server_reflection_client::ServerReflectionClient::new(channel);
            let request = $pb::ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::ListServices(String::new())),
            };
            let mut replies = client
                .server_reflection_info(tokio_stream::once(request))
                .await
                .expect(concat!("reflection call via ", stringify!($pb)))
                .into_inner();
            let reply = replies.next().await.expect("one reply").expect("reply ok");
            match reply.message_response {
                Some(MessageResponse::ListServicesResponse(list)) => {
                    list.service.into_iter().map(|s| s.name).collect()
                }
                other => panic!("unexpected reflection reply {other:?}"),
            }
        }
    };
}

list_services!(services_v1, reflection_v1);
list_services!(services_v1alpha, reflection_v1alpha);

#[tokio::test]
async fn both_reflection_versions_list_every_service() {
    let lab = Lab::start();
    for services in [
        services_v1(lab.agent.channel().await).await,
        services_v1alpha(lab.agent.channel().await).await,
    ] {
        for expected in dpu_proto::SERVICE_NAMES
            .iter()
            .chain(&["grpc.health.v1.Health"])
        {
            assert!(
                services.iter().any(|s| s == expected),
                "{expected} missing from {services:?}"
            );
        }
    }
}

/// An independent client: Python grpcio with grpcio-reflection resolves the services from
/// the server alone and calls Inventory.GetSystem and the health check, with DEFAULT
/// channel options (on `unix:` grpcio sends the socket path as `:authority`; see
/// unix_authority.rs).
#[test]
fn python_grpc_client_lists_and_calls_services_through_reflection() {
    let python = match dpu_tests::harness::grpc_python() {
        Ok(python) => python,
        Err(why) => dpu_tests::skip!("{why}"),
    };
    let port = dpu_tests::harness::free_tcp_port();
    let tcp = format!("tcp:127.0.0.1:{port}");
    let lab = Lab::start_with(|o| o.extra_listen.push(tcp.clone()));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/reflection_client.py");
    for target in [
        format!("unix:{}", lab.agent.socket().display()),
        format!("127.0.0.1:{port}"),
    ] {
        let out = Command::new(&python)
            .arg(script)
            .arg(&target)
            .output()
            .expect("run the python client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "python client via {target} failed\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for service in dpu_proto::SERVICE_NAMES {
            assert!(
                stdout.contains(&format!("service {service}")),
                "{target}: {stdout}"
            );
        }
        assert!(
            stdout.contains("hostname=dpu-bf3-lab"),
            "{target}: {stdout}"
        );
        assert!(stdout.contains("health=SERVING"), "{target}: {stdout}");
    }
}
