//! Compiles `proto/dpu/v1/*.proto` with protox (pure Rust, no system `protoc`), generates
//! the tonic client and server code, serde impls following the proto3 JSON mapping (so
//! `dpuctl -o json` prints what grpcurl would), and an encoded descriptor set that the
//! agent serves through gRPC reflection.

use std::path::PathBuf;

const PROTO_FILES: &[&str] = &[
    "proto/dpu/v1/common.proto",
    "proto/dpu/v1/inventory.proto",
    "proto/dpu/v1/storage.proto",
    "proto/dpu/v1/switch.proto",
    "proto/dpu/v1/counters.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for file in PROTO_FILES {
        println!("cargo:rerun-if-changed={file}");
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    let file_descriptors = protox::compile(PROTO_FILES, ["proto"])?;
    let encoded = prost::Message::encode_to_vec(&file_descriptors);
    std::fs::write(out_dir.join("dpu_v1_descriptor.bin"), &encoded)?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(file_descriptors)?;

    pbjson_build::Builder::new()
        .register_descriptors(&encoded)?
        .build(&[".dpu.v1"])?;
    Ok(())
}
