//! libFuzzer target: any text as qperf client stdout. The parser must not panic, and what
//! it accepts has at least one test and only named metrics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(tests) = roce::qperf::parse(&text) {
        assert!(!tests.is_empty());
        for test in &tests {
            assert!(test.metrics.iter().all(|m| !m.name.is_empty()));
            let _ = (test.bw_bytes_per_sec(), test.latency_secs());
        }
    }
});
