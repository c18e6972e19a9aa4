//! The one policy table: which role each RPC needs. An RPC without an entry is denied, and
//! a test fails when the API has a method this table does not name, so a new RPC cannot
//! ship open by accident.

use super::Role;

use Role::{Operator, Viewer};

/// Every `dpu.v1` method and the role it needs.
const POLICY: &[(&str, Role)] = &[
    ("/dpu.v1.Inventory/GetSystem", Viewer),
    ("/dpu.v1.Inventory/ListNetdevs", Viewer),
    ("/dpu.v1.Inventory/GetNetdev", Viewer),
    ("/dpu.v1.Inventory/ListRdmaDevices", Viewer),
    ("/dpu.v1.Inventory/GetRdmaDevice", Viewer),
    ("/dpu.v1.Inventory/ListPciFunctions", Viewer),
    ("/dpu.v1.Inventory/ListEmulationFunctions", Viewer),
    ("/dpu.v1.Inventory/GetFabricConfig", Viewer),
    ("/dpu.v1.Counters/Snapshot", Viewer),
    ("/dpu.v1.Counters/Watch", Viewer),
    ("/dpu.v1.Storage/CreateRemoteController", Operator),
    ("/dpu.v1.Storage/GetRemoteController", Viewer),
    ("/dpu.v1.Storage/ListRemoteControllers", Viewer),
    ("/dpu.v1.Storage/DeleteRemoteController", Operator),
    ("/dpu.v1.Storage/CreateSubsystem", Operator),
    ("/dpu.v1.Storage/GetSubsystem", Viewer),
    ("/dpu.v1.Storage/ListSubsystems", Viewer),
    ("/dpu.v1.Storage/DeleteSubsystem", Operator),
    ("/dpu.v1.Storage/CreateNamespace", Operator),
    ("/dpu.v1.Storage/GetNamespace", Viewer),
    ("/dpu.v1.Storage/ListNamespaces", Viewer),
    ("/dpu.v1.Storage/DeleteNamespace", Operator),
    ("/dpu.v1.Storage/CreateController", Operator),
    ("/dpu.v1.Storage/GetController", Viewer),
    ("/dpu.v1.Storage/ListControllers", Viewer),
    ("/dpu.v1.Storage/DeleteController", Operator),
    ("/dpu.v1.Storage/AttachNamespace", Operator),
    ("/dpu.v1.Storage/DetachNamespace", Operator),
    ("/dpu.v1.Storage/SuspendController", Operator),
    ("/dpu.v1.Storage/ResumeController", Operator),
    ("/dpu.v1.Storage/CreateVirtioBlkController", Operator),
    ("/dpu.v1.Storage/GetVirtioBlkController", Viewer),
    ("/dpu.v1.Storage/ListVirtioBlkControllers", Viewer),
    ("/dpu.v1.Storage/DeleteVirtioBlkController", Operator),
    ("/dpu.v1.Storage/ApplyExposure", Operator),
    ("/dpu.v1.Storage/GetExposure", Viewer),
    ("/dpu.v1.Storage/ListExposures", Viewer),
    ("/dpu.v1.Storage/DeleteExposure", Operator),
    ("/dpu.v1.Storage/SetVolumeQos", Operator),
    ("/dpu.v1.Storage/GetIoStats", Viewer),
    ("/dpu.v1.Switch/ListBridges", Viewer),
    ("/dpu.v1.Switch/GetBridge", Viewer),
    ("/dpu.v1.Switch/CreateBridge", Operator),
    ("/dpu.v1.Switch/DeleteBridge", Operator),
    ("/dpu.v1.Switch/ListPorts", Viewer),
    ("/dpu.v1.Switch/CreatePort", Operator),
    ("/dpu.v1.Switch/DeletePort", Operator),
    ("/dpu.v1.Switch/GetOffloadSettings", Viewer),
    ("/dpu.v1.Switch/UpdateOffloadSettings", Operator),
    ("/dpu.v1.Switch/ListFlows", Viewer),
    ("/dpu.v1.Switch/ListTcFilters", Viewer),
];

/// Services every connected caller may use: health checks and reflection describe the
/// API, they change and reveal nothing about the DPU.
const OPEN_SERVICES: &[&str] = &[
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

/// What `path` (`/package.Service/Method`) needs; `None` means deny: not in the table.
pub(crate) fn required_role(path: &str) -> Option<Role> {
    if OPEN_SERVICES.iter().any(|prefix| path.starts_with(prefix)) {
        return Some(Role::None);
    }
    POLICY
        .iter()
        .find(|(method, _)| *method == path)
        .map(|(_, role)| *role)
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    /// Every method of every `dpu.v1` service in the compiled API, as a gRPC path.
    fn api_methods() -> Vec<String> {
        let set = prost_types::FileDescriptorSet::decode(dpu_proto::FILE_DESCRIPTOR_SET)
            .expect("descriptor set");
        let mut paths = Vec::new();
        for file in set.file.iter().filter(|f| f.package() == "dpu.v1") {
            for service in &file.service {
                for method in &service.method {
                    paths.push(format!("/dpu.v1.{}/{}", service.name(), method.name()));
                }
            }
        }
        paths
    }

    #[test]
    fn every_rpc_of_the_api_has_a_policy_entry() {
        let methods = api_methods();
        assert!(methods.len() >= 40, "{methods:?}");
        let missing: Vec<&String> = methods
            .iter()
            .filter(|m| required_role(m).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "RPCs without a policy entry (denied to everyone): {missing:?}"
        );
        let stale: Vec<&str> = POLICY
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| !methods.iter().any(|x| x == m))
            .collect();
        assert!(
            stale.is_empty(),
            "policy entries for RPCs that do not exist: {stale:?}"
        );
    }

    #[test]
    fn reads_are_viewer_changes_are_operator_and_unknown_is_denied() {
        for (method, role) in POLICY {
            let name = method.rsplit('/').next().unwrap_or_default();
            let reads = ["Get", "List", "Snapshot", "Watch"]
                .iter()
                .any(|p| name.starts_with(p));
            assert_eq!(*role == Role::Viewer, reads, "{method} is {role:?}");
        }
        assert_eq!(required_role("/dpu.v1.Storage/FormatEverything"), None);
        assert_eq!(
            required_role("/grpc.health.v1.Health/Check"),
            Some(Role::None)
        );
    }
}
