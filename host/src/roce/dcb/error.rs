//! Why `roce dcb` could not take its two readings: a parameter (by field), the interface
//! or RDMA device it would read, the driver statistics, or the workload it was to run.

use dpu_proto::names::NameError;

use crate::param::ParamError;

/// Why [`super::run`] or [`super::snapshot`] stopped without a report.
#[derive(Debug, thiserror::Error)]
pub enum DcbError {
    /// A parameter that cannot be run, named by its field.
    #[error("{0}")]
    Param(#[from] ParamError),
    /// The interface given is no interface name.
    #[error("{0}")]
    Name(#[from] NameError),
    /// The interface's driver statistics (SIOCETHTOOL) could not be read.
    #[error("reading the driver statistics of {interface}")]
    Stats {
        /// The interface.
        interface: String,
        /// The probe's error.
        #[source]
        source: dpu_probe::ProbeError,
    },
    /// The workload could not be started.
    #[error("cannot run the workload {program}")]
    Workload {
        /// The program, as given.
        program: String,
        /// The spawn's error.
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use dpu_probe::SysRoot;

    use super::super::{run, DcbParams};
    use super::DcbError;
    use crate::param::Field;

    fn params(interface: &str, duration: u64) -> DcbParams {
        DcbParams {
            interface: Some(interface.to_owned()),
            device: None,
            priority: 3,
            duration,
            workload: Vec::new(),
        }
    }

    #[test]
    fn bad_input_is_refused_typed_before_anything_is_read() {
        let root = SysRoot::new("/nonexistent-sys-root");
        let err = run(&root, &params("eth0", 0)).expect_err("0 s");
        let DcbError::Param(param) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(param.about(), Field::Duration);
        assert_eq!(err.to_string(), "duration must be 1 .. 86400 seconds");
        let err = run(&root, &params("eth0; reboot", 1)).expect_err("no name");
        assert!(matches!(err, DcbError::Name(_)), "{err:?}");
        assert!(!err.to_string().contains("--"), "{err}");
    }
}
