//! `dpuctl storage read`: O_DIRECT reads through io_uring with fio-shaped JSON. No agent is
//! needed; the file is a temp file on a filesystem with direct I/O.

use std::path::{Path, PathBuf};

use dpu_tests::harness::dpuctl;
use dpu_tests::record_skip;

/// A temp dir on a disk filesystem (tmpfs may refuse O_DIRECT).
fn disk_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("dpuctl-read-")
        .tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .expect("temp dir for the read test")
}

/// Writes `len` bytes of a known pattern and returns the path and the contents.
fn pattern_file(dir: &Path, len: usize) -> (PathBuf, Vec<u8>) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let path = dir.join("data.bin");
    std::fs::write(&path, &data).expect("write the test file");
    (path, data)
}

fn read(path: &Path, extra: &[&str]) -> std::process::Output {
    let path = path.to_str().expect("utf-8 temp path");
    let mut args = vec!["-o", "json", "storage", "read", path];
    args.extend_from_slice(extra);
    dpuctl(&args)
}

#[test]
fn reads_with_o_direct_wrapping_and_reports_fio_json_without_changing_the_file() {
    let dir = disk_tempdir();
    // 768 KiB, so a 1 MiB read wraps around the end.
    let (path, data) = pattern_file(dir.path(), 768 << 10);
    let out = read(&path, &["--bs", "4k", "--iodepth", "8", "--size", "1m"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && stderr.contains("O_DIRECT") {
        record_skip(module_path!(), &format!("no direct I/O here: {stderr}"));
        return;
    }
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fio-shaped JSON");
    let job = &json["jobs"][0];
    assert_eq!(job["jobname"], "read");
    let read = &job["read"];
    assert_eq!(read["io_bytes"], 1 << 20);
    assert_eq!(read["total_ios"], 256);
    assert!(read["bw_bytes"].as_u64().expect("bw_bytes") > 0);
    assert_eq!(
        read["bw"].as_u64(),
        read["bw_bytes"].as_u64().map(|b| b / 1024)
    );
    assert!(read["iops"].as_f64().expect("iops") > 0.0);
    assert!(read["runtime"].is_u64());
    let clat = &read["clat_ns"];
    let (min, max) = (clat["min"].as_u64(), clat["max"].as_u64());
    let (min, max) = (min.expect("min"), max.expect("max"));
    assert!(min > 0 && min <= max, "min {min} max {max}");
    assert!(clat["mean"].as_f64().is_some() && clat["stddev"].as_f64().is_some());
    let keys = [
        "1.000000",
        "5.000000",
        "10.000000",
        "20.000000",
        "30.000000",
        "40.000000",
        "50.000000",
        "60.000000",
        "70.000000",
        "80.000000",
        "90.000000",
        "95.000000",
        "99.000000",
        "99.500000",
        "99.900000",
        "99.950000",
        "99.990000",
    ];
    let mut previous = min;
    for key in keys {
        let value = clat["percentile"][key]
            .as_u64()
            .unwrap_or_else(|| panic!("percentile {key} in {clat}"));
        assert!(
            value >= previous && value <= max,
            "{key}: {value} after {previous}"
        );
        previous = value;
    }
    assert_eq!(
        clat["percentile"].as_object().map(serde_json::Map::len),
        Some(keys.len())
    );
    let after = std::fs::read(&path).expect("read the file back");
    assert!(after == data, "the file changed");
}

#[test]
fn bad_block_size_and_size_smaller_than_bs_are_usage_errors_naming_the_flag() {
    let dir = disk_tempdir();
    let (path, _) = pattern_file(dir.path(), 64 << 10);
    for (args, flag) in [
        (&["--bs", "3k"][..], "--bs"),
        (&["--bs", "256"][..], "--bs"),
        (&["--iodepth", "0"][..], "--iodepth"),
        (&["--iodepth", "1025"][..], "--iodepth"),
        (&["--bs", "4k", "--size", "1k"][..], "--size"),
        (&["--size", "12q"][..], "--size"),
        (&["--runtime", "0"][..], "--runtime"),
    ] {
        let out = read(&path, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(flag),
            "{args:?} should name {flag}: {stderr}"
        );
    }
    let (small, _) = pattern_file(dir.path(), 2048);
    let out = read(&small, &["--bs", "4k"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("smaller than --bs") && stderr.contains("data.bin"),
        "{stderr}"
    );
    let out = read(&dir.path().join("missing"), &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn tmpfs_either_reads_or_fails_clearly_about_o_direct() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        record_skip(module_path!(), "no /dev/shm");
        return;
    }
    let dir = tempfile::tempdir_in(shm).expect("temp dir in /dev/shm");
    let (path, _) = pattern_file(dir.path(), 64 << 10);
    let out = read(&path, &["--bs", "4k", "--size", "64k"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        // Linux 6.6 and later give tmpfs O_DIRECT.
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(json["jobs"][0]["read"]["io_bytes"], 64 << 10);
        record_skip(module_path!(), "this kernel's tmpfs supports O_DIRECT");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("O_DIRECT") && stderr.contains("does not support direct I/O"),
        "{stderr}"
    );
}
