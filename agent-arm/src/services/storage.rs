//! `dpu.v1.Storage`. Requests are fully validated here; the backends (SNAP JSON-RPC and
//! the kernel's nvmet/nvme-fabrics) that carry them out arrive with the nvmeof work, so a
//! valid request is answered `UNIMPLEMENTED` naming that area — never with a fake result.

use dpu_proto::names::{Collection, ControllerName, NamespaceName, SubsystemName};
use dpu_proto::v1::{self, storage_server::Storage};
use tonic::{Request, Response, Status};

use super::status::{invalid, invalid_field, not_yet};
use super::storage_validate as check;

const AREA: &str = "nvmeof: SNAP and kernel NVMe-oF backends";

/// Serves the storage API. Stateless until the backends land.
#[derive(Debug, Clone, Default)]
pub(crate) struct StorageService;

type Reply<T> = Result<Response<T>, Status>;

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

/// A stats target is a namespace, a controller or a volume.
fn stats_target(name: &str) -> Result<(), Status> {
    if name.starts_with("volumes/") {
        Collection::Volumes
            .parse(name)
            .map_err(invalid_field("name"))?;
    } else if name.contains("/namespaces/") {
        namespace_name(name)?;
    } else if name.contains("/controllers/") {
        controller_name("name", name)?;
    } else {
        return Err(invalid(
            "name",
            format!(
                "{name:?} is not a namespace, controller or volume name \
                 (subsystems/{{nqn}}/namespaces/{{nsid}}, subsystems/{{nqn}}/controllers/{{id}}, volumes/{{bdev}})"
            ),
        ));
    }
    Ok(())
}

#[tonic::async_trait]
impl Storage for StorageService {
    async fn create_remote_controller(
        &self,
        request: Request<v1::CreateRemoteControllerRequest>,
    ) -> Reply<v1::RemoteController> {
        let req = request.into_inner();
        check::client_id("remote_controller_id", &req.remote_controller_id)?;
        check::remote_spec("spec", req.spec.as_ref())?;
        Err(not_yet("Storage.CreateRemoteController", AREA))
    }

    async fn get_remote_controller(
        &self,
        request: Request<v1::GetRemoteControllerRequest>,
    ) -> Reply<v1::RemoteController> {
        Collection::RemoteControllers
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        Err(not_yet("Storage.GetRemoteController", AREA))
    }

    async fn list_remote_controllers(
        &self,
        _request: Request<v1::ListRemoteControllersRequest>,
    ) -> Reply<v1::ListRemoteControllersResponse> {
        Err(not_yet("Storage.ListRemoteControllers", AREA))
    }

    async fn delete_remote_controller(
        &self,
        request: Request<v1::DeleteRemoteControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        Collection::RemoteControllers
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        Err(not_yet("Storage.DeleteRemoteController", AREA))
    }

    async fn create_subsystem(
        &self,
        request: Request<v1::CreateSubsystemRequest>,
    ) -> Reply<v1::Subsystem> {
        check::subsystem(request.get_ref().subsystem.as_ref())?;
        Err(not_yet("Storage.CreateSubsystem", AREA))
    }

    async fn get_subsystem(
        &self,
        request: Request<v1::GetSubsystemRequest>,
    ) -> Reply<v1::Subsystem> {
        subsystem_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.GetSubsystem", AREA))
    }

    async fn list_subsystems(
        &self,
        _request: Request<v1::ListSubsystemsRequest>,
    ) -> Reply<v1::ListSubsystemsResponse> {
        Err(not_yet("Storage.ListSubsystems", AREA))
    }

    async fn delete_subsystem(
        &self,
        request: Request<v1::DeleteSubsystemRequest>,
    ) -> Reply<v1::DeleteResponse> {
        subsystem_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.DeleteSubsystem", AREA))
    }

    async fn create_namespace(
        &self,
        request: Request<v1::CreateNamespaceRequest>,
    ) -> Reply<v1::Namespace> {
        let req = request.into_inner();
        subsystem_name("parent", &req.parent)?;
        check::namespace(req.namespace.as_ref())?;
        Err(not_yet("Storage.CreateNamespace", AREA))
    }

    async fn get_namespace(
        &self,
        request: Request<v1::GetNamespaceRequest>,
    ) -> Reply<v1::Namespace> {
        namespace_name(&request.into_inner().name)?;
        Err(not_yet("Storage.GetNamespace", AREA))
    }

    async fn list_namespaces(
        &self,
        request: Request<v1::ListNamespacesRequest>,
    ) -> Reply<v1::ListNamespacesResponse> {
        subsystem_name("parent", &request.into_inner().parent)?;
        Err(not_yet("Storage.ListNamespaces", AREA))
    }

    async fn delete_namespace(
        &self,
        request: Request<v1::DeleteNamespaceRequest>,
    ) -> Reply<v1::DeleteResponse> {
        namespace_name(&request.into_inner().name)?;
        Err(not_yet("Storage.DeleteNamespace", AREA))
    }

    async fn create_controller(
        &self,
        request: Request<v1::CreateControllerRequest>,
    ) -> Reply<v1::Controller> {
        let req = request.into_inner();
        subsystem_name("parent", &req.parent)?;
        check::client_id("controller_id", &req.controller_id)?;
        check::controller("controller", req.controller.as_ref())?;
        Err(not_yet("Storage.CreateController", AREA))
    }

    async fn get_controller(
        &self,
        request: Request<v1::GetControllerRequest>,
    ) -> Reply<v1::Controller> {
        controller_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.GetController", AREA))
    }

    async fn list_controllers(
        &self,
        request: Request<v1::ListControllersRequest>,
    ) -> Reply<v1::ListControllersResponse> {
        subsystem_name("parent", &request.into_inner().parent)?;
        Err(not_yet("Storage.ListControllers", AREA))
    }

    async fn delete_controller(
        &self,
        request: Request<v1::DeleteControllerRequest>,
    ) -> Reply<v1::DeleteResponse> {
        controller_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.DeleteController", AREA))
    }

    async fn attach_namespace(
        &self,
        request: Request<v1::AttachNamespaceRequest>,
    ) -> Reply<v1::Controller> {
        let req = request.into_inner();
        controller_name("controller", &req.controller)?;
        dpu_proto::names::check_nsid(req.nsid).map_err(invalid_field("nsid"))?;
        Err(not_yet("Storage.AttachNamespace", AREA))
    }

    async fn detach_namespace(
        &self,
        request: Request<v1::DetachNamespaceRequest>,
    ) -> Reply<v1::Controller> {
        let req = request.into_inner();
        controller_name("controller", &req.controller)?;
        dpu_proto::names::check_nsid(req.nsid).map_err(invalid_field("nsid"))?;
        Err(not_yet("Storage.DetachNamespace", AREA))
    }

    async fn suspend_controller(
        &self,
        request: Request<v1::SuspendControllerRequest>,
    ) -> Reply<v1::Controller> {
        controller_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.SuspendController", AREA))
    }

    async fn resume_controller(
        &self,
        request: Request<v1::ResumeControllerRequest>,
    ) -> Reply<v1::Controller> {
        controller_name("name", &request.into_inner().name)?;
        Err(not_yet("Storage.ResumeController", AREA))
    }

    async fn apply_exposure(
        &self,
        request: Request<v1::ApplyExposureRequest>,
    ) -> Reply<v1::Exposure> {
        let req = request.into_inner();
        check::client_id("exposure_id", &req.exposure_id)?;
        check::exposure_spec(req.spec.as_ref())?;
        Err(not_yet("Storage.ApplyExposure", AREA))
    }

    async fn delete_exposure(
        &self,
        request: Request<v1::DeleteExposureRequest>,
    ) -> Reply<v1::DeleteResponse> {
        Collection::Exposures
            .parse(&request.into_inner().name)
            .map_err(invalid_field("name"))?;
        Err(not_yet("Storage.DeleteExposure", AREA))
    }

    async fn get_io_stats(&self, request: Request<v1::GetIoStatsRequest>) -> Reply<v1::IoStats> {
        stats_target(&request.into_inner().name)?;
        Err(not_yet("Storage.GetIoStats", AREA))
    }
}
