//! The one table from a library parameter ([`Field`]) to the flag a `dpuctl` user typed
//! for it, and the sentence of a [`ParamError`] with its fields said as flags.
//!
//! Why here: `dpu-host` says "block size", because it does not know it was called from a
//! command line; the user typed `--bs`, so the message they read must say `--bs`.

use dpu_host::param::{Field, ParamError};

/// The flag for `field`. Every command that takes the field takes it under this flag (a
/// field two commands spell differently would need a second table, not a second name here).
pub(crate) fn flag(field: Field) -> &'static str {
    match field {
        Field::BlockSize => "--bs",
        Field::Size => "--size",
        Field::IoDepth => "--iodepth",
        Field::Duration => "--duration",
        Field::Tolerance => "--tolerance",
        Field::Trials => "--trials",
        Field::Packets => "--packets",
        Field::Witnesses => "--witnesses",
        Field::TargetAgent => "--target-agent",
        Field::TargetInterface => "--target-interface",
        Field::Interface => "--interface",
        Field::Device => "--device",
        Field::PeerDevice => "--peer-device",
        Field::PeerAddress => "--peer-address",
        Field::Tests => "--tests",
        Field::Sizes => "--sizes",
        Field::LatencySizes => "--lat-sizes",
        Field::Iterations => "--iterations",
        Field::TcpSeconds => "--tcp-seconds",
        Field::RunTimeout => "--run-timeout",
        Field::BasePort => "--base-port",
        Field::RunId => "--run-id",
        Field::Peer => "--peer",
        Field::LineRatePercent => "--line-rate-percent",
        Field::LineRateGbps => "--line-rate-gbps",
        Field::Dpuctl => "--dpuctl",
        Field::Parallel => "--parallel",
    }
}

/// `err`'s sentence with each field said as its flag.
pub(crate) fn render(err: &ParamError) -> String {
    err.render(|field| flag(field).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_a_flag_of_its_own() {
        let mut seen = std::collections::HashSet::new();
        for field in Field::ALL {
            let name = flag(field);
            assert!(name.starts_with("--"), "{field:?}: {name}");
            assert!(seen.insert(name), "{name} is the flag of two fields");
        }
    }

    #[test]
    fn a_param_error_reads_with_the_flags_the_user_typed() {
        let err = ParamError::new(Field::Size)
            .field(Field::Size)
            .text(" 1024 bytes is smaller than ")
            .field(Field::BlockSize)
            .text(" 4096 bytes");
        assert_eq!(
            render(&err),
            "--size 1024 bytes is smaller than --bs 4096 bytes"
        );
        // Control: the library's own text says neither flag.
        assert!(!err.to_string().contains("--"), "{err}");
    }
}
