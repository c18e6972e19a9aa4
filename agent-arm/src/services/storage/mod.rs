//! `dpu.v1.Storage`: trace (the server's span) → validate every field at the edge →
//! delegate to the storage engine (edit the desired document, converge the backend, roll
//! back on failure) → map to `Status`. Reads combine the document with what the backend
//! reports now (see `storage::view`).
//!
//! The agent lists what it manages: objects made on the DPU by other tools (snap_rpc.py)
//! are not in the desired document and are not shown, so a `dpuctl storage list` never
//! offers to delete something the agent did not create.

use std::sync::Arc;

use dpu_proto::names::{Collection, ControllerName, NamespaceName, SubsystemName};
use dpu_proto::v1::{self, storage_server::Storage};
use tonic::{Request, Response, Status};

use crate::security::audit_request;

use self::validate as check;
use crate::services::status::{echo, invalid, invalid_field};
use crate::storage::backend::FailureKind;
use crate::storage::desired::{
    split_volume_id, ControllerDoc, Desired, Key, NamespaceDoc, SubsystemDoc,
};
use crate::storage::edit;
use crate::storage::error::StorageError;
use crate::storage::uplink::{self, RouteLookup};
use crate::storage::view::{self, Observed};
use crate::storage::StorageEngine;

mod validate;
mod virtio_blk;

/// How long a listing waits for the backend's view of what exists before it answers with
/// the desired state and the backend's silence as the `detail`: a hung SNAP must not make
/// reads of the agent's own state hang.
const OBSERVE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves the storage API over the shared engine.
#[derive(Debug, Clone)]
pub(crate) struct StorageService {
    engine: Arc<StorageEngine>,
    routes: RouteLookup,
}

impl StorageService {
    pub(crate) fn new(engine: Arc<StorageEngine>, routes: RouteLookup) -> Self {
        Self { engine, routes }
    }

    /// A remote controller as the API shows it, with the uplinks its addresses are routed
    /// out of (`status.uplinks`).
    async fn remote_view(
        &self,
        doc: &Desired,
        id: &str,
        spec: &v1::RemoteControllerSpec,
        seen: &Observed,
    ) -> v1::RemoteController {
        let mut shown = view::remote_controller(doc, id, spec, seen);
        if let Some(status) = shown.status.as_mut() {
            status.uplinks = uplink::uplinks(self.routes, spec).await;
            match tokio::time::timeout(OBSERVE_DEADLINE, self.engine.remote_paths(id, spec)).await {
                Ok(Ok(paths)) => status.paths = paths,
                Ok(Err(e)) => tracing::debug!(remote = id, error = %e.describe(), "paths unknown"),
                Err(_) => tracing::debug!(remote = id, "paths: the backend did not answer in time"),
            }
        }
        shown
    }

    /// What the backend reports now; a failure is kept as a `detail`, not an error, so a
    /// listing still shows the desired objects while SNAP is down.
    async fn observe(&self) -> Observed {
        let mut seen = Observed::default();
        let late = || format!("the storage backend did not answer within {OBSERVE_DEADLINE:?}");
        match tokio::time::timeout(OBSERVE_DEADLINE, self.engine.volumes_with_identities()).await {
            Ok(Ok(v)) => seen.volumes = Some(v),
            Ok(Err(e)) => seen.problem = Some(e.describe()),
            Err(_) => {
                // A hung backend answers the next query late too: report, don't wait again.
                seen.problem = Some(late());
                return seen;
            }
        }
        match tokio::time::timeout(OBSERVE_DEADLINE, self.engine.controllers()).await {
            Ok(Ok(c)) => seen.controllers = Some(c),
            Ok(Err(e)) if e.kind == FailureKind::Unsupported => seen.controllers = Some(Vec::new()),
            Ok(Err(e)) => seen.problem = Some(e.describe()),
            Err(_) => seen.problem = Some(late()),
        }
        seen
    }

    async fn change(
        &self,
        options: Option<&v1::ApplyOptions>,
        edit: impl FnOnce(&mut Desired) -> Result<edit::Touched, StorageError>,
    ) -> Result<(Desired, bool), Status> {
        let dry_run = options.is_some_and(|o| o.dry_run);
        let timeout = match options {
            Some(options) => crate::services::status::apply_timeout(options)?,
            None => None,
        };
        let applied = self.engine.change(dry_run, timeout, edit).await?;
        Ok((applied.doc, applied.changed))
    }

    /// Suspend or resume: the same edit either way.
    async fn set_running(
        &self,
        name: &str,
        options: Option<&v1::ApplyOptions>,
        running: bool,
    ) -> Reply<v1::Controller> {
        let name = controller_name("name", name)?;
        let (nqn, id) = (name.subsystem.nqn, name.id);
        let (doc, _) = self
            .change(options, |doc| edit::set_running(doc, &nqn, &id, running))
            .await?;
        self.controller_reply(&doc, &nqn, &id).await
    }

    /// Attach or detach: the same checks and reply either way, `edit` deciding which.
    async fn change_namespace(
        &self,
        controller: &str,
        nsid: u32,
        options: Option<&v1::ApplyOptions>,
        edit: fn(&mut Desired, &str, &str, u32) -> Result<edit::Touched, StorageError>,
    ) -> Reply<v1::Controller> {
        let name = controller_name("controller", controller)?;
        dpu_proto::names::check_nsid(nsid).map_err(invalid_field("nsid"))?;
        let (nqn, id) = (name.subsystem.nqn, name.id);
        let (doc, _) = self
            .change(options, |doc| edit(doc, &nqn, &id, nsid))
            .await?;
        self.controller_reply(&doc, &nqn, &id).await
    }

    async fn controller_reply(&self, doc: &Desired, nqn: &str, id: &str) -> Reply<v1::Controller> {
        let ctrl = doc
            .controller(nqn, id)
            .ok_or_else(|| not_found(&Key::Controller(nqn.to_owned(), id.to_owned())))?;
        let seen = self.observe().await;
        Ok(Response::new(view::controller(nqn, id, ctrl, &seen)))
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn not_found(key: &Key) -> Status {
    Status::not_found(format!("{key} does not exist"))
}

/// A Delete answer: `deleted` is false only for a missing object with `allow_missing`.
fn deleted(existed: bool, allow_missing: bool, key: &Key) -> Reply<v1::DeleteResponse> {
    if !existed && !allow_missing {
        return Err(not_found(key));
    }
    Ok(Response::new(v1::DeleteResponse { deleted: existed }))
}

fn subsystem_name(field: &'static str, name: &str) -> Result<SubsystemName, Status> {
    let parsed = SubsystemName::parse(name).map_err(invalid_field(field))?;
    check::nqn(field, &parsed.nqn)?;
    Ok(parsed)
}

fn namespace_name(name: &str) -> Result<NamespaceName, Status> {
    let parsed = NamespaceName::parse(name).map_err(invalid_field("name"))?;
    check::nqn("name", &parsed.subsystem.nqn)?;
    Ok(parsed)
}

fn controller_name(field: &'static str, name: &str) -> Result<ControllerName, Status> {
    let parsed = ControllerName::parse(name).map_err(invalid_field(field))?;
    check::nqn(field, &parsed.subsystem.nqn)?;
    Ok(parsed)
}

fn flat_id(collection: Collection, name: &str) -> Result<String, Status> {
    Ok(collection.parse(name).map_err(invalid_field("name"))?.id)
}

/// What a stats request names.
enum StatsTarget {
    Volume(String),
    Namespace(NamespaceName),
    Controller(ControllerName),
}

/// A stats target is a namespace, a controller or a volume.
fn stats_target(name: &str) -> Result<StatsTarget, Status> {
    if name.starts_with("volumes/") {
        Ok(StatsTarget::Volume(flat_id(Collection::Volumes, name)?))
    } else if name.contains("/namespaces/") {
        Ok(StatsTarget::Namespace(namespace_name(name)?))
    } else if name.contains("/controllers/") {
        Ok(StatsTarget::Controller(controller_name("name", name)?))
    } else {
        Err(invalid(
            "name",
            format!(
                "{} is not a namespace, controller or volume name \
                 (subsystems/{{nqn}}/namespaces/{{nsid}}, subsystems/{{nqn}}/controllers/{{id}}, volumes/{{bdev}})",
                echo(name)
            ),
        ))
    }
}

fn now() -> Option<dpu_proto::pbjson_types::Timestamp> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(dpu_proto::pbjson_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    })
}

#[tonic::async_trait]
impl Storage for StorageService {
    async fn create_remote_controller(
        &self,
        request: Request<v1::CreateRemoteControllerRequest>,
    ) -> Reply<v1::RemoteController> {
        audit_request(&request);
        let req = request.into_inner();
        check::client_id("remote_controller_id", &req.remote_controller_id)?;
        check::remote_spec("spec", req.spec.as_ref())?;
        let id = req.remote_controller_id;
        let spec = req.spec.unwrap_or_default();
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::create_remote(doc, &id, &spec)
            })
            .await?;
        let spec = doc.remote(&id).cloned().unwrap_or(spec);
        let seen = self.observe().await;
        Ok(Response::new(
            self.remote_view(&doc, &id, &spec, &seen).await,
        ))
    }

    async fn get_remote_controller(
        &self,
        request: Request<v1::GetRemoteControllerRequest>,
    ) -> Reply<v1::RemoteController> {
        let id = flat_id(Collection::RemoteControllers, &request.into_inner().name)?;
        let doc = self.engine.snapshot().await;
        let spec = doc.remote(&id).cloned();
        let spec = spec.ok_or_else(|| not_found(&Key::Remote(id.clone())))?;
        let seen = self.observe().await;
        Ok(Response::new(
            self.remote_view(&doc, &id, &spec, &seen).await,
        ))
    }

    async fn list_remote_controllers(
        &self,
        request: Request<v1::ListRemoteControllersRequest>,
    ) -> Reply<v1::ListRemoteControllersResponse> {
        let doc = self.engine.snapshot().await;
        let seen = self.observe().await;
        let mut all: Vec<v1::RemoteController> = Vec::new();
        for (id, entry) in &doc.remotes {
            if let Some(spec) = entry.live() {
                all.push(self.remote_view(&doc, id, spec, &seen).await);
            }
        }
        let (remote_controllers, next_page_token) =
            view::page(all, |r| r.name.as_str(), request.get_ref().page.as_ref());
        Ok(Response::new(v1::ListRemoteControllersResponse {
            remote_controllers,
            next_page_token,
        }))
    }

    async fn delete_remote_controller(
        &self,
        request: Request<v1::DeleteRemoteControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let id = flat_id(Collection::RemoteControllers, &req.name)?;
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| edit::delete_remote(doc, &id))
            .await?;
        deleted(existed, req.allow_missing, &Key::Remote(id))
    }

    async fn create_subsystem(
        &self,
        request: Request<v1::CreateSubsystemRequest>,
    ) -> Reply<v1::Subsystem> {
        audit_request(&request);
        let req = request.into_inner();
        check::subsystem(req.subsystem.as_ref())?;
        let sub = req.subsystem.unwrap_or_default();
        let nqn = sub.nqn.clone();
        let wanted = SubsystemDoc {
            serial_number: sub.serial_number,
            model_number: sub.model_number,
            max_namespaces: sub.max_namespaces,
        };
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::create_subsystem(doc, &nqn, wanted.clone())
            })
            .await?;
        let sub = doc.subsystem(&nqn).cloned().unwrap_or(wanted);
        Ok(Response::new(view::subsystem(&doc, &nqn, &sub)))
    }

    async fn get_subsystem(
        &self,
        request: Request<v1::GetSubsystemRequest>,
    ) -> Reply<v1::Subsystem> {
        let nqn = subsystem_name("name", &request.into_inner().name)?.nqn;
        let doc = self.engine.snapshot().await;
        let sub = doc
            .subsystem(&nqn)
            .ok_or_else(|| not_found(&Key::Subsystem(nqn.clone())))?;
        Ok(Response::new(view::subsystem(&doc, &nqn, sub)))
    }

    async fn list_subsystems(
        &self,
        request: Request<v1::ListSubsystemsRequest>,
    ) -> Reply<v1::ListSubsystemsResponse> {
        let all: Vec<v1::Subsystem> = {
            let doc = self.engine.snapshot().await;
            doc.subsystems
                .iter()
                .filter_map(|(nqn, e)| e.live().map(|sub| view::subsystem(&doc, nqn, sub)))
                .collect()
        };
        let (subsystems, next_page_token) =
            view::page(all, |s| s.name.as_str(), request.get_ref().page.as_ref());
        Ok(Response::new(v1::ListSubsystemsResponse {
            subsystems,
            next_page_token,
        }))
    }

    async fn delete_subsystem(
        &self,
        request: Request<v1::DeleteSubsystemRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let nqn = subsystem_name("name", &req.name)?.nqn;
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| {
                edit::delete_subsystem(doc, &nqn)
            })
            .await?;
        deleted(existed, req.allow_missing, &Key::Subsystem(nqn))
    }

    async fn create_namespace(
        &self,
        request: Request<v1::CreateNamespaceRequest>,
    ) -> Reply<v1::Namespace> {
        audit_request(&request);
        let req = request.into_inner();
        let nqn = subsystem_name("parent", &req.parent)?.nqn;
        check::namespace(req.namespace.as_ref())?;
        let ns = req.namespace.unwrap_or_default();
        let volume = flat_id(Collection::Volumes, &ns.volume)
            .map_err(|_| invalid("namespace.volume", "must be volumes/{id}"))?;
        let wanted = NamespaceDoc {
            volume: volume.clone(),
            uuid: ns.uuid,
            nguid: ns.nguid,
            eui64: ns.eui64,
        };
        // A volume not made by one of the agent's remote controllers must exist already.
        let doc = self.engine.snapshot().await;
        let from_remote =
            split_volume_id(&volume).is_some_and(|(remote, _)| doc.remote(remote).is_some());
        let volume_known = from_remote
            || self
                .engine
                .volumes()
                .await
                .map_err(|e| crate::services::status::from_backend(&e))?
                .iter()
                .any(|v| v.id == volume);
        let nsid = ns.nsid;
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::create_namespace(doc, &nqn, nsid, wanted.clone(), volume_known)
            })
            .await?;
        let ns = doc.namespace(&nqn, nsid).cloned().unwrap_or(wanted);
        Ok(Response::new(view::namespace(
            &doc,
            &nqn,
            nsid,
            &ns,
            &self.observe().await,
        )))
    }

    async fn get_namespace(
        &self,
        request: Request<v1::GetNamespaceRequest>,
    ) -> Reply<v1::Namespace> {
        let name = namespace_name(&request.into_inner().name)?;
        let (nqn, nsid) = (name.subsystem.nqn, name.nsid);
        let doc = self.engine.snapshot().await;
        let ns = doc
            .namespace(&nqn, nsid)
            .ok_or_else(|| not_found(&Key::Namespace(nqn.clone(), nsid)))?;
        Ok(Response::new(view::namespace(
            &doc,
            &nqn,
            nsid,
            ns,
            &self.observe().await,
        )))
    }

    async fn list_namespaces(
        &self,
        request: Request<v1::ListNamespacesRequest>,
    ) -> Reply<v1::ListNamespacesResponse> {
        let req = request.into_inner();
        let nqn = subsystem_name("parent", &req.parent)?.nqn;
        let doc = self.engine.snapshot().await;
        if doc.subsystem(&nqn).is_none() {
            return Err(not_found(&Key::Subsystem(nqn)));
        }
        let seen = self.observe().await;
        let all = doc
            .namespaces_of(&nqn)
            .map(|(nsid, ns)| view::namespace(&doc, &nqn, nsid, ns, &seen))
            .collect();
        let (namespaces, next_page_token) = view::page(all, |n| n.name.as_str(), req.page.as_ref());
        Ok(Response::new(v1::ListNamespacesResponse {
            namespaces,
            next_page_token,
        }))
    }

    async fn delete_namespace(
        &self,
        request: Request<v1::DeleteNamespaceRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let name = namespace_name(&req.name)?;
        let (nqn, nsid) = (name.subsystem.nqn, name.nsid);
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| {
                edit::delete_namespace(doc, &nqn, nsid)
            })
            .await?;
        deleted(existed, req.allow_missing, &Key::Namespace(nqn, nsid))
    }

    async fn create_controller(
        &self,
        request: Request<v1::CreateControllerRequest>,
    ) -> Reply<v1::Controller> {
        audit_request(&request);
        let req = request.into_inner();
        let nqn = subsystem_name("parent", &req.parent)?.nqn;
        check::client_id("controller_id", &req.controller_id)?;
        check::controller("controller", req.controller.as_ref())?;
        let ctrl = req.controller.unwrap_or_default();
        let wanted = ControllerDoc {
            function: ctrl.function.unwrap_or_default(),
            num_queues: ctrl.num_queues,
            mdts: ctrl.mdts,
            ..ControllerDoc::default()
        };
        let id = req.controller_id;
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::create_controller(doc, &nqn, &id, wanted)
            })
            .await?;
        self.controller_reply(&doc, &nqn, &id).await
    }

    async fn get_controller(
        &self,
        request: Request<v1::GetControllerRequest>,
    ) -> Reply<v1::Controller> {
        let name = controller_name("name", &request.into_inner().name)?;
        let doc = self.engine.snapshot().await;
        self.controller_reply(&doc, &name.subsystem.nqn, &name.id)
            .await
    }

    async fn list_controllers(
        &self,
        request: Request<v1::ListControllersRequest>,
    ) -> Reply<v1::ListControllersResponse> {
        let req = request.into_inner();
        let nqn = subsystem_name("parent", &req.parent)?.nqn;
        let doc = self.engine.snapshot().await;
        if doc.subsystem(&nqn).is_none() {
            return Err(not_found(&Key::Subsystem(nqn)));
        }
        let seen = self.observe().await;
        let all = doc
            .controllers_of(&nqn)
            .map(|(id, c)| view::controller(&nqn, id, c, &seen))
            .collect();
        let (controllers, next_page_token) =
            view::page(all, |c| c.name.as_str(), req.page.as_ref());
        Ok(Response::new(v1::ListControllersResponse {
            controllers,
            next_page_token,
        }))
    }

    async fn delete_controller(
        &self,
        request: Request<v1::DeleteControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let name = controller_name("name", &req.name)?;
        let (nqn, id) = (name.subsystem.nqn, name.id);
        let force = req.force;
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| {
                edit::delete_controller(doc, &nqn, &id, force)
            })
            .await?;
        deleted(existed, req.allow_missing, &Key::Controller(nqn, id))
    }

    async fn attach_namespace(
        &self,
        request: Request<v1::AttachNamespaceRequest>,
    ) -> Reply<v1::Controller> {
        audit_request(&request);
        let req = request.into_inner();
        self.change_namespace(
            &req.controller,
            req.nsid,
            req.options.as_ref(),
            edit::attach,
        )
        .await
    }

    async fn detach_namespace(
        &self,
        request: Request<v1::DetachNamespaceRequest>,
    ) -> Reply<v1::Controller> {
        audit_request(&request);
        let req = request.into_inner();
        self.change_namespace(
            &req.controller,
            req.nsid,
            req.options.as_ref(),
            edit::detach,
        )
        .await
    }

    async fn suspend_controller(
        &self,
        request: Request<v1::SuspendControllerRequest>,
    ) -> Reply<v1::Controller> {
        audit_request(&request);
        let req = request.into_inner();
        self.set_running(&req.name, req.options.as_ref(), false)
            .await
    }

    async fn resume_controller(
        &self,
        request: Request<v1::ResumeControllerRequest>,
    ) -> Reply<v1::Controller> {
        audit_request(&request);
        let req = request.into_inner();
        self.set_running(&req.name, req.options.as_ref(), true)
            .await
    }

    async fn create_virtio_blk_controller(
        &self,
        request: Request<v1::CreateVirtioBlkControllerRequest>,
    ) -> Reply<v1::VirtioBlkController> {
        self.create_virtio_blk(request).await
    }

    async fn get_virtio_blk_controller(
        &self,
        request: Request<v1::GetVirtioBlkControllerRequest>,
    ) -> Reply<v1::VirtioBlkController> {
        self.get_virtio_blk(request).await
    }

    async fn list_virtio_blk_controllers(
        &self,
        request: Request<v1::ListVirtioBlkControllersRequest>,
    ) -> Reply<v1::ListVirtioBlkControllersResponse> {
        self.list_virtio_blk(request).await
    }

    async fn delete_virtio_blk_controller(
        &self,
        request: Request<v1::DeleteVirtioBlkControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        self.delete_virtio_blk(request).await
    }

    async fn apply_exposure(
        &self,
        request: Request<v1::ApplyExposureRequest>,
    ) -> Reply<v1::Exposure> {
        audit_request(&request);
        let req = request.into_inner();
        check::client_id("exposure_id", &req.exposure_id)?;
        check::exposure_spec(req.spec.as_ref())?;
        let id = req.exposure_id;
        let spec = req.spec.unwrap_or_default();
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::apply_exposure(doc, &id, &spec)
            })
            .await?;
        Ok(Response::new(view::exposure(
            &doc,
            &id,
            &spec,
            &self.observe().await,
        )))
    }

    async fn get_exposure(&self, request: Request<v1::GetExposureRequest>) -> Reply<v1::Exposure> {
        let id = flat_id(Collection::Exposures, &request.into_inner().name)?;
        let doc = self.engine.snapshot().await;
        let spec = doc
            .exposures
            .get(&id)
            .ok_or_else(|| Status::not_found(format!("exposures/{id} does not exist")))?;
        Ok(Response::new(view::exposure(
            &doc,
            &id,
            spec,
            &self.observe().await,
        )))
    }

    async fn list_exposures(
        &self,
        request: Request<v1::ListExposuresRequest>,
    ) -> Reply<v1::ListExposuresResponse> {
        let doc = self.engine.snapshot().await;
        let seen = self.observe().await;
        let all = doc
            .exposures
            .iter()
            .map(|(id, spec)| view::exposure(&doc, id, spec, &seen))
            .collect();
        let (exposures, next_page_token) =
            view::page(all, |e| e.name.as_str(), request.get_ref().page.as_ref());
        Ok(Response::new(v1::ListExposuresResponse {
            exposures,
            next_page_token,
        }))
    }

    async fn delete_exposure(
        &self,
        request: Request<v1::DeleteExposureRequest>,
    ) -> Reply<v1::DeleteResponse> {
        audit_request(&request);
        let req = request.into_inner();
        let id = flat_id(Collection::Exposures, &req.name)?;
        let (_, existed) = self
            .change(req.options.as_ref(), |doc| edit::delete_exposure(doc, &id))
            .await?;
        if !existed && !req.allow_missing {
            return Err(Status::not_found(format!("exposures/{id} does not exist")));
        }
        Ok(Response::new(v1::DeleteResponse { deleted: existed }))
    }

    async fn set_volume_qos(&self, request: Request<v1::SetVolumeQosRequest>) -> Reply<v1::Volume> {
        audit_request(&request);
        let req = request.into_inner();
        let volume = Collection::Volumes
            .parse(&req.volume)
            .map_err(invalid_field("volume"))?
            .id;
        let limits = check::qos_limits("limits", req.limits.as_ref())?;
        let (doc, _) = self
            .change(req.options.as_ref(), |doc| {
                edit::set_volume_qos(doc, &volume, limits)
            })
            .await?;
        // The volume as the backend reports it now, with the limits it reports in force;
        // only the asked-for limits where it does not list the volume (a dry run of a
        // volume not attached yet, a backend that is away).
        let seen = self.observe().await;
        let found = seen
            .volumes
            .iter()
            .flatten()
            .find(|v| v.id == volume)
            .map(|v| view::volume(&doc, v));
        Ok(Response::new(found.unwrap_or_else(|| v1::Volume {
            name: format!("volumes/{volume}"),
            remote_nsid: split_volume_id(&volume).map_or(0, |(_, nsid)| nsid),
            qos: doc.qos_of(&volume).map(view::qos_limits),
            ..v1::Volume::default()
        })))
    }

    async fn get_io_stats(&self, request: Request<v1::GetIoStatsRequest>) -> Reply<v1::IoStats> {
        let name = request.into_inner().name;
        let volumes: Vec<String> = {
            let doc = self.engine.snapshot().await;
            match stats_target(&name)? {
                StatsTarget::Volume(id) => vec![id],
                StatsTarget::Namespace(ns) => {
                    let key = Key::Namespace(ns.subsystem.nqn.clone(), ns.nsid);
                    let found = doc
                        .namespace(&ns.subsystem.nqn, ns.nsid)
                        .ok_or_else(|| not_found(&key))?;
                    vec![found.volume.clone()]
                }
                StatsTarget::Controller(c) => {
                    let nqn = c.subsystem.nqn;
                    let ctrl = doc
                        .controller(&nqn, &c.id)
                        .ok_or_else(|| not_found(&Key::Controller(nqn.clone(), c.id.clone())))?;
                    ctrl.attached
                        .iter()
                        .filter_map(|nsid| doc.namespace(&nqn, *nsid).map(|ns| ns.volume.clone()))
                        .collect()
                }
            }
        };
        let mut stats = v1::IoStats {
            name,
            taken_at: now(),
            ..v1::IoStats::default()
        };
        let mut sources = Vec::new();
        for volume in &volumes {
            let io = self
                .engine
                .volume_io(volume)
                .await
                .map_err(|e| crate::services::status::from_backend(&e))?;
            stats.bytes_read += io.bytes_read;
            stats.read_ops += io.read_ops;
            stats.bytes_written += io.bytes_written;
            stats.write_ops += io.write_ops;
            stats.bytes_unmapped += io.bytes_unmapped;
            stats.unmap_ops += io.unmap_ops;
            stats.read_latency_ticks += io.read_latency_ticks;
            stats.write_latency_ticks += io.write_latency_ticks;
            stats.unmap_latency_ticks += io.unmap_latency_ticks;
            stats.tick_rate_hz = io.tick_rate_hz;
            sources.push(format!("{}({volume})", io.source));
        }
        stats.source = sources.join(" + ");
        Ok(Response::new(stats))
    }
}
