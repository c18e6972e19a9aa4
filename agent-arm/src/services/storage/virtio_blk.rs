//! The virtio-blk methods of `dpu.v1.Storage`: every field checked at the edge (a refusal
//! names it), then the storage engine's change (saved, converged, rolled back on failure),
//! and reads that combine the document with what SNAP reports now.

use dpu_proto::names::Collection;
use dpu_proto::v1;
use tonic::{Request, Response, Status};

use super::validate as check;
use super::{deleted, flat_id, not_found, Reply, StorageService, OBSERVE_DEADLINE};
use crate::security::audit_request;
use crate::services::status::{from_backend, invalid, invalid_field};
use crate::storage::desired::{split_volume_id, Key};
use crate::storage::virtio_blk;
use crate::storage::virtio_blk_doc::VirtioBlkDoc;

/// Virtqueues a controller may offer (the same bound as an NVMe controller's queues).
const MAX_QUEUES: u32 = 1024;
/// The largest virtqueue: the virtio spec's 32768 (`Queue Size`, a power of two for split
/// virtqueues).
const MAX_QUEUE_SIZE: u32 = 32768;
/// The virtio-blk device id is 20 bytes (`VIRTIO_BLK_ID_BYTES`).
const MAX_SERIAL: usize = 20;

/// Checks every field of a virtio-blk controller as asked for; gives the document entry.
fn wanted(ctrl: Option<&v1::VirtioBlkController>) -> Result<VirtioBlkDoc, Status> {
    let field = "virtio_blk_controller";
    let Some(ctrl) = ctrl else {
        return Err(invalid(field, "is required"));
    };
    check::function(&format!("{field}.function"), ctrl.function.as_ref())?;
    let volume = flat_id(Collection::Volumes, &ctrl.volume)
        .map_err(|_| invalid(&format!("{field}.volume"), "must be volumes/{id}"))?;
    if ctrl.num_queues > MAX_QUEUES {
        return Err(invalid(
            &format!("{field}.num_queues"),
            format!("must be at most {MAX_QUEUES}"),
        ));
    }
    if ctrl.queue_size > MAX_QUEUE_SIZE
        || (ctrl.queue_size != 0 && !ctrl.queue_size.is_power_of_two())
    {
        return Err(invalid(
            &format!("{field}.queue_size"),
            format!("must be a power of two up to {MAX_QUEUE_SIZE} (0: SNAP's default)"),
        ));
    }
    if ctrl.serial.len() > MAX_SERIAL
        || !ctrl
            .serial
            .bytes()
            .all(|b| b.is_ascii_graphic() || b == b' ')
    {
        return Err(invalid(
            &format!("{field}.serial"),
            format!("must be at most {MAX_SERIAL} printable ASCII characters"),
        ));
    }
    Ok(VirtioBlkDoc {
        function: ctrl.function.clone().unwrap_or_default(),
        volume,
        num_queues: ctrl.num_queues,
        queue_size: ctrl.queue_size,
        serial: ctrl.serial.clone(),
        backend: None,
    })
}

impl StorageService {
    /// What SNAP lists now, or `None` when it does not answer in time (the state is then
    /// unknown, not assumed).
    async fn virtio_blk_seen(&self) -> Option<Vec<dpu_nvmeof::snap::VirtioBlkSeen>> {
        match tokio::time::timeout(OBSERVE_DEADLINE, self.engine.virtio_blk_controllers()).await {
            Ok(Ok(list)) => Some(list),
            Ok(Err(e)) => {
                tracing::debug!(error = %e.describe(), "virtio-blk controllers unknown");
                None
            }
            Err(_) => None,
        }
    }

    async fn virtio_blk_reply(
        &self,
        doc: &crate::storage::desired::Desired,
        id: &str,
    ) -> Reply<v1::VirtioBlkController> {
        let ctrl = doc
            .virtio_blk_of(id)
            .ok_or_else(|| not_found(&Key::VirtioBlk(id.to_owned())))?;
        let seen = self.virtio_blk_seen().await;
        Ok(Response::new(virtio_blk::view(id, ctrl, seen.as_deref())))
    }

    pub(super) async fn create_virtio_blk(
        &self,
        request: Request<v1::CreateVirtioBlkControllerRequest>,
    ) -> Reply<v1::VirtioBlkController> {
        audit_request(&request);
        let req = request.into_inner();
        check::client_id("virtio_blk_controller_id", &req.virtio_blk_controller_id)?;
        let wanted = wanted(req.virtio_blk_controller.as_ref())?;
        // A volume not made by one of the agent's remote controllers must exist already.
        let doc = self.engine.snapshot().await;
        let from_remote =
            split_volume_id(&wanted.volume).is_some_and(|(remote, _)| doc.remote(remote).is_some());
        let volume_known = from_remote
            || self
                .engine
                .volumes()
                .await
                .map_err(|e| from_backend(&e))?
                .iter()
                .any(|v| v.id == wanted.volume);
        let id = req.virtio_blk_controller_id;
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                virtio_blk::create(doc, &id, wanted, volume_known)
            })
            .await?;
        self.virtio_blk_reply(&doc, &id).await
    }

    pub(super) async fn get_virtio_blk(
        &self,
        request: Request<v1::GetVirtioBlkControllerRequest>,
    ) -> Reply<v1::VirtioBlkController> {
        let id = Collection::VirtioBlkControllers
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?
            .id;
        let doc = self.engine.snapshot().await;
        self.virtio_blk_reply(&doc, &id).await
    }

    pub(super) async fn list_virtio_blk(
        &self,
        request: Request<v1::ListVirtioBlkControllersRequest>,
    ) -> Reply<v1::ListVirtioBlkControllersResponse> {
        let req = request.into_inner();
        let doc = self.engine.snapshot().await;
        let seen = self.virtio_blk_seen().await;
        let all = doc
            .virtio_blk
            .iter()
            .filter_map(|(id, e)| e.live().map(|c| virtio_blk::view(id, c, seen.as_deref())))
            .collect();
        let (virtio_blk_controllers, next_page_token) =
            crate::storage::view::page(all, |c| c.name.as_str(), req.page.as_ref());
        Ok(Response::new(v1::ListVirtioBlkControllersResponse {
            virtio_blk_controllers,
            next_page_token,
        }))
    }

    pub(super) async fn delete_virtio_blk(
        &self,
        request: Request<v1::DeleteVirtioBlkControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let id = Collection::VirtioBlkControllers
            .parse(&req.name)
            .map_err(invalid_field("name"))?
            .id;
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| Ok(virtio_blk::delete(doc, &id)))
            .await?;
        deleted(existed, req.allow_missing, &Key::VirtioBlk(id))
    }
}
