//! Why `roce nccl-check` could not read its input: no command, a command that would not
//! start, or a log file that cannot be read.

use std::path::PathBuf;

/// Why [`super::run_nccl`] or [`super::read_logs`] stopped without a run or a text.
#[derive(Debug, thiserror::Error)]
pub enum NcclError {
    /// The command line after `--` was empty.
    #[error("no command after --")]
    NoCommand,
    /// The command could not be started.
    #[error("cannot run {program}")]
    Spawn {
        /// The program, as given.
        program: String,
        /// The spawn's error.
        #[source]
        source: std::io::Error,
    },
    /// A log file could not be read.
    #[error("cannot read {}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::super::{read_logs, run_nccl};
    use super::NcclError;

    #[test]
    fn a_missing_log_keeps_its_path_and_the_os_error() {
        let missing = std::path::PathBuf::from("/nonexistent/nccl.log");
        let err = read_logs(std::slice::from_ref(&missing)).expect_err("missing");
        let NcclError::Log { path, source } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(path, &missing);
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(err.source().is_some());
    }

    #[test]
    fn no_command_and_a_command_that_does_not_start_are_told_apart() {
        let root = dpu_probe::SysRoot::new("/nonexistent-sys-root");
        let err = run_nccl(&root, &[]).expect_err("empty");
        assert!(matches!(err, NcclError::NoCommand), "{err:?}");
        let err = run_nccl(&root, &["/nonexistent/all_reduce_perf".to_owned()])
            .expect_err("no such program");
        assert!(matches!(err, NcclError::Spawn { .. }), "{err:?}");
    }
}
