//! gRPC clients on the Unix socket that send the socket path as HTTP/2 `:authority` are
//! served. grpc-core >= 1.57 (Python `grpcio`, C++, Ruby ...) with default options sends
//! it percent-encoded (`tmp%2Fd%2Fagent.sock`), grpc-java, Bazel and `grpcurl -unix` send
//! the raw path; h2 rejects both as malformed authorities (RST_STREAM PROTOCOL_ERROR)
//! unless the workspace's patched h2 (vendor/h2, `[patch.crates-io]`) is in the build.
//!
//! These tests need no Python: a hand-written HTTP/2 client sends exactly those
//! authorities. The Python client with default options is in `reflection.rs`.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::Lab;

const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FRAME_RST_STREAM: u8 = 0x3;
const FRAME_SETTINGS: u8 = 0x4;
const FRAME_PING: u8 = 0x6;
const FRAME_GOAWAY: u8 = 0x7;
const FLAG_END_STREAM: u8 = 0x1;
const FLAG_ACK: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;

/// The gRPC-framed `HealthCheckResponse { status: SERVING }`: uncompressed, length 2,
/// field 1 varint 1.
const SERVING_REPLY: [u8; 7] = [0, 0, 0, 0, 2, 0x08, 0x01];

fn write_frame(stream: &mut UnixStream, kind: u8, flags: u8, id: u32, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("small frame");
    let mut frame = len.to_be_bytes()[1..].to_vec();
    frame.extend([kind, flags]);
    frame.extend(id.to_be_bytes());
    frame.extend(payload);
    stream.write_all(&frame).expect("write frame");
}

fn read_frame(stream: &mut UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut head = [0u8; 9];
    stream.read_exact(&mut head).expect("read frame header");
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).expect("read frame payload");
    (head[3], head[4], id, payload)
}

/// An HPACK integer with an `prefix_bits`-bit prefix (RFC 7541 section 5.1), first byte
/// ORed with `first`.
fn hpack_int(out: &mut Vec<u8>, first: u8, prefix_bits: u32, mut value: usize) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A header block of literal fields without indexing, new names, no Huffman: what the
/// client sends is exactly the bytes given.
fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0x00);
        hpack_int(&mut block, 0x00, 7, name.len());
        block.extend(name.as_bytes());
        hpack_int(&mut block, 0x00, 7, value.len());
        block.extend(value.as_bytes());
    }
    block
}

/// What one stream ended with.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The response's DATA payload (the stream ended with trailers).
    Answered(Vec<u8>),
    /// The server reset the stream with this HTTP/2 error code (1 = PROTOCOL_ERROR).
    Reset(u32),
}

/// Calls grpc.health.v1.Health/Check on stream `id` with this `:authority`.
fn health_check(stream: &mut UnixStream, id: u32, authority: &str) -> Outcome {
    let block = header_block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/grpc.health.v1.Health/Check"),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    write_frame(stream, FRAME_HEADERS, FLAG_END_HEADERS, id, &block);
    // An empty HealthCheckRequest (service ""), gRPC-framed.
    write_frame(stream, FRAME_DATA, FLAG_END_STREAM, id, &[0, 0, 0, 0, 0]);
    let mut data = Vec::new();
    loop {
        let (kind, flags, frame_id, payload) = read_frame(stream);
        match kind {
            FRAME_SETTINGS if flags & FLAG_ACK == 0 => {
                write_frame(stream, FRAME_SETTINGS, FLAG_ACK, 0, &[]);
            }
            FRAME_PING if flags & FLAG_ACK == 0 => {
                write_frame(stream, FRAME_PING, FLAG_ACK, 0, &payload);
            }
            FRAME_GOAWAY => panic!("server sent GOAWAY {payload:?} (authority {authority:?})"),
            FRAME_RST_STREAM if frame_id == id => {
                let code = payload.try_into().map(u32::from_be_bytes).expect("4 bytes");
                return Outcome::Reset(code);
            }
            FRAME_DATA if frame_id == id => {
                data.extend(payload);
                if flags & FLAG_END_STREAM != 0 {
                    return Outcome::Answered(data);
                }
            }
            FRAME_HEADERS if frame_id == id && flags & FLAG_END_STREAM != 0 => {
                return Outcome::Answered(data);
            }
            _ => {}
        }
    }
}

fn connect(socket: &Path) -> UnixStream {
    let mut stream = UnixStream::connect(socket).expect("connect to the agent socket");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .expect("preface");
    write_frame(&mut stream, FRAME_SETTINGS, 0, 0, &[]);
    stream
}

#[test]
fn requests_with_the_socket_path_as_authority_are_served() {
    let lab = Lab::start();
    let socket = lab.agent.socket().to_owned();
    let path = socket.to_str().expect("utf-8 socket path");
    let cases = [
        // grpc-core >= 1.57 (Python grpcio) for `unix:/abs/path`.
        path.trim_start_matches('/').replace('/', "%2F"),
        // grpc-swift and others: the whole path percent-encoded.
        path.replace('/', "%2F"),
        // grpc-java, Bazel, grpcurl -unix: the raw path.
        path.to_owned(),
        format!("unix:{path}"),
        // grpc-go before 1.31: empty.
        String::new(),
        // A client that sets a valid authority still works.
        "localhost".to_owned(),
    ];
    let mut conn = connect(&socket);
    for (n, authority) in cases.iter().enumerate() {
        let id = 1 + 2 * u32::try_from(n).expect("few cases");
        assert_eq!(
            health_check(&mut conn, id, authority),
            Outcome::Answered(SERVING_REPLY.to_vec()),
            ":authority {authority:?} (Reset(1) = PROTOCOL_ERROR: is the vendor/h2 patch applied?)"
        );
    }
}

/// The patch is exactly the h2 that Cargo.lock resolves: if a dependency starts to need
/// a newer h2, cargo silently stops using `[patch.crates-io]` ("patch was not used"); this
/// says so before users meet PROTOCOL_ERROR again.
#[test]
fn cargo_lock_resolves_h2_to_the_vendored_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let manifest =
        std::fs::read_to_string(root.join("vendor/h2/Cargo.toml")).expect("vendor/h2/Cargo.toml");
    let vendored = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .expect("version in vendor/h2/Cargo.toml")
        .trim_matches('"');
    let h2: Vec<&str> = lock
        .split("[[package]]")
        .filter(|p| p.lines().any(|l| l == "name = \"h2\""))
        .collect();
    assert_eq!(h2.len(), 1, "one h2 in Cargo.lock: {h2:?}");
    assert!(
        h2[0].contains(&format!("version = \"{vendored}\"")) && !h2[0].contains("source = "),
        "Cargo.lock's h2 is not the vendored h2 {vendored} (a path crate has no source): \
         {}\nupdate vendor/h2 to this version and re-apply the patch (vendor/README.md)",
        h2[0]
    );
    assert!(
        !lock.contains("[[patch.unused]]"),
        "Cargo.lock lists an unused patch"
    );
    let server = std::fs::read_to_string(root.join("vendor/h2/src/server.rs")).expect("server.rs");
    assert!(
        server.contains("dpu-offload patch"),
        "vendor/h2/src/server.rs lost its patch"
    );
}
