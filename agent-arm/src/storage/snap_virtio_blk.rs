//! The SNAP side of virtio-blk controllers ([`super::virtio_blk`]): create on a free
//! virtio-blk function, list, destroy, in whichever dialect SNAP speaks
//! ([`dpu_nvmeof::snap::NvmeEmulation`]).

use dpu_nvmeof::snap::{SnapDialect, VirtioBlkParams, VirtioBlkSeen};

use super::backend::BackendError;
use super::snap::{
    decode_function, failed, missing_ok, nonempty, nonzero, FunctionKind, SnapBackend,
};
use super::virtio_blk::snap_name;
use super::virtio_blk_doc::{VirtioBlkBackend, VirtioBlkDoc};

impl SnapBackend {
    /// The name virtio-blk controller `id` gets in SNAP: SNAP 4 takes the agent's (`ctrl`),
    /// mlnx_snap 3 names its own (`None`).
    pub(crate) async fn virtio_blk_name(&self, id: &str) -> Result<Option<String>, BackendError> {
        let dialect = self.emulation().await?.dialect();
        Ok((dialect == SnapDialect::Snap4).then(|| snap_name(id)))
    }

    /// The virtio-blk controllers SNAP has.
    pub(crate) async fn list_virtio_blk(&self) -> Result<Vec<VirtioBlkSeen>, BackendError> {
        self.emulation()
            .await?
            .list_virtio_blk()
            .await
            .map_err(failed("list virtio-blk controllers"))
    }

    /// Creates virtio-blk controller `id`; on SNAP 4 after `emulation_function_list` shows
    /// its function as a free virtio-blk one (refused naming the function otherwise).
    pub(crate) async fn create_virtio_blk(
        &self,
        id: &str,
        doc: &VirtioBlkDoc,
    ) -> Result<VirtioBlkBackend, BackendError> {
        let function = decode_function(&doc.function)?;
        let emulation = self.emulation().await?;
        let name = (emulation.dialect() == SnapDialect::Snap4).then(|| snap_name(id));
        let host_bdf = match &name {
            Some(name) => {
                self.check_function_free(&function, name, FunctionKind::VirtioBlk)
                    .await?
            }
            None => None,
        };
        let params = VirtioBlkParams {
            name,
            function,
            bdev: doc.volume.clone(),
            num_queues: nonzero(doc.num_queues),
            queue_size: nonzero(doc.queue_size),
            serial: nonempty(&doc.serial).map(str::to_owned),
            emulation_manager: self.emulation_manager(),
        };
        let created = emulation
            .create_virtio_blk(&params)
            .await
            .map_err(failed(format!(
                "create virtio-blk controller {id} on volume {}",
                doc.volume
            )))?;
        Ok(VirtioBlkBackend {
            id: created,
            host_bdf,
        })
    }

    /// Destroys the virtio-blk controller SNAP names `name`; gone counts as done.
    pub(crate) async fn remove_virtio_blk(&self, name: &str) -> Result<(), BackendError> {
        missing_ok(
            self.emulation()
                .await?
                .destroy_virtio_blk(name)
                .await
                .map_err(failed(format!("delete virtio-blk controller {name}"))),
        )
    }
}
