//! SPDK NVMe multipath (v24.01 `module/bdev/nvme/bdev_nvme_rpc.c`): adding a path to an
//! attached controller (`bdev_nvme_attach_controller` with `multipath`), choosing how I/O
//! uses the paths (`bdev_nvme_set_multipath_policy`), removing one path
//! (`bdev_nvme_detach_controller` narrowed to a transport address) and reading each I/O
//! path's state (`bdev_nvme_get_io_paths`).
//!
//! Only `multipath: "multipath"` gives every path its own controller and its own I/O path
//! that `bdev_nvme_get_io_paths` reports; `"failover"` keeps one controller with alternate
//! transport ids that only `bdev_nvme_get_controllers` shows, so a caller that must report
//! each path uses `"multipath"` and picks active-passive with the policy instead.

use serde::{Deserialize, Serialize};

use super::{AttachController, SnapCall, SnapClient};

/// `multipath` of `bdev_nvme_attach_controller` (`bdev_nvme_decode_multipath`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MultipathMode {
    /// A second attach under the same name is refused (-114).
    #[serde(rename = "disable")]
    Disable,
    /// A second path becomes an alternate transport id of the one controller (v24.01's
    /// default).
    #[serde(rename = "failover")]
    Failover,
    /// A second path becomes a controller of its own under the same name, its namespaces
    /// joining the same bdevs.
    #[serde(rename = "multipath")]
    Multipath,
}

/// `policy` of `bdev_nvme_set_multipath_policy` (`rpc_decode_mp_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MultipathPolicy {
    /// One path carries I/O until it fails.
    #[serde(rename = "active_passive")]
    ActivePassive,
    /// I/O goes round robin over every usable path.
    #[serde(rename = "active_active")]
    ActiveActive,
}

/// The params of an attach that adds a path: [`AttachController`] plus `multipath`.
#[derive(Debug, Serialize)]
struct AttachPath<'a> {
    #[serde(flatten)]
    params: &'a AttachController,
    multipath: MultipathMode,
}

/// Params of `bdev_nvme_set_multipath_policy` (no `selector`, no `rr_min_io`: SPDK refuses
/// either unless the policy is active-active, and its defaults are round robin, 1 I/O).
#[derive(Debug, Serialize)]
struct SetPolicy<'a> {
    name: &'a str,
    policy: MultipathPolicy,
}

/// Params of `bdev_nvme_detach_controller` that remove one path only.
#[derive(Debug, Serialize)]
struct DetachPath<'a> {
    name: &'a str,
    traddr: &'a str,
    trsvcid: &'a str,
}

#[derive(Serialize)]
struct ByName<'a> {
    name: &'a str,
}

/// `bdev_nvme_get_io_paths`' answer: one entry per poll group (SPDK thread).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IoPaths {
    /// The poll groups, each with the I/O paths of the channels open on its thread.
    pub poll_groups: Vec<PollGroupPaths>,
}

/// The I/O paths of one poll group. A bdev nobody opened a channel on has none: SPDK
/// builds I/O paths per channel, not per controller.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PollGroupPaths {
    /// The SPDK thread's name.
    #[serde(default)]
    pub thread: String,
    /// Its I/O paths.
    #[serde(default)]
    pub io_paths: Vec<IoPath>,
}

/// One I/O path (`nvme_io_path_info_json`, v24.01).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IoPath {
    /// The bdev the path serves.
    pub bdev_name: String,
    /// The controller id the target gave this path's controller.
    #[serde(default)]
    pub cntlid: u32,
    /// This channel's I/O goes through this path now.
    #[serde(default)]
    pub current: bool,
    /// The path's queue pair is connected.
    #[serde(default)]
    pub connected: bool,
    /// The namespace is accessible through it (ANA optimized or non-optimized).
    #[serde(default)]
    pub accessible: bool,
    /// Where the path goes.
    pub transport: IoPathTransport,
}

/// `transport` of an I/O path: `trtype` as SPDK spells it (`TCP`), `adrfam` (`IPv4`),
/// `trsvcid` absent when empty.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IoPathTransport {
    /// `TCP`, `RDMA`, ...
    #[serde(default)]
    pub trtype: String,
    /// Target address.
    #[serde(default)]
    pub traddr: String,
    /// Target service id.
    #[serde(default)]
    pub trsvcid: String,
    /// `IPv4`, `IPv6`.
    #[serde(default)]
    pub adrfam: String,
}

/// One NVMe bdev of `bdev_get_bdevs` with the multipath parts of its `driver_specific`
/// (`bdev_nvme_dump_info_json`, v24.01).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NvmeBdevPaths {
    /// Bdev name.
    pub name: String,
    /// The NVMe part; absent for a bdev of another module.
    #[serde(default)]
    pub driver_specific: NvmeDriverSpecific,
}

/// `driver_specific` of an NVMe bdev.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct NvmeDriverSpecific {
    /// `active_passive` or `active_active`; absent for a bdev of another module.
    #[serde(default)]
    pub mp_policy: Option<String>,
}

impl SnapClient {
    /// `bdev_nvme_attach_controller` with `multipath` set: with [`MultipathMode::Multipath`]
    /// and the name of an attached controller, adds `params`' address as another path.
    /// SPDK refuses a path equal to the controller's first one (-114), another subnqn or
    /// hostnqn (-22); returns the controller's bdev names.
    pub fn bdev_nvme_attach_path(
        &self,
        params: &AttachController,
        mode: MultipathMode,
    ) -> SnapCall<Vec<String>> {
        self.call(
            "bdev_nvme_attach_controller",
            AttachPath {
                params,
                multipath: mode,
            },
        )
    }

    /// `bdev_nvme_set_multipath_policy {name, policy}` on **bdev** `bdev` (not the
    /// controller: SPDK keeps the policy per bdev). An unknown bdev is -19.
    pub fn bdev_nvme_set_multipath_policy(
        &self,
        bdev: &str,
        policy: MultipathPolicy,
    ) -> SnapCall<bool> {
        self.call(
            "bdev_nvme_set_multipath_policy",
            SetPolicy { name: bdev, policy },
        )
    }

    /// `bdev_get_bdevs {name}` read for the multipath policy SPDK holds for bdev `bdev`.
    pub fn bdev_get_nvme_paths(&self, bdev: &str) -> SnapCall<Vec<NvmeBdevPaths>> {
        self.call("bdev_get_bdevs", ByName { name: bdev })
    }

    /// `bdev_nvme_get_io_paths`, of bdev `bdev` or of every bdev.
    pub fn bdev_nvme_get_io_paths(&self, bdev: Option<&str>) -> SnapCall<IoPaths> {
        match bdev {
            Some(name) => self.call("bdev_nvme_get_io_paths", ByName { name }),
            None => self.call_bare("bdev_nvme_get_io_paths"),
        }
    }

    /// `bdev_nvme_detach_controller {name, traddr, trsvcid}`: removes the paths of
    /// controller `name` to that address only (the bdevs stay while another path does).
    /// No such path is -6.
    pub fn bdev_nvme_detach_path(&self, name: &str, traddr: &str, trsvcid: &str) -> SnapCall<bool> {
        self.call(
            "bdev_nvme_detach_controller",
            DetachPath {
                name,
                traddr,
                trsvcid,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn io_paths_decode_spdk_v24_01_shape() {
        let answer = json!({"poll_groups": [{"thread": "app_thread", "io_paths": [
            {"bdev_name": "r0n1", "cntlid": 1, "current": true, "connected": true,
             "accessible": true,
             "transport": {"trtype": "TCP", "traddr": "127.0.0.1", "trsvcid": "4420",
                           "adrfam": "IPv4"}}]}]});
        let paths: IoPaths = serde_json::from_value(answer).expect("decodes");
        let path = &paths.poll_groups[0].io_paths[0];
        assert!(path.current && path.connected && path.accessible);
        assert_eq!(path.transport.trsvcid, "4420");
    }

    #[test]
    fn an_added_path_names_its_mode() {
        let params = AttachController {
            name: "r0".to_owned(),
            trtype: super::super::TransportType::Tcp,
            adrfam: super::super::AddressFamilyParam::Ipv4,
            traddr: "127.0.0.1".to_owned(),
            trsvcid: "4421".to_owned(),
            subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
            hostnqn: None,
            hdgst: false,
            ddgst: false,
            num_io_queues: None,
            ctrlr_loss_timeout_sec: None,
            reconnect_delay_sec: None,
            fast_io_fail_timeout_sec: None,
        };
        let value = serde_json::to_value(AttachPath {
            params: &params,
            multipath: MultipathMode::Multipath,
        })
        .expect("serialises");
        assert_eq!(value["multipath"], "multipath");
        assert_eq!(value["trsvcid"], "4421");
        assert_eq!(
            serde_json::to_value(MultipathPolicy::ActivePassive).expect("serialises"),
            "active_passive"
        );
    }
}
