//! libFuzzer target: any text as `/sys/block/<dev>/stat`. The parser must not panic, and a
//! stat it accepts must turn into samples without panicking (sector to byte scaling
//! included).
#![no_main]

use std::path::Path;

use dpu_probe::block::{block_stat_samples, parse_block_stat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(stat) = parse_block_stat(&text, Path::new("/sys/block/nvme0n1/stat")) {
        let samples = block_stat_samples("nvme0n1", &stat);
        assert!(!samples.is_empty());
    }
});
