//! The multipath arguments of `dpuctl storage attach`/`expose` (`--path`,
//! `--multipath-policy`) and of `dpuctl storage paths`, apart from `cli.rs` so the storage
//! subcommand list there only names them.

use clap::{Args, ValueEnum};
use dpu_proto::v1;

/// `--multipath-policy`: how I/O uses a remote controller's paths (SPDK's
/// `bdev_nvme_set_multipath_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MultipathPolicyArg {
    /// One path carries I/O; another takes over when it fails.
    ActivePassive,
    /// I/O is spread over every usable path.
    ActiveActive,
}

impl MultipathPolicyArg {
    /// The API's value.
    pub(crate) fn proto(self) -> v1::MultipathPolicy {
        match self {
            Self::ActivePassive => v1::MultipathPolicy::ActivePassive,
            Self::ActiveActive => v1::MultipathPolicy::ActiveActive,
        }
    }
}

/// More paths of the remote controller, flattened into `storage attach`/`expose`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MultipathArgs {
    /// Another transport address of the same target (the DPU's second uplink), as
    /// ADDR:PORT (an IPv6 address in brackets); repeat for more. Same transport and subsystem as
    /// --traddr.
    #[arg(long = "path", value_name = "ADDR:PORT", value_parser = parse_path)]
    pub(crate) paths: Vec<v1::NvmePathAddress>,
    /// How I/O uses the paths (needs --path); SPDK's default is active-passive.
    #[arg(long, value_enum, requires = "paths")]
    pub(crate) multipath_policy: Option<MultipathPolicyArg>,
}

/// `dpuctl storage paths [REMOTE]`.
#[derive(Debug, Args)]
pub(crate) struct PathsArgs {
    /// `remoteControllers/{id}` (or a bare id); absent: every remote controller.
    pub(crate) remote: Option<String>,
}

/// Splits `ADDR:PORT` or `[IPV6]:PORT` (brackets around an IPv6 address); the agent checks the address itself.
pub(crate) fn parse_path(text: &str) -> Result<v1::NvmePathAddress, String> {
    let bad = || format!("{text:?}: expected ADDR:PORT or [IPV6]:PORT");
    let (addr, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (addr, port) = rest.split_once("]:").ok_or_else(bad)?;
            (addr, port)
        }
        None => text.rsplit_once(':').ok_or_else(bad)?,
    };
    if addr.is_empty()
        || addr.contains(['[', ']'])
        || (!text.starts_with('[') && addr.contains(':'))
    {
        return Err(bad());
    }
    let trsvcid: u32 = port
        .parse()
        .ok()
        .filter(|p| (1..=65535).contains(p))
        .ok_or_else(|| format!("{text:?}: the port must be 1..65535"))?;
    Ok(v1::NvmePathAddress {
        traddr: addr.to_owned(),
        trsvcid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_with_their_port_and_bad_ones_are_named() {
        let v4 = parse_path("192.0.2.11:4421").expect("v4");
        assert_eq!((v4.traddr.as_str(), v4.trsvcid), ("192.0.2.11", 4421));
        let v6 = parse_path("[2001:db8::2]:4420").expect("v6");
        assert_eq!((v6.traddr.as_str(), v6.trsvcid), ("2001:db8::2", 4420));
        for bad in [
            "192.0.2.11",
            "192.0.2.11:0",
            "192.0.2.11:70000",
            ":4420",
            "2001:db8::2:4420",
            "[2001:db8::2]4420",
        ] {
            let err = parse_path(bad).expect_err(bad);
            assert!(err.contains(bad), "{err}");
        }
    }
}
