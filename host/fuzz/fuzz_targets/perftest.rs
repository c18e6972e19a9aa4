//! libFuzzer target: any text as perftest (`ib_*_bw` / `ib_*_lat`) stdout. The parser
//! must not panic, and a table it accepts must have rows with finite values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use dpu_host::roce::perftest::{parse, PerftestTable};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(report) = parse(&text) {
        match report.table {
            PerftestTable::Bandwidth { unit, rows } => {
                assert!(!rows.is_empty());
                assert!(rows.iter().all(|r| r.average.is_finite()));
                let _ = rows[0].average * unit.bytes_per_sec();
            }
            PerftestTable::Latency { rows } => assert!(!rows.is_empty()),
        }
    }
});
