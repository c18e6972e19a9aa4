//! `completions` and the hidden `man`: what shells and `man` know about dpuctl, generated
//! from the clap definition so they never drift from `--help`. Neither contacts the agent.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::exit::Exit;

/// Prints the completion script for one shell.
pub(crate) fn completions(args: &CompletionsArgs) -> anyhow::Result<Exit> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::tree(), "dpuctl", &mut out);
    write_stdout(&out)?;
    Ok(Exit::Success)
}

/// Prints one man page, or writes every page into `--out-dir`.
pub(crate) fn man(args: &ManArgs) -> anyhow::Result<Exit> {
    if let Some(dir) = &args.out_dir {
        write_all_pages(dir)?;
    } else {
        write_stdout(&render_page(&args.subcommand)?)?;
    }
    Ok(Exit::Success)
}

/// The command tree as the man pages show it: `help` is not a command of its own there.
fn man_command() -> clap::Command {
    crate::cli::finish(Cli::command().disable_help_subcommand(true))
}

/// The roff page of dpuctl (no words) or of the subcommand the words name.
fn render_page(words: &[String]) -> anyhow::Result<Vec<u8>> {
    let mut cmd = man_command();
    // Building names the subcommands' pages (dpuctl-dpu-info) after their parents.
    cmd.build();
    let mut page = &cmd;
    for name in words {
        page = page
            .find_subcommand(name)
            .filter(|sub| !sub.is_hide_set())
            .with_context(|| {
                format!(
                    "no subcommand {name:?} under `{}`",
                    page.get_bin_name().unwrap_or("dpuctl")
                )
            })?;
    }
    let mut out = Vec::new();
    page_of(page)
        .render(&mut out)
        .context("cannot render the man page")?;
    Ok(out)
}

/// One page; every page's footer names dpuctl and its version (a subcommand has none).
fn page_of(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone()).source(format!("dpuctl {}", env!("CARGO_PKG_VERSION")))
}

/// dpuctl.1 and a page for every visible subcommand, as `man` finds them by name
/// (`man dpuctl-dpu-info`; dpuctl.1 lists them as dpuctl-dpu(1) and so on).
fn write_all_pages(dir: &Path) -> anyhow::Result<()> {
    fn write(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
        page_of(cmd).generate_to(dir)?;
        cmd.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .try_for_each(|sub| write(sub, dir))
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut cmd = man_command();
    cmd.build();
    write(&cmd, dir).with_context(|| format!("cannot write the man pages into {}", dir.display()))
}

/// Writes the whole output; a reader that stopped early (`| head`) is no error here.
fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write output")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(words: &[&str]) -> String {
        let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        String::from_utf8(render_page(&words).expect("render")).expect("utf-8 roff")
    }

    /// The page's first line after clap_mangen's preamble (`.ie`/`.el`: the apostrophe
    /// string for groff and other formatters): its `.TH` header.
    fn header(page: &str) -> &str {
        page.lines()
            .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
            .unwrap_or("")
    }

    #[test]
    fn bash_completion_names_the_subcommands() {
        let mut out = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::tree(),
            "dpuctl",
            &mut out,
        );
        let script = String::from_utf8(out).expect("utf-8");
        for word in ["prove", "storage", "completions", "--agent"] {
            assert!(script.contains(word), "{word} missing");
        }
    }

    #[test]
    fn man_pages_are_roff_and_skip_hidden_commands() {
        let top = page(&[]);
        assert!(header(&top).starts_with(".TH dpuctl 1 "), "{top}");
        assert!(top.contains("\"dpuctl 0."), "{top}");
        assert!(top.contains("dpuctl\\-prove(1)"), "{top}");
        assert!(
            !top.contains("dpuctl\\-man(1)"),
            "hidden `man` listed:\n{top}"
        );
        assert!(!top.contains("dpuctl\\-help(1)"), "`help` listed:\n{top}");
        let info = page(&["dpu", "info"]);
        assert!(
            header(&info).starts_with(".TH dpuctl-dpu-info 1 "),
            "{info}"
        );
        assert!(
            info.contains("\"dpuctl 0."),
            "version in the footer:\n{info}"
        );
        let words = ["dpu".to_owned(), "frobnicate".to_owned()];
        let err = render_page(&words).expect_err("unknown subcommand");
        assert!(err.to_string().contains("frobnicate"), "{err}");
    }

    #[test]
    fn every_page_is_written_to_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_all_pages(dir.path()).expect("write");
        for page in ["dpuctl.1", "dpuctl-prove.1", "dpuctl-dpu-info.1"] {
            assert!(dir.path().join(page).is_file(), "{page} missing");
        }
        assert!(!dir.path().join("dpuctl-man.1").exists());
        assert!(!dir.path().join("dpuctl-help.1").exists());
    }
}
