//! The read's refusals are typed: each says its path and keeps the operating system's
//! error, and parameter problems name the field, never a flag.

use std::error::Error as _;
use std::io;

use super::*;
use crate::observe::Ignore;
use crate::param::Field;

fn params(path: &Path, bs: u64, size: Option<u64>) -> ReadParams {
    ReadParams {
        path: path.to_owned(),
        bs,
        iodepth: 1,
        size,
        runtime: None,
    }
}

#[test]
fn a_missing_path_keeps_the_os_error_and_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let err = run(&params(&missing, 4096, None), &mut Ignore).expect_err("no file");
    let ReadError::Stat { path, source } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(path, &missing);
    assert_eq!(source.kind(), io::ErrorKind::NotFound);
    assert!(err.source().is_some(), "the io error is the source");
}

#[test]
fn a_directory_is_neither_file_nor_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = run(&params(dir.path(), 4096, None), &mut Ignore).expect_err("a directory");
    assert!(matches!(err, ReadError::NotFileOrDevice { .. }), "{err:?}");
}

#[test]
fn a_size_under_one_block_is_about_the_size_and_says_no_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Refused before the path is opened: it does not even exist.
    let err = run(
        &params(&dir.path().join("x"), 4096, Some(1024)),
        &mut Ignore,
    )
    .expect_err("size < bs");
    let ReadError::Param(param) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(param.about(), Field::Size);
    assert_eq!(
        err.to_string(),
        "size 1024 bytes is smaller than block size 4096 bytes"
    );
    // Control: a size of one block passes this check and gets as far as the path.
    let err = run(
        &params(&dir.path().join("x"), 4096, Some(4096)),
        &mut Ignore,
    )
    .expect_err("no file");
    assert!(matches!(err, ReadError::Stat { .. }), "{err:?}");
}

#[test]
fn a_file_smaller_than_a_block_is_about_the_block_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small.bin");
    std::fs::write(&small, [0u8; 2048]).expect("write");
    let err = match run(&params(&small, 4096, None), &mut Ignore) {
        // Where the filesystem refuses O_DIRECT the size is never reached.
        Err(ReadError::NoDirectIo { path, .. }) => {
            eprintln!("SKIP: {} refuses O_DIRECT", path.display());
            return;
        }
        other => other.expect_err("2048 < 4096"),
    };
    let ReadError::Param(param) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(param.about(), Field::BlockSize);
    let text = err.to_string();
    assert!(
        text.contains("small.bin is 2048 bytes, smaller than block size 4096"),
        "{text}"
    );
    assert!(!text.contains("--"), "{text}");
}

#[test]
fn a_read_tells_started_advanced_to_its_total_then_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 4 * 4096]).expect("write");
    let mut events = Vec::new();
    let result = run(
        &params(&file, 4096, Some(3 * 4096)),
        &mut |event: &ReadEvent| events.push(*event),
    );
    match result {
        Err(ReadError::NoDirectIo { path, .. }) => {
            eprintln!("SKIP: {} refuses O_DIRECT", path.display());
            // Refused at the open: nothing was started, so nothing was told.
            assert!(events.is_empty(), "{events:?}");
            return;
        }
        other => {
            let results = other.expect("a readable file");
            assert_eq!(results.io_bytes, 3 * 4096);
        }
    }
    assert_eq!(
        events.first(),
        Some(&ReadEvent::Started {
            total: Some(3 * 4096)
        })
    );
    assert_eq!(events.last(), Some(&ReadEvent::Finished));
    let done: Vec<u64> = events[1..events.len() - 1]
        .iter()
        .map(|event| match event {
            ReadEvent::Advanced { bytes_done } => *bytes_done,
            other => panic!("only Advanced between Started and Finished: {other:?}"),
        })
        .collect();
    assert!(!done.is_empty(), "{events:?}");
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert_eq!(done.last(), Some(&(3 * 4096)));
}

#[test]
fn a_read_refused_before_it_starts_tells_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut events = Vec::new();
    let err = run(
        &params(&dir.path().join("missing"), 4096, None),
        &mut |event: &ReadEvent| events.push(*event),
    )
    .expect_err("no file");
    assert!(matches!(err, ReadError::Stat { .. }), "{err:?}");
    assert!(events.is_empty(), "{events:?}");
}
