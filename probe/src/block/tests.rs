use super::*;
use crate::snapshot::Kind;
use std::fs;

const STAT_17: &str = "  123456     1024  9876543     4567   654321      512  3456789     2345        2     6789    12345        7        0      896       12      321       45\n";
const STAT_15: &str = "     100        1      800       10      200        2     1600       20        0       30       40        3        0       24        1\n";
const STAT_11: &str = "     100        1      800       10      200        2     1600       20        1       30       40\n";

fn path() -> &'static Path {
    Path::new("/sys/block/nvme0n1/stat")
}

fn value(samples: &[Sample], counter: &str) -> u64 {
    samples
        .iter()
        .find(|s| s.key.counter == counter)
        .unwrap_or_else(|| panic!("{counter} missing"))
        .value
}

#[test]
fn parses_17_fields_of_a_current_kernel() {
    let stat = parse_block_stat(STAT_17, path()).expect("parse");
    assert_eq!(stat.read_ios, 123_456);
    assert_eq!(stat.read_sectors, 9_876_543);
    assert_eq!(stat.write_ticks, 2345);
    assert_eq!(stat.in_flight, 2);
    assert_eq!(stat.time_in_queue, 12_345);
    assert_eq!(
        stat.discard,
        Some(DiscardStat {
            ios: 7,
            merges: 0,
            sectors: 896,
            ticks: 12
        })
    );
    assert_eq!(
        stat.flush,
        Some(FlushStat {
            ios: 321,
            ticks: 45
        })
    );

    let samples = block_stat_samples("nvme0n1", &stat);
    assert_eq!(samples.len(), 17);
    let read_bytes = samples
        .iter()
        .find(|s| s.key.counter == "read_bytes")
        .expect("read_bytes");
    assert_eq!(read_bytes.key.object, "blockDevices/nvme0n1");
    assert_eq!(read_bytes.key.source, Source::Block);
    assert_eq!(read_bytes.value, 9_876_543 * 512);
    assert_eq!(
        (read_bytes.unit, read_bytes.scale, read_bytes.width_bits),
        (Unit::Bytes, 512, 64)
    );
    assert_eq!(value(&samples, "write_bytes"), 3_456_789 * 512);
    assert_eq!(value(&samples, "discard_bytes"), 896 * 512);
    assert_eq!(value(&samples, "flush_ios"), 321);
    let in_flight = samples
        .iter()
        .find(|s| s.key.counter == "in_flight")
        .expect("in_flight");
    assert_eq!(in_flight.kind, Kind::Gauge);
    let ticks = samples
        .iter()
        .find(|s| s.key.counter == "io_ticks")
        .expect("io_ticks");
    assert_eq!((ticks.unit, ticks.width_bits), (Unit::Milliseconds, 32));
}

#[test]
fn parses_15_and_11_fields_of_older_kernels() {
    let stat = parse_block_stat(STAT_15, path()).expect("15");
    assert_eq!(stat.discard.map(|d| d.sectors), Some(24));
    assert_eq!(stat.flush, None);
    assert_eq!(block_stat_samples("sda", &stat).len(), 15);

    let stat = parse_block_stat(STAT_11, path()).expect("11");
    assert_eq!((stat.discard, stat.flush), (None, None));
    assert_eq!(stat.in_flight, 1);
    let samples = block_stat_samples("sda", &stat);
    assert_eq!(samples.len(), 11);
    assert!(samples
        .iter()
        .all(|s| !s.key.counter.starts_with("discard")));
}

#[test]
fn tolerates_fields_a_newer_kernel_appends() {
    let text = format!("{} 1 2 3", STAT_17.trim_end());
    let stat = parse_block_stat(&text, path()).expect("20 fields");
    assert_eq!(stat.flush.map(|f| f.ticks), Some(45));
}

#[test]
fn malformed_content_is_a_format_error_naming_the_file() {
    for (text, needle) in [
        ("", "found 0"),
        ("1 2 3", "found 3"),
        ("1 2 3 4 5 6 7 8 9 10 11 12", "found 12"),
        ("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", "found 16"),
        ("1 2 3 4 5 6 7 8 9 10 x", "field 11"),
        ("1 2 3 4 5 6 7 8 9 10 -1", "field 11"),
    ] {
        let err = parse_block_stat(text, path()).expect_err(text);
        assert!(matches!(err, ProbeError::Format { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains("/sys/block/nvme0n1/stat"), "{message}");
        assert!(message.contains(needle), "{text:?}: {message}");
    }
}

#[test]
fn reads_devices_from_a_tree_and_filters_nvme_namespaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    for name in ["nvme0n1", "nvme0c0n1", "nvme1n12", "sda", "loop0"] {
        let dev = root.sys("block").join(name);
        fs::create_dir_all(&dev).expect("mkdir");
        fs::write(dev.join("stat"), STAT_17).expect("write");
    }
    assert_eq!(
        list_block_devices(&root).expect("list"),
        ["loop0", "nvme0c0n1", "nvme0n1", "nvme1n12", "sda"]
    );
    assert_eq!(
        list_nvme_namespaces(&root).expect("list"),
        ["nvme0n1", "nvme1n12"]
    );
    let samples = read_block_samples(&root, "nvme0n1").expect("read");
    assert_eq!(value(&samples, "read_ios"), 123_456);

    let err = read_block_samples(&root, "nvme7n1").expect_err("absent");
    assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    let err = read_block_samples(&root, "../block").expect_err("not a name");
    assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    fs::create_dir_all(root.sys("block/nvme2n1")).expect("mkdir");
    let err = read_block_samples(&root, "nvme2n1").expect_err("no stat");
    assert!(err.to_string().contains("nvme2n1/stat"), "{err}");

    let empty = tempfile::tempdir().expect("tempdir");
    assert!(list_nvme_namespaces(&SysRoot::new(empty.path()))
        .expect("no /sys/block")
        .is_empty());
}

#[test]
fn nvme_namespace_names() {
    for (name, expected) in [
        ("nvme0n1", true),
        ("nvme10n255", true),
        ("nvme0n1p1", false),
        ("nvme0c1n1", false),
        ("nvme0", false),
        ("nvme0n", false),
        ("nvmen1", false),
        ("sda", false),
        ("nvme-fabrics", false),
    ] {
        assert_eq!(is_nvme_namespace(name), expected, "{name}");
    }
}

#[test]
fn multipath_path_disks_are_told_from_heads() {
    assert!(is_multipath_path_disk("nvme0c0n1"));
    assert!(is_multipath_path_disk("nvme12c3n40"));
    for head in [
        "nvme0n1",
        "nvme0n1p1",
        "nullb0",
        "loop0",
        "nvmec0n1",
        "nvme0c0",
        "sda",
    ] {
        assert!(!is_multipath_path_disk(head), "{head}");
    }
}
