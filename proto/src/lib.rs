//! The agent API, package `dpu.v1`: the contract between `dpu-agent` on the BlueField Arm
//! and everything that drives it (`dpuctl`, tests, third-party gRPC tools).
//!
//! This crate owns the `.proto` files, the generated prost messages and tonic
//! clients/servers, the encoded descriptor set for gRPC reflection, and the parsing of the
//! API's resource names. It must not touch the machine, the network or any backend: it is
//! pure data shared by both sides.

pub mod echo;
pub mod endpoint;
pub mod names;

pub use echo::echo;
pub use endpoint::{Endpoint, EndpointError, DEFAULT_AGENT_SOCKET};

/// Generated code for package `dpu.v1`.
#[allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    rustdoc::broken_intra_doc_links
)]
pub mod v1 {
    tonic::include_proto!("dpu.v1");
    include!(concat!(env!("OUT_DIR"), "/dpu.v1.serde.rs"));
}

/// Well-known protobuf types (Timestamp, Duration) with proto3 JSON serde support.
pub use pbjson_types;

/// The encoded `FileDescriptorSet` of every `dpu.v1` file, so the agent can serve gRPC
/// reflection and tools like grpcurl work without the `.proto` files.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/dpu_v1_descriptor.bin"));

/// Fully-qualified names of the four services, as reflection lists them.
pub const SERVICE_NAMES: [&str; 4] = [
    "dpu.v1.Inventory",
    "dpu.v1.Storage",
    "dpu.v1.Switch",
    "dpu.v1.Counters",
];

/// The largest message either side sends or takes: the agent's default
/// `[limits] max_response_bytes`, and what dpuctl accepts from it (tonic's own default, 4
/// MiB, is less than a 6,000-netdev snapshot or a large flow dump). One number, so an answer
/// the agent may send is one dpuctl can read.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The `grpc.health.v1` service name the agent reports SERVING while every service its
/// configuration requires (`[health] ready_requires`) is: what a readiness probe asks.
pub const READINESS_SERVICE: &str = "readiness";

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn descriptor_set_decodes_and_holds_every_service() {
        let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET)
            .expect("embedded descriptor set must decode");
        let services: Vec<String> = set
            .file
            .iter()
            .filter(|f| f.package() == "dpu.v1")
            .flat_map(|f| f.service.iter().map(|s| format!("dpu.v1.{}", s.name())))
            .collect();
        for name in SERVICE_NAMES {
            assert!(services.iter().any(|s| s == name), "{name} missing");
        }
    }

    /// A `SourceError` from an agent that predates `kind` (fields 1 and 2 only) decodes
    /// with `kind` UNSPECIFIED, which clients treat as "could not read", never "not found".
    #[test]
    fn an_old_agents_source_error_decodes_as_unspecified() {
        // Field 2 (message), length 1, "x": what an old agent's encoder writes.
        let old = v1::SourceError::decode(&[0x12, 0x01, b'x'][..]).expect("decodes");
        assert_eq!(old.message, "x");
        assert_eq!(old.kind, v1::SourceErrorKind::Unspecified as i32);
        let new = v1::SourceError {
            message: "x".to_owned(),
            kind: v1::SourceErrorKind::NotFound as i32,
            ..Default::default()
        };
        assert_eq!(
            v1::SourceError::decode(new.encode_to_vec().as_slice()).expect("decodes"),
            new
        );
    }

    /// A newer agent's enum value (one this build does not know) is written as its number,
    /// as the proto3 JSON mapping allows, instead of failing the whole document.
    #[test]
    fn an_unknown_enum_value_serialises_as_its_number() {
        let system = v1::System {
            hostname: "dpu0".to_owned(),
            dpu_mode: 5,
            ..Default::default()
        };
        let json = serde_json::to_value(&system).expect("serialises");
        assert_eq!(json["dpuMode"], 5, "{json}");
        let known = v1::System {
            dpu_mode: v1::DpuMode::Dpu as i32,
            ..Default::default()
        };
        let json = serde_json::to_value(&known).expect("serialises");
        assert_eq!(json["dpuMode"], "DPU_MODE_DPU", "{json}");
    }
}
