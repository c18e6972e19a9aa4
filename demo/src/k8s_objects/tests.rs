//! The objects for both training APIs and for serving: API versions, kinds, replica
//! counts, resources, labels; and their YAML parses back to the same values.

use super::*;
use crate::plan::tests::example;
use crate::yaml::{tests::pyyaml_load_all, to_yaml};

/// The run id used throughout.
fn run() -> RunId {
    RunId::new("20261130-050745").unwrap_or_else(|e| panic!("{e}"))
}

/// The only container of a pod template.
fn container(template: &Value) -> &Value {
    let containers = template["spec"]["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("no containers in {template}"));
    assert_eq!(containers.len(), 1);
    &containers[0]
}

/// Asserts the run labels on an object's metadata.
fn assert_run_labels(object: &Value) {
    let labels = &object["metadata"]["labels"];
    assert_eq!(labels[MANAGED_BY_LABEL], "dpuctl", "{object}");
    assert_eq!(labels[RUN_ID_LABEL], "20261130-050745", "{object}");
}

#[test]
fn pytorch_job_has_master_and_workers() {
    let mut plan = example();
    plan.training.workers = 3;
    let job = pytorch_job(&plan, &run());
    assert_eq!(job["apiVersion"], "kubeflow.org/v1");
    assert_eq!(job["kind"], "PyTorchJob");
    assert_eq!(job["metadata"]["name"], "dpuctl-train-20261130-050745");
    assert_eq!(job["metadata"]["namespace"], "dpu-demo");
    assert_run_labels(&job);
    let specs = &job["spec"]["pytorchReplicaSpecs"];
    assert_eq!(specs["Master"]["replicas"], 1);
    assert_eq!(specs["Worker"]["replicas"], 2);
    assert_eq!(job["spec"]["nprocPerNode"], "1");
    assert_eq!(job["spec"]["runPolicy"]["activeDeadlineSeconds"], 45 * 60);
    for role in ["Master", "Worker"] {
        let spec = &specs[role];
        assert_eq!(spec["restartPolicy"], "OnFailure");
        assert_eq!(
            spec["template"]["metadata"]["labels"][RUN_ID_LABEL],
            "20261130-050745"
        );
        let c = container(&spec["template"]);
        assert_eq!(c["name"], "pytorch");
        assert_eq!(c["image"], "nvcr.io/nvidia/pytorch:25.01-py3");
        assert_eq!(c["command"][0], "python");
        let limits = &c["resources"]["limits"];
        assert_eq!(limits["nvidia.com/gpu"], "1");
        assert_eq!(limits["rdma/rdma_shared_device_a"], "1");
        assert_eq!(c["securityContext"]["capabilities"]["add"][0], "IPC_LOCK");
        let env = c["env"].as_array().cloned().unwrap_or_default();
        let value = |name: &str| {
            env.iter()
                .find(|e| e["name"] == name)
                .map(|e| e["value"].clone())
        };
        assert_eq!(value("NCCL_DEBUG"), Some(json!("INFO")));
        assert_eq!(value("NCCL_IB_HCA"), Some(json!("mlx5_0")));
        assert_eq!(value("NCCL_SOCKET_IFNAME"), Some(json!("eth0")));
        assert_eq!(value("NCCL_IB_DISABLE"), None);
        let volumes = &spec["template"]["spec"]["volumes"];
        assert_eq!(volumes[0]["emptyDir"]["medium"], "Memory");
        assert_eq!(volumes[1]["hostPath"]["path"], "/mnt/nvme-demo/shared");
        assert_eq!(volumes[1]["hostPath"]["type"], "Directory");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/dev/shm");
        assert_eq!(c["volumeMounts"][1]["mountPath"], "/mnt/nvme-demo/shared");
        let terms = &spec["template"]["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(
            terms[0]["matchExpressions"][0]["values"],
            json!(["gpu-node-a", "gpu-node-b"])
        );
    }
}

#[test]
fn single_worker_pytorch_job_has_no_worker_spec() {
    let mut plan = example();
    plan.training.workers = 1;
    let job = pytorch_job(&plan, &run());
    let specs = job["spec"]["pytorchReplicaSpecs"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(specs.keys().collect::<Vec<_>>(), ["Master"]);
}

#[test]
fn train_job_uses_runtime_ref_and_trainer() {
    let mut plan = example();
    plan.training.api = TrainingApi::TrainJob;
    plan.training.runtime_ref = Some("torch-distributed".to_owned());
    plan.training.gpus_per_worker = 4;
    let job = training_job(&plan, &run());
    assert_eq!(job["apiVersion"], "trainer.kubeflow.org/v1alpha1");
    assert_eq!(job["kind"], "TrainJob");
    assert_run_labels(&job);
    assert_eq!(job["spec"]["runtimeRef"]["name"], "torch-distributed");
    assert_eq!(job["spec"]["runtimeRef"]["kind"], "ClusterTrainingRuntime");
    let trainer = &job["spec"]["trainer"];
    assert_eq!(trainer["numNodes"], 2);
    assert_eq!(trainer["numProcPerNode"], 4);
    assert_eq!(trainer["image"], "nvcr.io/nvidia/pytorch:25.01-py3");
    assert_eq!(
        trainer["command"][1],
        "/mnt/nvme-demo/shared/train_qlora.py"
    );
    assert_eq!(trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"], "4");
    assert_eq!(
        trainer["resourcesPerNode"]["limits"]["rdma/rdma_shared_device_a"],
        "1"
    );
    assert_eq!(
        trainer["env"][0],
        json!({"name": "NCCL_DEBUG", "value": "INFO"})
    );
    // TrainJob names must be RFC 1035 labels.
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    assert!(crate::plan::validate::rfc1035_label(name).is_ok(), "{name}");
}

#[test]
fn vllm_deployment_service_and_ingress() {
    let plan = example();
    let deployment = vllm_deployment(&plan, &run());
    assert_eq!(deployment["apiVersion"], "apps/v1");
    assert_eq!(deployment["kind"], "Deployment");
    assert_run_labels(&deployment);
    assert_eq!(deployment["spec"]["replicas"], 2);
    let template = &deployment["spec"]["template"];
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    for (key, value) in selector.as_object().cloned().unwrap_or_default() {
        assert_eq!(
            template["metadata"]["labels"][&key], value,
            "selector {key} must match the pods"
        );
    }
    let c = container(template);
    assert_eq!(c["command"], json!(["vllm", "serve"]));
    assert_eq!(c["args"][0], "/mnt/nvme-demo/shared/merged");
    let args: Vec<&str> = c["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.windows(2)
            .any(|w| w == ["--served-model-name", "demo-qlora"]),
        "{args:?}"
    );
    assert!(args.windows(2).any(|w| w == ["--port", "8000"]), "{args:?}");
    assert!(args.ends_with(&["--max-model-len", "4096"]), "{args:?}");
    assert_eq!(c["ports"][0]["containerPort"], 8000);
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/health");
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "1");

    let service = vllm_service(&plan, &run());
    assert_eq!(service["kind"], "Service");
    assert_run_labels(&service);
    assert_eq!(service["spec"]["selector"], *selector);
    assert_eq!(service["spec"]["ports"][0]["port"], 8000);

    let ingress = vllm_ingress(&plan, &run()).unwrap_or_else(|| panic!("no ingress"));
    assert_eq!(ingress["apiVersion"], "networking.k8s.io/v1");
    assert_run_labels(&ingress);
    assert_eq!(
        ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-buffering"],
        "off"
    );
    assert_eq!(ingress["spec"]["tls"][0]["hosts"][0], "vllm.lab.example");
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "vllm-demo-tls");
    let backend = &ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"];
    assert_eq!(backend["name"], "vllm-demo");
    assert_eq!(backend["port"]["number"], 8000);
}

#[test]
fn no_ingress_without_host_and_no_gpu_limit_for_cpu_serving() {
    let mut plan = example();
    plan.serving.ingress_host = None;
    plan.serving.gpus_per_replica = 0;
    assert_eq!(vllm_ingress(&plan, &run()), None);
    let objects = all_objects(&plan, &run());
    assert_eq!(objects.len(), 3);
    let c = container(&objects[1]["spec"]["template"]);
    assert_eq!(c["resources"]["limits"], json!({}));
}

#[test]
fn every_object_carries_the_run_labels() {
    let plan = example();
    let objects = all_objects(&plan, &run());
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["PyTorchJob", "Deployment", "Service", "Ingress"]);
    objects.iter().for_each(assert_run_labels);
    assert_eq!(
        run_selector(&run()),
        "app.kubernetes.io/managed-by=dpuctl,dpuctl/run-id=20261130-050745"
    );
}

#[test]
fn yaml_of_all_objects_parses_back_to_the_same_values() {
    for api in [TrainingApi::PyTorchJob, TrainingApi::TrainJob] {
        let mut plan = example();
        plan.training.api = api;
        plan.training.runtime_ref = Some("torch-distributed".to_owned());
        let objects = all_objects(&plan, &run());
        let yaml = to_yaml(&objects);
        assert_eq!(yaml.matches("---\n").count(), objects.len());
        if let Some(back) = pyyaml_load_all(&yaml) {
            assert_eq!(back, objects, "{yaml}");
        }
    }
}
