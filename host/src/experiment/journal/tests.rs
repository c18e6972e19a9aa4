//! The journal: a round trip through the file, refusal while its writer lives, and the
//! recovery of a dead experiment's knob (a sysctl file in a temporary root).

use super::*;

fn entry(pid: u32, process_start: Option<u64>) -> JournalEntry {
    JournalEntry {
        knob: JournalKnob::Sysctl {
            name: "net.core.rmem_max".to_owned(),
        },
        original: "212992".to_owned(),
        plan: PathBuf::from("/plans/rmem.toml"),
        pid,
        process_start,
        started_unix: 1_700_000_000,
    }
}

/// A pid that is not running: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("true runs");
    let pid = child.id();
    child.wait().expect("true exits");
    pid
}

#[test]
fn an_entry_survives_the_round_trip_and_a_second_one_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("deep/er/experiment.json");
    let written = entry(42, Some(7));
    write_new(&path, &written).expect("written");
    assert_eq!(read(&path).expect("read"), Some(written.clone()));
    let again = write_new(&path, &written).expect_err("a second journal");
    assert!(matches!(again, JournalError::Exists { .. }), "{again}");
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
        .expect("listed")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("experiment.json")]);
    remove(&path).expect("removed");
    assert_eq!(read(&path).expect("read"), None);
    remove(&path).expect("removing nothing is fine");
}

#[test]
fn a_journal_that_is_not_json_is_named_corrupt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("experiment.json");
    std::fs::write(&path, "{half").expect("written");
    assert!(matches!(read(&path), Err(JournalError::Corrupt { .. })));
}

#[test]
fn this_process_is_alive_and_a_reaped_child_or_another_start_time_is_not() {
    let me = JournalEntry::for_this_process(
        JournalKnob::Mtu {
            interface: "eth0".to_owned(),
        },
        "1500".to_owned(),
        Path::new("p.toml"),
    );
    assert!(me.process_start.is_some());
    assert!(me.writer_alive());
    let recycled = JournalEntry {
        process_start: me.process_start.map(|s| s + 1),
        ..me.clone()
    };
    assert!(!recycled.writer_alive(), "same pid, another process");
    assert!(!entry(dead_pid(), None).writer_alive());
}

#[test]
fn recovery_refuses_while_the_writer_lives_and_touches_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sysctl = dir.path().join("proc/sys/net/core/rmem_max");
    std::fs::create_dir_all(sysctl.parent().expect("parent")).expect("dirs");
    std::fs::write(&sysctl, "4194304\n").expect("written");
    let path = dir.path().join("experiment.json");
    let me = std::process::id();
    write_new(&path, &entry(me, process_start(me))).expect("written");
    let err = recover(&path, dir.path()).expect_err("a live writer");
    assert_eq!(
        err.to_string(),
        format!("another experiment is running: pid {me}, plan /plans/rmem.toml")
    );
    assert!(path.exists());
    assert_eq!(std::fs::read_to_string(&sysctl).expect("read"), "4194304\n");
}

#[test]
fn recovery_of_a_dead_writer_restores_the_original_and_removes_the_journal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sysctl = dir.path().join("proc/sys/net/core/rmem_max");
    std::fs::create_dir_all(sysctl.parent().expect("parent")).expect("dirs");
    std::fs::write(&sysctl, "4194304\n").expect("written");
    let path = dir.path().join("experiment.json");
    let pid = dead_pid();
    write_new(&path, &entry(pid, None)).expect("written");
    let recovery = recover(&path, dir.path()).expect("recovered");
    assert_eq!(
        recovery,
        Recovery::Restored {
            knob: "sysctl net.core.rmem_max".to_owned(),
            original: "212992".to_owned(),
            found: "4194304".to_owned(),
            pid,
            plan: PathBuf::from("/plans/rmem.toml"),
        }
    );
    assert_eq!(std::fs::read_to_string(&sysctl).expect("read"), "212992\n");
    assert!(!path.exists());
    assert_eq!(
        recover(&path, dir.path()).expect("nothing"),
        Recovery::Nothing
    );
}

#[test]
fn a_failed_restore_keeps_the_journal_and_a_forged_knob_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("experiment.json");
    // No sysctl file under the root: the restore cannot write.
    write_new(&path, &entry(dead_pid(), None)).expect("written");
    let err = recover(&path, dir.path()).expect_err("nothing to write to");
    assert!(matches!(err, JournalError::Restore { .. }), "{err}");
    assert!(path.exists());
    remove(&path).expect("removed");
    let forged = JournalEntry {
        knob: JournalKnob::Sysctl {
            name: "net.ipv4.ip_forward".to_owned(),
        },
        ..entry(dead_pid(), None)
    };
    write_new(&path, &forged).expect("written");
    let err = recover(&path, dir.path()).expect_err("not on the allow-list");
    assert!(err.to_string().contains("not on the allow-list"), "{err}");
    let forged = JournalEntry {
        knob: JournalKnob::Mtu {
            interface: "../../etc".to_owned(),
        },
        ..entry(dead_pid(), None)
    };
    remove(&path).expect("removed");
    write_new(&path, &forged).expect("written");
    assert!(matches!(
        recover(&path, dir.path()),
        Err(JournalError::InvalidKnob { .. })
    ));
}

#[test]
fn ring_and_pfc_knobs_are_journaled_and_their_names_checked_again_when_read() {
    use crate::experiment::plan::{Knob, PfcPriorities, RingDirection, Values};
    let ring = Knob::Ring {
        interface: "ens1f0np0".to_owned(),
        ring: RingDirection::Tx,
        values: Values { a: 1024, b: 8192 },
    };
    let journaled = JournalKnob::of(&ring).expect("a ring is journaled");
    assert_eq!(
        serde_json::to_value(&journaled).expect("json"),
        serde_json::json!({"kind": "ring", "interface": "ens1f0np0", "ring": "tx"})
    );
    let control = journaled.control(Path::new("/")).expect("valid");
    assert_eq!(control.describe(), "tx ring of ens1f0np0");
    let pfc = Knob::Pfc {
        interface: "p0".to_owned(),
        values: Values {
            a: PfcPriorities(0),
            b: PfcPriorities(8),
        },
    };
    let journaled = JournalKnob::of(&pfc).expect("pfc is journaled");
    let control = journaled.control(Path::new("/")).expect("valid");
    assert_eq!(control.describe(), "pfc of p0");
    // A journal edited by hand: refused by name, never handed to the kernel.
    for bad in [
        JournalKnob::Ring {
            interface: "eth0".to_owned(),
            ring: "both".to_owned(),
        },
        JournalKnob::Ring {
            interface: "../eth0".to_owned(),
            ring: "rx".to_owned(),
        },
        JournalKnob::Pfc {
            interface: "p0 p1".to_owned(),
        },
    ] {
        let err = bad.control(Path::new("/")).expect_err("refused");
        assert!(matches!(err, JournalError::InvalidKnob { .. }), "{err}");
    }
}
