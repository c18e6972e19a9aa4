//! What the packages carry beside the binaries, as the binaries print it: `dpuctl
//! completions SHELL`, the hidden `dpuctl man` and `dpu-agent --print-man` (the inputs of
//! scripts/gen-shell-assets.sh). No agent is needed.

use std::process::{Command, Stdio};

use dpu_tests::harness::{bin_dir, dpuctl};

/// The first line after clap_mangen's preamble (`.ie`/`.el`): the page's `.TH` header.
fn header(page: &str) -> &str {
    page.lines()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
        .unwrap_or("")
}

#[test]
fn completions_list_the_subcommands_and_an_unknown_shell_is_a_usage_error() {
    for (shell, marker) in [
        ("bash", "complete -F _dpuctl"),
        ("zsh", "#compdef dpuctl"),
        ("fish", "complete -c dpuctl"),
    ] {
        let out = dpuctl(&["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{shell}: {script}");
        assert!(script.contains(marker), "{shell}: no {marker:?}:\n{script}");
        for word in ["prove", "storage", "check"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
    // Its help shows only what applies to it; other subcommands keep the global flags.
    let out = dpuctl(&["completions", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("bash"), "{text}");
    for flag in ["--agent", "--output", "--sys-root", "--timeout", "--cert"] {
        assert!(
            !text.contains(flag),
            "completions --help shows {flag}:\n{text}"
        );
    }
    let out = dpuctl(&["check", "--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--agent"));
    let out = dpuctl(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values"));
}

#[test]
fn man_pages_of_dpuctl_its_subcommands_and_the_agent_are_roff() {
    let out = dpuctl(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(header(&page).starts_with(".TH dpuctl 1 "), "{page}");
    assert!(page.contains("dpuctl\\-prove(1)"), "{page}");

    let out = dpuctl(&["man", "prove", "storage"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        header(&page).starts_with(".TH dpuctl-prove-storage 1 "),
        "{page}"
    );

    let out = dpuctl(&["man", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));

    // Hidden from --help, like `man` from dpuctl's.
    let out = dpuctl(&["--help"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\n  man "));

    // Before any config is read: a missing config file does not stop it.
    let out = Command::new(bin_dir().join("dpu-agent"))
        .arg("--print-man")
        .env("DPU_AGENT_CONFIG", "/nonexistent/config.toml")
        .stdin(Stdio::null())
        .output()
        .expect("run dpu-agent");
    let page = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(header(&page).starts_with(".TH dpu-agent 8 "), "{page}");
    assert!(page.contains("\\-\\-check\\-config"), "{page}");
}
