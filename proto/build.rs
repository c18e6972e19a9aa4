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
    let serde_file = out_dir.join("dpu.v1.serde.rs");
    let generated = std::fs::read_to_string(&serde_file)?;
    std::fs::write(&serde_file, unknown_enums_as_numbers(&generated)?)?;
    Ok(())
}

/// pbjson's serialiser fails on an enum value its build does not know (`Invalid variant 5`),
/// which would make `dpuctl -o json` fail, or stop mid-document, on any answer from a newer
/// agent. The proto3 JSON mapping lets such a value be written as its number: this rewrites
/// each generated
///
/// ```text
/// let v = Kind::try_from(self.kind)
///     .map_err(|_| serde::ser::Error::custom(format!("Invalid variant {}", self.kind)))?;
/// struct_ser.serialize_field("kind", &v)?;
/// ```
///
/// into a match that writes the number on `Err`. Any "Invalid variant" left (a pattern a
/// newer pbjson writes differently) fails the build instead of shipping the old behaviour.
fn unknown_enums_as_numbers(generated: &str) -> Result<String, Box<dyn std::error::Error>> {
    let lines: Vec<&str> = generated.lines().collect();
    let mut out = String::with_capacity(generated.len() + 4096);
    let mut i = 0;
    while i < lines.len() {
        let rewritten = lines.get(i..i + 3).and_then(|three| {
            let indent = &three[0][..three[0].len() - three[0].trim_start().len()];
            let call = three[0].trim().strip_prefix("let v = ")?;
            let (_, field) = call.strip_suffix(')')?.split_once("::try_from(")?;
            let map_err = format!(
                ".map_err(|_| serde::ser::Error::custom(format!(\"Invalid variant {{}}\", {field})))?;"
            );
            (three[1].trim() == map_err).then_some(())?;
            let serialize = three[2].trim().strip_prefix("struct_ser.serialize_field(")?;
            let name = serialize.strip_suffix(", &v)?;")?;
            Some(format!(
                "{indent}match {call} {{\n\
                 {indent}    Ok(v) => struct_ser.serialize_field({name}, &v)?,\n\
                 {indent}    Err(_) => struct_ser.serialize_field({name}, &{field})?,\n\
                 {indent}}}\n"
            ))
        });
        match rewritten {
            Some(text) => {
                out.push_str(&text);
                i += 3;
            }
            None => {
                out.push_str(lines[i]);
                out.push('\n');
                i += 1;
            }
        }
    }
    if out.contains("Invalid variant") {
        return Err(
            "pbjson's enum serialiser has a shape this build script does not rewrite \
                    (proto/build.rs unknown_enums_as_numbers)"
                .into(),
        );
    }
    Ok(out)
}
