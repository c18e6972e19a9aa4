//! libFuzzer target: any text as nccl-tests stdout and as an NCCL_DEBUG=INFO log. Neither
//! the table parser nor the transport scan may panic; the scan keeps only NCCL INFO lines
//! as evidence.
#![no_main]

use libfuzzer_sys::fuzz_target;
use dpu_host::roce::nccl::parse_results;
use dpu_host::roce::nccl::transport::{scan_transport, NcclTransport};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(results) = parse_results(&text) {
        assert!(!results.rows.is_empty());
    }
    let verdict = scan_transport(&text);
    assert!(verdict.evidence.iter().all(|l| l.contains("NCCL INFO")));
    if verdict.transport == NcclTransport::Unknown {
        assert!(verdict.ib_devices.is_empty());
    }
});
