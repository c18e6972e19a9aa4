//! `dpuctl lab`: drives the QEMU lab through the project's `lab/lab.sh`, which owns the
//! VMs (build, boot, command channel, teardown). Arguments go to it as a vector, never
//! through a shell; only `lab run`'s command is joined into one line, because it is a
//! command line for the guest's shell by design (as with ssh).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

use crate::cli::{LabArgs, LabCommand, LabNamespace, LabVm};
use crate::exit::Exit;
use crate::output;

fn vm_name(vm: LabVm) -> &'static str {
    match vm {
        LabVm::Target => "target",
        LabVm::Bluefield => "bluefield",
    }
}

/// The `lab/` directory holding `lab.sh`: the flag or environment, else the first
/// `lab/lab.sh` above the current directory, else one above the dpuctl binary (a
/// `target/<profile>/dpuctl` in a checkout).
fn lab_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = explicit {
        anyhow::ensure!(
            dir.join("lab.sh").is_file(),
            "--lab-dir {}: no lab.sh there",
            dir.display()
        );
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let exe = std::env::current_exe().ok();
    let starts = std::iter::once(cwd.as_path()).chain(exe.as_deref().and_then(Path::parent));
    for start in starts {
        for dir in start.ancestors() {
            if dir.join("lab/lab.sh").is_file() {
                return Ok(dir.join("lab"));
            }
        }
    }
    anyhow::bail!(
        "cannot find the lab: run dpuctl inside the project's checkout, or pass --lab-dir DIR \
         (or set DPUCTL_LAB_DIR) to its lab/ directory"
    )
}

/// The binaries `lab up` installs: `--bin-dir`, else this dpuctl's own directory when a
/// `dpu-agent` is beside it (the same cargo build), else none. Says which on stderr: the
/// image is rebuilt when they change, and a lab without them cannot run `dpuctl`.
fn bin_dir_for_up(bin_dir: Option<&Path>, no_bin: bool) -> Option<PathBuf> {
    if no_bin {
        output::diag("dpuctl: lab: installing no project binaries (--no-bin)");
        return None;
    }
    if let Some(dir) = bin_dir {
        return Some(dir.to_path_buf());
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.to_path_buf();
    if dir.join("dpu-agent").is_file() {
        output::diag(&format!(
            "dpuctl: lab: installing {} and {} (this dpuctl's build; --bin-dir DIR for others)",
            exe.display(),
            dir.join("dpu-agent").display()
        ));
        Some(dir)
    } else {
        output::diag(&format!(
            "dpuctl: lab: no dpu-agent beside {}: the lab will have neither dpuctl nor the \
             agent inside. Build both (`cargo build -p dpu-agent -p dpuctl`) and run that \
             dpuctl, or pass --bin-dir DIR",
            exe.display()
        ));
        None
    }
}

fn lab_args(cmd: &LabCommand) -> Vec<String> {
    match cmd {
        LabCommand::Up {
            bin_dir,
            no_bin,
            no_build,
        } => {
            let mut args = vec!["up".to_owned()];
            if let Some(dir) = bin_dir_for_up(bin_dir.as_deref(), *no_bin) {
                args.extend(["--bin-dir".to_owned(), dir.display().to_string()]);
            }
            if *no_build {
                args.push("--no-build".to_owned());
            }
            args
        }
        LabCommand::Run {
            vm,
            ns,
            time_limit,
            command,
        } => {
            let ns = match ns {
                LabNamespace::Host => "host",
                LabNamespace::Dpu => "dpu",
                LabNamespace::None => "none",
            };
            let mut args = vec![
                "run".to_owned(),
                "--vm".to_owned(),
                vm_name(*vm).to_owned(),
                "--ns".to_owned(),
                ns.to_owned(),
                "--timeout".to_owned(),
                time_limit.to_string(),
                "--".to_owned(),
            ];
            args.extend(command.iter().cloned());
            args
        }
        LabCommand::Status => vec!["status".to_owned()],
        LabCommand::Down => vec!["down".to_owned()],
        LabCommand::Logs { vm } => {
            let mut args = vec!["logs".to_owned()];
            args.extend(vm.map(|vm| vm_name(vm).to_owned()));
            args
        }
    }
}

/// Runs `lab.sh`; `lab run` exits with the guest command's code.
pub(crate) fn run(args: &LabArgs) -> anyhow::Result<Exit> {
    let dir = lab_dir(args.lab_dir.as_deref())?;
    let script = dir.join("lab.sh");
    let status = Command::new("bash")
        .arg(&script)
        .args(lab_args(&args.command))
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    let code = status
        .code()
        .map_or(255, |c| u8::try_from(c).unwrap_or(255));
    Ok(match (&args.command, code) {
        (LabCommand::Run { .. }, code) => Exit::PassThrough(code),
        (_, 0) => Exit::Success,
        (_, _) => Exit::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_installs_the_given_binaries_this_build_or_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            bin_dir_for_up(Some(dir.path()), false).as_deref(),
            Some(dir.path())
        );
        assert_eq!(bin_dir_for_up(None, true), None);
        // The test binary lives in target/*/deps, where cargo puts no dpu-agent.
        let beside = std::env::current_exe()
            .expect("exe")
            .with_file_name("dpu-agent");
        assert_eq!(bin_dir_for_up(None, false).is_some(), beside.is_file());
    }

    #[test]
    fn run_passes_the_command_as_separate_arguments_after_the_options() {
        let cmd = LabCommand::Run {
            vm: LabVm::Target,
            ns: LabNamespace::None,
            time_limit: 30,
            command: vec!["echo".to_owned(), "a b; c".to_owned()],
        };
        assert_eq!(
            lab_args(&cmd),
            [
                "run",
                "--vm",
                "target",
                "--ns",
                "none",
                "--timeout",
                "30",
                "--",
                "echo",
                "a b; c"
            ]
        );
    }

    #[test]
    fn a_lab_dir_without_lab_sh_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = lab_dir(Some(dir.path())).expect_err("no lab.sh");
        assert!(err.to_string().contains("no lab.sh"), "{err}");
    }
}
