//! A remote controller with several paths (issue 36 part 3): the spec's `extra_paths` and
//! `multipath_policy` decoded and checked once, so the API edge and the backends agree.
//!
//! Every extra path shares the spec's transport, address family, subnqn and hostnqn: SPDK
//! v24.01 refuses a second path of one controller with another subnqn or hostnqn (-22,
//! `rpc_bdev_nvme_attach_controller`), and one fabric per controller is what a DPU's
//! uplinks give. A path equal to another is refused here (SPDK answers -114 for the
//! first path and would quietly take a duplicate of a later one).

use std::borrow::Cow;

use dpu_nvmeof::AddressFamily;
use dpu_proto::v1;

use super::field_error::{bad, FieldError, DEFAULT_TRSVCID};

/// The most paths one remote controller may have (the first and three extra): a DPU has
/// two uplinks; four leaves room for two targets' ports without letting a typo fan out.
pub(crate) const MAX_PATHS: usize = 4;

/// One transport address of a remote controller.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PathAddress {
    pub(crate) traddr: String,
    pub(crate) trsvcid: u16,
}

impl std::fmt::Display for PathAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.traddr.contains(':') {
            write!(f, "[{}]:{}", self.traddr, self.trsvcid)
        } else {
            write!(f, "{}:{}", self.traddr, self.trsvcid)
        }
    }
}

/// SPDK's multipath policies (`bdev_nvme_set_multipath_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MultipathPolicy {
    ActivePassive,
    ActiveActive,
}

impl MultipathPolicy {
    /// The policy SPDK is told.
    pub(crate) fn spdk(self) -> dpu_nvmeof::snap::MultipathPolicy {
        match self {
            Self::ActivePassive => dpu_nvmeof::snap::MultipathPolicy::ActivePassive,
            Self::ActiveActive => dpu_nvmeof::snap::MultipathPolicy::ActiveActive,
        }
    }
}

fn at(index: usize, member: &str) -> Cow<'static, str> {
    Cow::Owned(format!("extra_paths[{index}].{member}"))
}

/// Decodes `spec.extra_paths` and `spec.multipath_policy` (`first` is the decoded first
/// path). The policy is `None` with one path, and active-passive when unset with more
/// (SPDK's own default, stated so what the agent reports is what SPDK does).
pub(crate) fn decode(
    spec: &v1::RemoteControllerSpec,
    family: AddressFamily,
    first: &PathAddress,
) -> Result<(Vec<PathAddress>, Option<MultipathPolicy>), FieldError> {
    if spec.extra_paths.len() + 1 > MAX_PATHS {
        return Err(bad(
            "extra_paths",
            format!(
                "{} paths in all; at most {MAX_PATHS} (the first and {} extra)",
                spec.extra_paths.len() + 1,
                MAX_PATHS - 1
            ),
        ));
    }
    let mut paths = Vec::with_capacity(spec.extra_paths.len());
    for (index, extra) in spec.extra_paths.iter().enumerate() {
        dpu_nvmeof::validate_traddr(family, &extra.traddr)
            .map_err(|e| bad(at(index, "traddr"), e.to_string()))?;
        let trsvcid = if extra.trsvcid == 0 {
            DEFAULT_TRSVCID
        } else {
            dpu_nvmeof::validate_trsvcid(extra.trsvcid)
                .map_err(|e| bad(at(index, "trsvcid"), e.to_string()))?
        };
        let path = PathAddress {
            traddr: extra.traddr.clone(),
            trsvcid,
        };
        if &path == first || paths.contains(&path) {
            return Err(bad(
                at(index, "traddr"),
                format!("{path} is already a path of this controller"),
            ));
        }
        paths.push(path);
    }
    let policy = match v1::MultipathPolicy::try_from(spec.multipath_policy) {
        Ok(v1::MultipathPolicy::Unspecified) => None,
        Ok(v1::MultipathPolicy::ActivePassive) => Some(MultipathPolicy::ActivePassive),
        Ok(v1::MultipathPolicy::ActiveActive) => Some(MultipathPolicy::ActiveActive),
        Err(_) => {
            return Err(bad(
                "multipath_policy",
                format!("unknown value {}", spec.multipath_policy),
            ))
        }
    };
    if paths.is_empty() {
        if policy.is_some() {
            return Err(bad(
                "multipath_policy",
                "needs extra_paths: a controller with one path has no policy to choose",
            ));
        }
        return Ok((paths, None));
    }
    Ok((
        paths,
        Some(policy.unwrap_or(MultipathPolicy::ActivePassive)),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::remote::RemoteTarget;
    use super::*;

    fn spec() -> v1::RemoteControllerSpec {
        v1::RemoteControllerSpec {
            transport: v1::NvmeTransport::Tcp as i32,
            address_family: v1::AddressFamily::Ipv4 as i32,
            traddr: "192.0.2.10".to_owned(),
            trsvcid: 4420,
            subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
            ..Default::default()
        }
    }

    fn extra(traddr: &str, trsvcid: u32) -> v1::NvmePathAddress {
        v1::NvmePathAddress {
            traddr: traddr.to_owned(),
            trsvcid,
        }
    }

    #[test]
    fn paths_come_first_path_first_with_the_default_policy_spdks() {
        let mut spec = spec();
        spec.extra_paths = vec![extra("192.0.2.11", 0), extra("192.0.2.10", 4421)];
        let target = RemoteTarget::decode(&spec).expect("valid");
        let shown: Vec<String> = target.paths().iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["192.0.2.10:4420", "192.0.2.11:4420", "192.0.2.10:4421"]
        );
        assert_eq!(target.policy, Some(MultipathPolicy::ActivePassive));
        let single = RemoteTarget::decode(&super::tests::spec()).expect("valid");
        assert_eq!(single.paths().len(), 1);
        assert_eq!(single.policy, None);
    }

    #[test]
    fn each_bad_path_field_is_named() {
        type Mutation = fn(&mut v1::RemoteControllerSpec);
        let cases: [(&str, Mutation); 7] = [
            ("extra_paths[0].traddr", |s| {
                s.extra_paths = vec![extra("2001:db8::1", 4420)]
            }),
            ("extra_paths[0].traddr", |s| {
                s.extra_paths = vec![extra("not-an-address", 4420)]
            }),
            ("extra_paths[1].trsvcid", |s| {
                s.extra_paths = vec![extra("192.0.2.11", 4420), extra("192.0.2.12", 70_000)]
            }),
            ("extra_paths[0].traddr", |s| {
                s.extra_paths = vec![extra("192.0.2.10", 0)]
            }),
            ("extra_paths[1].traddr", |s| {
                s.extra_paths = vec![extra("192.0.2.11", 4420), extra("192.0.2.11", 4420)]
            }),
            ("extra_paths", |s| {
                s.extra_paths = (1..=4).map(|i| extra("192.0.2.11", 4420 + i)).collect()
            }),
            ("multipath_policy", |s| {
                s.multipath_policy = v1::MultipathPolicy::ActiveActive as i32
            }),
        ];
        for (field, mutate) in cases {
            let mut spec = spec();
            mutate(&mut spec);
            let err = RemoteTarget::decode(&spec).expect_err(field);
            assert_eq!(err.field, field, "{err}");
        }
        let mut unknown = spec();
        unknown.extra_paths = vec![extra("192.0.2.11", 4420)];
        unknown.multipath_policy = 7;
        let err = RemoteTarget::decode(&unknown).expect_err("unknown policy");
        assert_eq!(err.field, "multipath_policy", "{err}");
        let mut three_extra = spec();
        three_extra.extra_paths = (1..=3).map(|i| extra("192.0.2.11", 4420 + i)).collect();
        RemoteTarget::decode(&three_extra).expect("four paths in all are accepted");
    }
}
