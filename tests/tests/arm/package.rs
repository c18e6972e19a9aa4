//! The `.deb` packages made by `cargo deb` (`DPU_TEST_DEB_DIR`): architectures, files (the
//! man pages and shell completions of scripts/gen-shell-assets.sh among them), conffiles, the systemd unit, maintainer scripts, and the packaged config checked by
//! the packaged aarch64 agent itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use dpu_tests::arm;

const UNIT: &str = "lib/systemd/system/dpu-agent.service";
const EXEC_START: &str = "/usr/bin/dpu-agent --config /etc/dpu-agent/config.toml";
/// The agent's man page (scripts/gen-shell-assets.sh; cargo-deb gzips it).
const AGENT_MAN: &str = "usr/share/man/man8/dpu-agent.8.gz";
/// What scripts/gen-shell-assets.sh adds to the dpuctl packages: man pages (gzipped by
/// cargo-deb) and the completions, where each shell looks for them.
const DPUCTL_MAN: &str = "usr/share/man/man1/dpuctl.1.gz";
const DPUCTL_SUBCOMMAND_MAN: &str = "usr/share/man/man1/dpuctl-prove-storage.1.gz";
const DPUCTL_COMPLETIONS: [&str; 3] = [
    "usr/share/bash-completion/completions/dpuctl",
    "usr/share/zsh/vendor-completions/_dpuctl",
    "usr/share/fish/vendor_completions.d/dpuctl.fish",
];

fn deb_dir() -> Result<PathBuf, String> {
    let dir = arm::deb_dir().ok_or_else(|| {
        "DPU_TEST_DEB_DIR is unset: build the packages with `cargo deb` (see docs/deploy.md) \
         and point it at their directory"
            .to_owned()
    })?;
    if !arm::has_command("dpkg-deb") {
        return Err("dpkg-deb missing (apt-get install dpkg)".to_owned());
    }
    Ok(dir)
}

fn dpkg_deb(args: &[&str], deb: &Path, dest: Option<&Path>) -> String {
    let mut cmd = Command::new("dpkg-deb");
    cmd.args(args).arg(deb);
    if let Some(dest) = dest {
        cmd.arg(dest);
    }
    let out = cmd.output().expect("run dpkg-deb");
    assert!(
        out.status.success(),
        "dpkg-deb {args:?} {}: {}",
        deb.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn field(deb: &Path, name: &str) -> String {
    dpkg_deb(&["-f"], deb, None)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("{} has no {name} field", deb.display()))
        .to_owned()
}

/// A gzipped man page's roff, through `gzip -dc`.
fn gunzip(path: &Path) -> String {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("run gzip");
    assert!(
        out.status.success(),
        "gzip -dc {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page's header (after clap_mangen's `.ie`/`.el` preamble) names it and its section.
fn assert_man_page(path: &Path, header: &str) {
    let page = gunzip(path);
    let first = page
        .lines()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "));
    assert!(
        first.is_some_and(|l| l.starts_with(header)),
        "{}: no `{header}` header:\n{page}",
        path.display()
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Debian architecture of this machine's own builds.
fn host_deb_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[test]
fn agent_deb_is_arm64_with_binary_conffile_unit_and_a_config_the_agent_accepts() {
    let dir = match deb_dir() {
        Ok(dir) => dir,
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    let deb = arm::find_deb(&dir, "dpu-agent", "arm64");
    assert_eq!(field(&deb, "Package"), "dpu-agent");
    assert_eq!(field(&deb, "Architecture"), "arm64");
    let depends = field(&deb, "Depends");
    assert!(depends.contains("libc6"), "Depends: {depends}");

    let listing = dpkg_deb(&["-c"], &deb, None);
    for path in [
        "./usr/bin/dpu-agent",
        "./etc/dpu-agent/config.toml",
        &format!("./{UNIT}"),
        "./usr/share/doc/dpu-agent/deploy.md",
        &format!("./{AGENT_MAN}"),
    ] {
        assert!(
            listing.lines().any(|l| l.ends_with(path)),
            "{path} missing from {}:\n{listing}",
            deb.display()
        );
    }

    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("root");
    let control = tmp.path().join("control");
    dpkg_deb(&["-x"], &deb, Some(&root));
    dpkg_deb(&["-e"], &deb, Some(&control));

    assert_man_page(&root.join(AGENT_MAN), ".TH dpu-agent 8 ");

    // The binary is the Arm build and stays within the glibc floor.
    let agent = root.join("usr/bin/dpu-agent");
    arm::assert_aarch64_elf(&agent);
    let floor = Command::new(arm::workspace_root().join("scripts/check-glibc-floor"))
        .args(["--arch", "aarch64"])
        .arg(&agent)
        .output()
        .expect("run check-glibc-floor");
    assert!(
        floor.status.success(),
        "{}{}",
        String::from_utf8_lossy(&floor.stdout),
        String::from_utf8_lossy(&floor.stderr)
    );

    // The config is the documented default and a conffile, so upgrades keep local edits.
    let config = root.join("etc/dpu-agent/config.toml");
    assert_eq!(
        read(&config),
        read(&arm::workspace_root().join("agent-arm/config/config.toml"))
    );
    let conffiles = read(&control.join("conffiles"));
    assert!(
        conffiles
            .lines()
            .any(|l| l.trim() == "/etc/dpu-agent/config.toml"),
        "conffiles: {conffiles}"
    );

    // The unit starts the installed binary with the installed config.
    let unit = read(&root.join(UNIT));
    let exec_start: Vec<&str> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .collect();
    assert_eq!(exec_start, [EXEC_START], "{unit}");
    for path in EXEC_START.split(' ').filter(|w| w.starts_with('/')) {
        assert!(
            root.join(path.trim_start_matches('/')).is_file(),
            "{path} is not in the package"
        );
    }
    for needle in [
        "RuntimeDirectory=dpu-agent",
        "StateDirectory=dpu-agent",
        "Restart=on-failure",
        "PrivateTmp=no",
        "RestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6",
        "WantedBy=multi-user.target",
    ] {
        assert!(
            unit.lines().any(|l| l == needle),
            "{needle} missing:\n{unit}"
        );
    }

    // Maintainer scripts enable and start the unit; they must at least parse.
    let postinst = read(&control.join("postinst"));
    assert!(postinst.contains("dpu-agent.service"), "{postinst}");
    for script in ["postinst", "prerm", "postrm"] {
        let path = control.join(script);
        let out = Command::new("sh")
            .arg("-n")
            .arg(&path)
            .output()
            .expect("sh -n");
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The packaged agent accepts the packaged config.
    if let Some(reason) = arm::cannot_run_aarch64() {
        dpu_tests::skip!("{reason}");
    }
    let config_arg = config.to_str().expect("utf-8 temp path");
    let out = arm::run_aarch64(&agent, &["--config", config_arg, "--check-config"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(r#"listen = ["unix:/run/dpu-agent/dpu-agent.sock"]"#),
        "{stdout}"
    );

    verify_unit(&root);
}

/// `systemd-analyze verify` on the unit inside the extracted package, with the host's
/// stock units (sysinit.target, network-online.target, ...) beside it.
fn verify_unit(root: &Path) {
    let stock = Path::new("/usr/lib/systemd/system");
    if !arm::has_command("systemd-analyze") || !stock.join("sysinit.target").exists() {
        dpu_tests::skip!("systemd-analyze or the stock units missing (apt-get install systemd)");
    }
    let units = root.join("usr/lib/systemd/system");
    std::fs::create_dir_all(&units).expect("mkdir");
    for entry in std::fs::read_dir(stock).expect("read stock units") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name();
        if entry.path().is_file() && !root.join("lib/systemd/system").join(&name).exists() {
            std::fs::copy(entry.path(), units.join(&name)).expect("copy stock unit");
        }
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(format!("--root={}", root.display()))
        .arg("dpu-agent.service")
        .output()
        .expect("run systemd-analyze");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {stderr}");
    // Unknown keys and bad values are only warnings: none may name our unit.
    assert!(
        !stderr.contains("dpu-agent"),
        "systemd-analyze verify: {stderr}"
    );
}

#[test]
fn dpuctl_deb_is_a_host_build() {
    let dir = match deb_dir() {
        Ok(dir) => dir,
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    let arch = host_deb_arch();
    let deb = arm::find_deb(&dir, "dpuctl", arch);
    assert_eq!(field(&deb, "Package"), "dpuctl");
    assert_eq!(field(&deb, "Architecture"), arch);
    let tmp = tempfile::tempdir().expect("tempdir");
    dpkg_deb(&["-x"], &deb, Some(tmp.path()));
    let dpuctl = tmp.path().join("usr/bin/dpuctl");
    if arch == "amd64" {
        assert_eq!(arm::elf_machine(&dpuctl), Ok(arm::EM_X86_64));
    }
    assert!(tmp.path().join("usr/share/doc/dpuctl").is_dir());
    let out = Command::new(&dpuctl)
        .arg("--version")
        .output()
        .expect("run packaged dpuctl");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("dpuctl "));
}

#[test]
fn dpuctl_debs_carry_man_pages_and_completions() {
    let dir = match deb_dir() {
        Ok(dir) => dir,
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    // The host build and the Arm build (.ci/run packages both).
    let mut arches = vec![host_deb_arch(), "arm64"];
    arches.dedup();
    for arch in arches {
        let deb = arm::find_deb(&dir, "dpuctl", arch);
        let listing = dpkg_deb(&["-c"], &deb, None);
        for path in [DPUCTL_MAN, DPUCTL_SUBCOMMAND_MAN]
            .into_iter()
            .chain(DPUCTL_COMPLETIONS)
        {
            assert!(
                listing.lines().any(|l| l.ends_with(&format!("./{path}"))),
                "{path} missing from {}:\n{listing}",
                deb.display()
            );
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        dpkg_deb(&["-x"], &deb, Some(tmp.path()));
        assert_man_page(&tmp.path().join(DPUCTL_MAN), ".TH dpuctl 1 ");
        assert_man_page(
            &tmp.path().join(DPUCTL_SUBCOMMAND_MAN),
            ".TH dpuctl-prove-storage 1 ",
        );
        // No page for the hidden `man` command or clap's `help`.
        let man1 = tmp.path().join("usr/share/man/man1");
        for hidden in ["dpuctl-man.1.gz", "dpuctl-help.1.gz"] {
            assert!(!man1.join(hidden).exists(), "{hidden} is packaged");
        }
        for path in DPUCTL_COMPLETIONS {
            let script = read(&tmp.path().join(path));
            assert!(
                script.contains("dpuctl") && script.contains("prove"),
                "{path} of {} does not complete dpuctl's subcommands:\n{script}",
                deb.display()
            );
        }
    }
}
