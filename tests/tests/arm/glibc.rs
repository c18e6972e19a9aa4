//! `scripts/check-glibc-floor` on the cross-built agent, and its negative path: a floor
//! below what the binary needs, a 2.36-only libc call, and the wrong ELF machine must all
//! fail loudly, naming the symbol.

use std::path::Path;
use std::process::{Command, Output};

use dpu_tests::arm;

fn check_glibc_floor(args: &[&str], binary: &Path) -> Output {
    Command::new(arm::workspace_root().join("scripts/check-glibc-floor"))
        .args(args)
        .arg(binary)
        .output()
        .expect("run scripts/check-glibc-floor")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn cross_built_agent_loads_on_ubuntu_22_04_glibc_and_a_lower_floor_fails_naming_symbols() {
    if !arm::has_command("readelf") {
        dpu_tests::skip!("readelf missing (apt-get install binutils)");
    }
    let agent = match arm::aarch64_bin_dir() {
        Ok(dir) => dir.join("dpu-agent"),
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    arm::assert_aarch64_elf(&agent);

    let out = check_glibc_floor(&["--max", "2.35", "--arch", "aarch64"], &agent);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("machine AArch64"), "{stdout}");
    assert!(stdout.contains("GLIBC_2.17"), "{stdout}");
    assert!(
        stdout.contains("highest GLIBC version referenced"),
        "{stdout}"
    );

    // Every aarch64 glibc symbol is at least GLIBC_2.17, so a 2.16 floor must fail and
    // name symbols.
    let out = check_glibc_floor(&["--max", "2.16"], &agent);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let offending: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.starts_with("FAIL: ")
                && l.contains("@GLIBC_2.")
                && l.ends_with("is newer than the floor GLIBC_2.16")
        })
        .collect();
    assert!(!offending.is_empty(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FAILED"),
        "{}",
        text(&out)
    );

    // The wrong machine fails too.
    let out = check_glibc_floor(&["--arch", "x86_64"], &agent);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ELF machine is 'AArch64'"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_glibc_2_36_symbol_fails_the_2_35_floor() {
    if !arm::has_command("readelf") {
        dpu_tests::skip!("readelf missing (apt-get install binutils)");
    }
    if !arm::has_command("aarch64-linux-gnu-gcc") {
        dpu_tests::skip!(
            "aarch64-linux-gnu-gcc missing (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
        );
    }
    // arc4random is new in glibc 2.36 (Debian 12's cross libc); Ubuntu 22.04 lacks it.
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("new_symbol.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include <stdlib.h>\n\
         int main(void) { printf(\"%u\\n\", arc4random()); return 0; }\n",
    )
    .expect("write C source");
    let binary = dir.path().join("new_symbol");
    let out = Command::new("aarch64-linux-gnu-gcc")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("run aarch64-linux-gnu-gcc");
    if !out.status.success() {
        // An arm64 libc older than 2.36 has no arc4random: nothing to catch here.
        dpu_tests::skip!(
            "the arm64 cross libc has no arc4random (older than 2.36): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = check_glibc_floor(&["--arch", "aarch64"], &binary);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.starts_with("FAIL: ")
            && l.contains("arc4random@GLIBC_2.36 is newer than the floor GLIBC_2.35")),
        "{}",
        text(&out)
    );
    // The same binary passes a 2.36 floor: the failure was the version, not the tool.
    let out = check_glibc_floor(&["--max", "2.36"], &binary);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
