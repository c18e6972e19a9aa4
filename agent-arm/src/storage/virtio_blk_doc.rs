//! A virtio-blk controller as the desired document stores it: a leaf, so the document
//! ([`super::desired`]), the rules ([`super::virtio_blk`]) and the backends can all name it
//! without importing one another.

use dpu_proto::v1;
use serde::{Deserialize, Serialize};

/// The backend's own handle on a virtio-blk controller, learnt when it was created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VirtioBlkBackend {
    /// SNAP's controller name (SNAP 4: the `ctrl` the agent gave; SNAP 3: `VblkEmu…`).
    pub(crate) id: String,
    /// The host PCI address (`bb:dd.f`) SNAP 4's `emulation_function_list` gave for the
    /// function at creation; none where SNAP did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host_bdf: Option<String>,
}

/// A virtio-blk controller as asked for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct VirtioBlkDoc {
    pub(crate) function: v1::EmulationFunction,
    /// The backing volume's id (bdev name, without `volumes/`).
    pub(crate) volume: String,
    #[serde(default)]
    pub(crate) num_queues: u32,
    #[serde(default)]
    pub(crate) queue_size: u32,
    #[serde(default)]
    pub(crate) serial: String,
    /// Filled in once the backend created it; not part of what the operator asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) backend: Option<VirtioBlkBackend>,
}

impl VirtioBlkDoc {
    /// The fields that differ from `other` as asked for (what only the backend decided is
    /// ignored), for a refusal that names them; empty when it is the same request.
    pub(crate) fn differences(&self, other: &Self) -> Vec<&'static str> {
        let mut fields = Vec::new();
        if self.function != other.function {
            fields.push("function");
        }
        if self.volume != other.volume {
            fields.push("volume");
        }
        if self.num_queues != other.num_queues {
            fields.push("num_queues");
        }
        if self.queue_size != other.queue_size {
            fields.push("queue_size");
        }
        if self.serial != other.serial {
            fields.push("serial");
        }
        fields
    }
}
