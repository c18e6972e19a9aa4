//! Read-only listings a capture records beyond what the agent asks day to day: every NVMe
//! controller at once, SPDK's subsystems and each one's configuration
//! (`lib/init/subsystem_rpc.c` of SPDK v24.01: `framework_get_subsystems` takes no params,
//! `framework_get_config` takes `{name}`; docs/reference/storage.md). Apart from `bdev.rs`
//! so the methods the agent acts with stay separate from the ones only a capture reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{NvmeController, SnapCall, SnapClient};

/// One entry of `framework_get_subsystems`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FrameworkSubsystem {
    /// The subsystem's name (`bdev`, `nvmf`, `sock`, ...): what `framework_get_config`
    /// takes.
    pub subsystem: String,
    /// The subsystems it depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

#[derive(Serialize)]
struct ByName<'a> {
    name: &'a str,
}

impl SnapClient {
    /// `bdev_nvme_get_controllers` without a name: every attached NVMe controller with its
    /// paths.
    pub fn bdev_nvme_list_controllers(&self) -> SnapCall<Vec<NvmeController>> {
        self.call_bare("bdev_nvme_get_controllers")
    }

    /// `framework_get_subsystems`: SPDK's subsystems in initialisation order.
    pub fn framework_get_subsystems(&self) -> SnapCall<Vec<FrameworkSubsystem>> {
        self.call_bare("framework_get_subsystems")
    }

    /// `framework_get_config {name}`: the RPCs that would rebuild subsystem `name`'s
    /// current configuration, kept as SPDK wrote them (their shapes are each method's own).
    pub fn framework_get_config(&self, name: &str) -> SnapCall<Value> {
        self.call("framework_get_config", ByName { name })
    }
}
