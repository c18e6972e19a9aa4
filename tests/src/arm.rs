//! The Arm check's plumbing: finding (or cross-building) the aarch64 `dpu-agent`, running
//! aarch64 binaries through `scripts/aarch64-runner` (qemu-aarch64 on an x86 host, directly
//! on an Arm one), reading ELF headers so no test can pass on an x86 binary by accident,
//! and finding the built `.deb` packages.
//!
//! Environment: `DPU_TEST_AARCH64_BIN_DIR` names a directory holding the cross-built
//! `dpu-agent` (CI sets it after its cross build); without it the binary is built here with
//! `cargo build --profile dist --target aarch64-unknown-linux-gnu -p dpu-agent`, the profile
//! the arm64 packages ship.
//! `DPU_TEST_DEB_DIR` names the directory `cargo deb` wrote the packages to.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The Rust target triple of the BlueField Arm cores.
pub const AARCH64_TARGET: &str = "aarch64-unknown-linux-gnu";
/// `e_machine` of an AArch64 ELF file.
pub const EM_AARCH64: u16 = 183;
/// `e_machine` of an x86-64 ELF file.
pub const EM_X86_64: u16 = 62;

/// The workspace root (the parent of the `tests` crate).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_owned()
}

/// `scripts/aarch64-runner`: runs an aarch64 binary natively or under qemu-aarch64.
pub fn runner() -> PathBuf {
    workspace_root().join("scripts/aarch64-runner")
}

/// The wrapper for [`crate::harness::AgentOptions::wrapper`] that runs an aarch64 agent.
pub fn runner_wrapper() -> Vec<OsString> {
    vec![runner().into_os_string()]
}

/// Whether `program` is an executable file on `PATH` (or a path that exists).
pub fn has_command(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Why aarch64 binaries cannot run on this machine, or `None` when they can.
pub fn cannot_run_aarch64() -> Option<String> {
    if std::env::consts::ARCH == "aarch64" {
        return None;
    }
    let qemu = std::env::var("DPU_AARCH64_QEMU").unwrap_or_else(|_| "qemu-aarch64".to_owned());
    if !has_command(&qemu) {
        return Some(format!(
            "{qemu} not found: aarch64 binaries need qemu user-mode emulation on this {} host \
             (apt-get install qemu-user)",
            std::env::consts::ARCH
        ));
    }
    let prefix = std::env::var_os("QEMU_LD_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/aarch64-linux-gnu"));
    if !prefix.join("lib/ld-linux-aarch64.so.1").exists() {
        return Some(format!(
            "no arm64 libc under {} for qemu-aarch64 -L (apt-get install libc6-dev-arm64-cross)",
            prefix.display()
        ));
    }
    None
}

/// The `e_machine` field of an ELF file, after checking it is a 64-bit little-endian ELF.
pub fn elf_machine(path: &Path) -> Result<u16, String> {
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map_err(|e| format!("cannot read the ELF header of {}: {e}", path.display()))?;
    if header[..4] != *b"\x7fELF" {
        return Err(format!("{} is not an ELF file", path.display()));
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(format!(
            "{} is not a 64-bit little-endian ELF (class {}, data {})",
            path.display(),
            header[4],
            header[5]
        ));
    }
    Ok(u16::from_le_bytes([header[18], header[19]]))
}

/// Panics unless `path` is an AArch64 ELF executable.
pub fn assert_aarch64_elf(path: &Path) {
    let machine = elf_machine(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        machine,
        EM_AARCH64,
        "{} has ELF machine {machine}, not AArch64 ({EM_AARCH64}): the Arm check would not \
         prove anything",
        path.display()
    );
}

/// Runs an aarch64 binary through the runner and returns its output.
pub fn run_aarch64(binary: &Path, args: &[&str]) -> Output {
    Command::new(runner())
        .arg(binary)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {} {binary:?}: {e}", runner().display()))
}

/// The directory holding the aarch64 `dpu-agent`, or why there is none (a reason to skip).
///
/// `DPU_TEST_AARCH64_BIN_DIR` wins; a directory named there without a `dpu-agent` in it
/// is a broken set-up and panics. Otherwise the `dist` build is made here once per test
/// process (the same build `docs/deploy.md` packages), which needs the cross linker.
pub fn aarch64_bin_dir() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("DPU_TEST_AARCH64_BIN_DIR") {
            let dir = PathBuf::from(dir);
            assert!(
                dir.join("dpu-agent").is_file(),
                "DPU_TEST_AARCH64_BIN_DIR={} holds no dpu-agent",
                dir.display()
            );
            return Ok(dir);
        }
        if !has_command("aarch64-linux-gnu-gcc") {
            return Err(
                "DPU_TEST_AARCH64_BIN_DIR is unset and the cross linker aarch64-linux-gnu-gcc \
                 is missing (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
                    .to_owned(),
            );
        }
        cross_build_agent().map(|exe| exe.parent().unwrap_or(Path::new("/")).to_owned())
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(Clone::clone)
}

/// `cargo build --profile dist --target aarch64-unknown-linux-gnu -p dpu-agent`, returning the
/// executable cargo reports (so any target directory layout works).
fn cross_build_agent() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut child = Command::new(cargo)
        .args([
            "build",
            "--profile",
            "dist",
            "--target",
            AARCH64_TARGET,
            "-p",
            "dpu-agent",
            "--message-format",
            "json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo for the aarch64 build: {e}"))?;
    let mut executable = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if message["reason"] == "compiler-artifact" && message["target"]["name"] == "dpu-agent"
            {
                if let Some(path) = message["executable"].as_str() {
                    executable = Some(PathBuf::from(path));
                }
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    assert!(
        status.success(),
        "cargo build --profile dist --target {AARCH64_TARGET} -p dpu-agent failed (see above)"
    );
    executable.ok_or_else(|| "cargo reported no dpu-agent executable".to_owned())
}

/// The directory holding the built `.deb` packages (`DPU_TEST_DEB_DIR`), if set.
pub fn deb_dir() -> Option<PathBuf> {
    std::env::var_os("DPU_TEST_DEB_DIR").map(PathBuf::from)
}

/// The one `{package}_*_{arch}.deb` in `dir`.
pub fn find_deb(dir: &Path, package: &str, arch: &str) -> PathBuf {
    let prefix = format!("{package}_");
    let suffix = format!("_{arch}.deb");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read DPU_TEST_DEB_DIR {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(&suffix))
        })
        .collect();
    found.sort();
    assert_eq!(
        found.len(),
        1,
        "expected exactly one {prefix}*{suffix} in {}, found {found:?}",
        dir.display()
    );
    found.remove(0)
}
