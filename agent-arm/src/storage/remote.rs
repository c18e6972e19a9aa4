//! [`RemoteTarget`]: a `RemoteControllerSpec` decoded once, with its defaults and SPDK's
//! rules, so the API edge, the SNAP backend and the kernel backend agree on what a spec
//! means (transport, port 4420 when unset, which reconnect settings are set).
//!
//! The reconnect trio follows SPDK's `bdev_nvme_check_io_error_resiliency_params`
//! (module/bdev/nvme/bdev_nvme.c, v24.01, unchanged through v26.05): a spec SPDK would
//! refuse with -22 is refused here first, naming the field.

use dpu_nvmeof::AddressFamily;
use dpu_proto::v1;

use super::backend::{BackendError, FailureKind};
use super::field_error::{bad, FieldError, DEFAULT_TRSVCID};
use super::multipath::{MultipathPolicy, PathAddress};

/// The largest `num_io_queues` the API takes.
const MAX_IO_QUEUES: u32 = 1024;

/// The fabric of a remote controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemoteTransport {
    Rdma,
    Tcp,
}

impl std::fmt::Display for RemoteTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Rdma => "rdma",
            Self::Tcp => "tcp",
        })
    }
}

/// What a backend does when the connection to the target breaks; `None` leaves a value to
/// the backend's defaults. Only combinations SPDK accepts can be built ([`Reconnect::new`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reconnect {
    /// Give up after this many seconds; -1 never.
    pub(crate) ctrl_loss_timeout_sec: Option<i32>,
    /// Seconds between attempts.
    pub(crate) reconnect_delay_sec: Option<u32>,
    /// Fail I/O after this many seconds while attempts go on.
    pub(crate) fast_io_fail_timeout_sec: Option<u32>,
}

impl Reconnect {
    /// The trio as SPDK checks it (0 = unset, as in the API).
    pub(crate) fn new(
        ctrl_loss_timeout_sec: i32,
        reconnect_delay_sec: u32,
        fast_io_fail_timeout_sec: u32,
    ) -> Result<Self, FieldError> {
        let (loss, delay, fast) = (
            ctrl_loss_timeout_sec,
            reconnect_delay_sec,
            fast_io_fail_timeout_sec,
        );
        if loss < -1 {
            return Err(bad(
                "ctrl_loss_timeout_sec",
                format!("{loss} is below -1 (-1 reconnects forever, 0 keeps the default)"),
            ));
        }
        if loss == 0 {
            if delay != 0 {
                return Err(bad(
                    "reconnect_delay_sec",
                    "must be 0 unless ctrl_loss_timeout_sec is set (-1 or > 0)",
                ));
            }
            if fast != 0 {
                return Err(bad(
                    "fast_io_fail_timeout_sec",
                    "must be 0 unless ctrl_loss_timeout_sec is set (-1 or > 0)",
                ));
            }
            return Ok(Self::default());
        }
        if delay == 0 {
            return Err(bad(
                "reconnect_delay_sec",
                format!("must be > 0 when ctrl_loss_timeout_sec is {loss}"),
            ));
        }
        if let Ok(limit) = u32::try_from(loss) {
            if delay > limit {
                return Err(bad(
                    "reconnect_delay_sec",
                    format!("{delay} is more than ctrl_loss_timeout_sec ({loss})"),
                ));
            }
            if fast != 0 && fast > limit {
                return Err(bad(
                    "fast_io_fail_timeout_sec",
                    format!("{fast} is more than ctrl_loss_timeout_sec ({loss})"),
                ));
            }
        }
        if fast != 0 && fast < delay {
            return Err(bad(
                "fast_io_fail_timeout_sec",
                format!("{fast} is less than reconnect_delay_sec ({delay})"),
            ));
        }
        Ok(Self {
            ctrl_loss_timeout_sec: Some(loss),
            reconnect_delay_sec: Some(delay),
            fast_io_fail_timeout_sec: (fast != 0).then_some(fast),
        })
    }
}

/// A remote NVMe-oF controller to attach, decoded and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteTarget {
    pub(crate) transport: RemoteTransport,
    pub(crate) family: AddressFamily,
    pub(crate) traddr: String,
    pub(crate) trsvcid: u16,
    pub(crate) subnqn: String,
    pub(crate) hostnqn: Option<String>,
    pub(crate) header_digest: bool,
    pub(crate) data_digest: bool,
    pub(crate) num_io_queues: Option<u32>,
    pub(crate) reconnect: Reconnect,
    /// The spec's extra paths, in order ([`super::multipath`]).
    pub(crate) extra_paths: Vec<PathAddress>,
    /// How I/O uses the paths; `None` with one path.
    pub(crate) policy: Option<MultipathPolicy>,
}

impl RemoteTarget {
    /// Decodes `spec`; the first unusable field is named (relative to the spec).
    pub(crate) fn decode(spec: &v1::RemoteControllerSpec) -> Result<Self, FieldError> {
        let transport = match v1::NvmeTransport::try_from(spec.transport) {
            Ok(v1::NvmeTransport::Rdma) => RemoteTransport::Rdma,
            Ok(v1::NvmeTransport::Tcp) => RemoteTransport::Tcp,
            Ok(_) => {
                return Err(bad(
                    "transport",
                    "must be RDMA or TCP for a remote controller",
                ))
            }
            Err(_) => {
                return Err(bad(
                    "transport",
                    format!("unknown value {}", spec.transport),
                ))
            }
        };
        let family = match v1::AddressFamily::try_from(spec.address_family) {
            Ok(v1::AddressFamily::Ipv4) => AddressFamily::Ipv4,
            Ok(v1::AddressFamily::Ipv6) => AddressFamily::Ipv6,
            _ => return Err(bad("address_family", "must be IPV4 or IPV6")),
        };
        dpu_nvmeof::validate_traddr(family, &spec.traddr)
            .map_err(|e| bad("traddr", e.to_string()))?;
        let trsvcid = if spec.trsvcid == 0 {
            DEFAULT_TRSVCID
        } else {
            dpu_nvmeof::validate_trsvcid(spec.trsvcid)
                .map_err(|e| bad("trsvcid", e.to_string()))?;
            u16::try_from(spec.trsvcid).map_err(|_| bad("trsvcid", "must be 1..65535"))?
        };
        dpu_nvmeof::Nqn::parse(&spec.subnqn).map_err(|e| bad("subnqn", e.to_string()))?;
        let hostnqn = if spec.hostnqn.is_empty() {
            None
        } else {
            dpu_nvmeof::Nqn::parse(&spec.hostnqn).map_err(|e| bad("hostnqn", e.to_string()))?;
            Some(spec.hostnqn.clone())
        };
        if spec.num_io_queues > MAX_IO_QUEUES {
            return Err(bad(
                "num_io_queues",
                format!("must be at most {MAX_IO_QUEUES}"),
            ));
        }
        let reconnect = Reconnect::new(
            spec.ctrl_loss_timeout_sec,
            spec.reconnect_delay_sec,
            spec.fast_io_fail_timeout_sec,
        )?;
        let first = PathAddress {
            traddr: spec.traddr.clone(),
            trsvcid,
        };
        let (extra_paths, policy) = super::multipath::decode(spec, family, &first)?;
        Ok(Self {
            transport,
            family,
            traddr: spec.traddr.clone(),
            trsvcid,
            subnqn: spec.subnqn.clone(),
            hostnqn,
            header_digest: spec.header_digest,
            data_digest: spec.data_digest,
            num_io_queues: (spec.num_io_queues != 0).then_some(spec.num_io_queues),
            reconnect,
            extra_paths,
            policy,
        })
    }

    /// Every path, the first (`traddr`/`trsvcid`) first.
    pub(crate) fn paths(&self) -> Vec<PathAddress> {
        let first = PathAddress {
            traddr: self.traddr.clone(),
            trsvcid: self.trsvcid,
        };
        std::iter::once(first)
            .chain(self.extra_paths.iter().cloned())
            .collect()
    }

    /// E.g. `tcp 127.0.0.1:4420 nqn.2016-06.io.spdk:cnode1`, for messages.
    pub(crate) fn describe(&self) -> String {
        let address = match self.family {
            AddressFamily::Ipv6 => format!("[{}]:{}", self.traddr, self.trsvcid),
            _ => format!("{}:{}", self.traddr, self.trsvcid),
        };
        format!("{} {address} {}", self.transport, self.subnqn)
    }
}

/// [`RemoteTarget::decode`] for a backend: the spec comes from the desired state, which the
/// API checked, so a failure means a state file edited by hand.
pub(crate) fn decode_remote(spec: &v1::RemoteControllerSpec) -> Result<RemoteTarget, BackendError> {
    RemoteTarget::decode(spec).map_err(|e| {
        BackendError::plain(
            FailureKind::Invalid,
            format!("the stored remote controller spec is unusable: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> v1::RemoteControllerSpec {
        v1::RemoteControllerSpec {
            transport: v1::NvmeTransport::Tcp as i32,
            address_family: v1::AddressFamily::Ipv4 as i32,
            traddr: "192.0.2.10".to_owned(),
            subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_are_decided_once() {
        let target = RemoteTarget::decode(&spec()).expect("valid");
        assert_eq!(target.trsvcid, DEFAULT_TRSVCID);
        assert_eq!(target.transport, RemoteTransport::Tcp);
        assert_eq!(target.hostnqn, None);
        assert_eq!(target.num_io_queues, None);
        assert_eq!(target.reconnect, Reconnect::default());
        assert_eq!(
            target.describe(),
            "tcp 192.0.2.10:4420 nqn.2016-06.io.spdk:cnode1"
        );
    }

    /// SPDK v24.01's `bdev_nvme_check_io_error_resiliency_params`, case by case: what it
    /// accepts is accepted, what it refuses is refused naming the field to change. The
    /// `spdk` test tier checks the same table against a real `spdk_tgt`.
    #[test]
    fn the_reconnect_trio_follows_spdk() {
        let accepted = [
            (0, 0, 0),
            (-1, 1, 0),
            (-1, 5, 5),
            (-1, 5, 10),
            (30, 5, 0),
            (30, 30, 0),
            (30, 5, 10),
            (30, 5, 30),
        ];
        for (loss, delay, fast) in accepted {
            Reconnect::new(loss, delay, fast)
                .unwrap_or_else(|e| panic!("({loss}, {delay}, {fast}) refused: {e}"));
        }
        let refused = [
            ((-2, 1, 0), "ctrl_loss_timeout_sec"),
            ((0, 5, 0), "reconnect_delay_sec"),
            ((0, 0, 5), "fast_io_fail_timeout_sec"),
            ((-1, 0, 0), "reconnect_delay_sec"),
            ((30, 0, 0), "reconnect_delay_sec"),
            ((30, 31, 0), "reconnect_delay_sec"),
            ((30, 5, 31), "fast_io_fail_timeout_sec"),
            ((30, 10, 5), "fast_io_fail_timeout_sec"),
            ((-1, 10, 5), "fast_io_fail_timeout_sec"),
        ];
        for ((loss, delay, fast), field) in refused {
            let err = Reconnect::new(loss, delay, fast)
                .expect_err(&format!("({loss}, {delay}, {fast}) accepted"));
            assert_eq!(err.field, field, "({loss}, {delay}, {fast}): {err}");
        }
    }

    #[test]
    fn each_bad_field_is_named() {
        type Mutation = fn(&mut v1::RemoteControllerSpec);
        let cases: [(&str, Mutation); 6] = [
            ("traddr", |s| s.traddr = "2001:db8::1".to_owned()),
            ("trsvcid", |s| s.trsvcid = 70_000),
            ("subnqn", |s| s.subnqn = "not-an-nqn".to_owned()),
            ("transport", |s| {
                s.transport = v1::NvmeTransport::Loop as i32
            }),
            ("address_family", |s| s.address_family = 0),
            ("num_io_queues", |s| s.num_io_queues = 5000),
        ];
        for (field, mutate) in cases {
            let mut spec = spec();
            mutate(&mut spec);
            let err = RemoteTarget::decode(&spec).expect_err(field);
            assert_eq!(err.field, field, "{err}");
        }
    }
}
