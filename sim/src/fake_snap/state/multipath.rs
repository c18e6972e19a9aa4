//! SPDK v24.01's multipath methods for the fake: `bdev_nvme_set_multipath_policy` and
//! `bdev_nvme_get_io_paths` (`module/bdev/nvme/bdev_nvme_rpc.c`, `bdev_nvme.c`), with
//! their decoders, checks, codes and messages. Paths themselves are added by
//! `bdev_nvme_attach_controller` with `multipath: "multipath"` (`bdev.rs`).
//!
//! What the fake cannot model: SPDK lists an I/O path per channel open on a bdev, so a
//! real SPDK with nothing reading reports no I/O paths; the fake reports one poll group
//! (`app_thread`) with a path per controller and bdev, the first connected one current,
//! and a path to an address [`FakeSnap::refuse_connections_to`] names as not connected.
//!
//! [`FakeSnap::refuse_connections_to`]: crate::fake_snap::FakeSnap::refuse_connections_to

use serde_json::{json, Value};

use super::decode::{decode_failed, opt, req, spdk_decode, Ty};
use super::{err, errno, Config, FakeSnapState, RpcError, EINVAL, ENODEV};

/// `rpc_set_multipath_policy_decoders` (v24.01).
const POLICY_FIELDS: &[super::decode::Field] = &[
    req("name", Ty::Str),
    req("policy", Ty::OneOf(&["active_passive", "active_active"])),
    opt("selector", Ty::OneOf(&["round_robin", "queue_depth"])),
    opt("rr_min_io", Ty::U32),
];

/// `rpc_get_io_paths_decoders` (v24.01).
const IO_PATHS_FIELDS: &[super::decode::Field] = &[opt("name", Ty::Str)];

/// The policy a bdev has until one is set (`nvme_bdev_create`: active-passive).
pub(super) const DEFAULT_POLICY: &str = "active_passive";

impl FakeSnapState {
    /// `bdev_nvme_set_multipath_policy`: decode failures and a selector without
    /// active-active are -32603 "spdk_json_decode_object failed"; `rr_min_io` other than
    /// with round robin, or 0, is -22; an unknown (or non-NVMe) bdev -19.
    pub(super) fn set_multipath_policy(&mut self, p: Option<&Value>) -> Result<Value, RpcError> {
        let a = spdk_decode(p, POLICY_FIELDS)?;
        let policy = a.s("policy");
        let selector = a.str("selector");
        if policy != "active_active" && selector.is_some() {
            return Err(decode_failed());
        }
        match (policy.as_str(), selector, a.u32("rr_min_io")) {
            ("active_active", Some("round_robin"), Some(0)) => return errno(EINVAL),
            ("active_active", Some("round_robin"), _) | (_, _, None) => {}
            _ => return errno(EINVAL),
        }
        let name = a.s("name");
        match self.bdevs.get_mut(&name) {
            Some(bdev) => {
                bdev.mp_policy = policy;
                Ok(json!(true))
            }
            None => errno(ENODEV),
        }
    }

    /// `bdev_nvme_get_io_paths {name?}`: params that are not that object are -32602
    /// "bdev_nvme_get_io_paths requires no parameters"; an unknown name lists nothing.
    pub(super) fn get_io_paths(
        &self,
        config: &Config,
        p: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let Ok(a) = spdk_decode(p, IO_PATHS_FIELDS) else {
            return err(-32602, "bdev_nvme_get_io_paths requires no parameters");
        };
        let only = a.str("name");
        let mut paths = Vec::new();
        for controller in self.nvme_controllers.values() {
            for bdev in &controller.bdevs {
                if only.is_some_and(|n| n != bdev) {
                    continue;
                }
                let mut current_given = false;
                for ctrlr in &controller.ctrlrs {
                    let trid = &ctrlr.paths[0];
                    let connected = !config
                        .refused
                        .contains(&(trid.traddr.clone(), trid.trsvcid.clone()));
                    let current = connected && !current_given;
                    current_given |= current;
                    let mut transport = json!({"trtype": trid.trtype, "traddr": trid.traddr});
                    if !trid.trsvcid.is_empty() {
                        transport["trsvcid"] = json!(trid.trsvcid);
                    }
                    if let Some(adrfam) = &trid.adrfam {
                        transport["adrfam"] = json!(adrfam);
                    }
                    paths.push(json!({"bdev_name": bdev, "cntlid": ctrlr.cntlid,
                        "current": current, "connected": connected, "accessible": true,
                        "transport": transport}));
                }
            }
        }
        Ok(json!({"poll_groups": [{"thread": "app_thread", "io_paths": paths}]}))
    }
}
