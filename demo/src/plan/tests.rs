//! Plan parsing and validation: the example plan is valid and round-trips, every rule
//! reports its exact key path, and problems are collected, not stopped at the first.

use std::path::Path;

use super::*;

/// The documented example plan (kubernetes executor, PyTorchJob).
pub const EXAMPLE: &str = include_str!("../example_plan.toml");

/// Parses `text` as if it were /plans/plan.toml.
fn parse(text: &str) -> Result<Plan, Vec<PlanError>> {
    Plan::parse(text, Path::new("/plans"))
}

/// Parses and validates; all errors from either step.
fn problems(text: &str) -> Vec<PlanError> {
    match parse(text) {
        Ok(plan) => plan.validate(),
        Err(errors) => errors,
    }
}

/// The example with `find` replaced by `replace` (which must change something).
fn edited(find: &str, replace: &str) -> String {
    assert!(EXAMPLE.contains(find), "example has no {find:?}");
    EXAMPLE.replacen(find, replace, 1)
}

/// The example plan as parsed, for tests elsewhere in the demo module.
pub fn example() -> Plan {
    parse(EXAMPLE).unwrap_or_else(|e| panic!("example plan: {e:?}"))
}

#[test]
fn example_plan_is_valid() {
    let plan = example();
    assert_eq!(plan.validate(), Vec::new());
    assert_eq!(plan.executor.kind, ExecutorKind::Kubernetes);
    assert_eq!(plan.training.api, TrainingApi::PyTorchJob);
    assert_eq!(plan.training.timeout.0, Duration::from_secs(45 * 60));
    assert_eq!(plan.storage.manifest.len(), 2);
    assert_eq!(plan.serving.answers.len(), 1);
    assert_eq!(plan.cluster.namespace, "dpu-demo");
}

#[test]
fn relative_local_paths_resolve_against_the_plan_directory() {
    let plan = example();
    assert_eq!(plan.executor.work_dir, Some(PathBuf::from("/plans/runs")));
    assert_eq!(
        plan.merge.fingerprint,
        Path::new("/plans/out/fingerprint.json")
    );
    assert_eq!(
        plan.merge.archive,
        Path::new("/plans/archive/fingerprint.json")
    );
    // Node paths are not touched.
    assert_eq!(plan.storage.mount_point, Path::new("/mnt/nvme-demo"));
}

#[test]
fn example_plan_round_trips_through_toml() {
    let plan = example();
    let text = toml::to_string(&plan).unwrap_or_else(|e| panic!("serialize: {e}"));
    let again =
        Plan::parse(&text, Path::new("/elsewhere")).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    // Paths are absolute now, so a different base directory changes nothing.
    assert_eq!(again, plan);
}

#[test]
fn defaults_fill_optional_sections() {
    let cluster = "[cluster]\n# kubeconfig = \"~/.kube/config\"   # absent: $KUBECONFIG or ~/.kube/config\ncontext = \"lab\"\nnamespace = \"dpu-demo\"\n";
    let text =
        edited(cluster, "").replace("[cleanup]\ndelete_jobs = true\nkeep_serving = true\n", "");
    let text = text
        .replace("replicas = 2\n", "")
        .replace("gpus_per_replica = 1\n", "")
        .replace("port = 8000\n", "");
    let plan = parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(plan.cluster, ClusterSection::default());
    assert_eq!(plan.cluster.namespace, "default");
    assert_eq!(
        plan.cleanup,
        CleanupSection {
            delete_jobs: true,
            keep_serving: true
        }
    );
    assert_eq!(plan.serving.replicas, 2);
    assert_eq!(plan.serving.gpus_per_replica, 1);
    assert_eq!(plan.serving.port, 8000);
    assert_eq!(plan.validate(), Vec::new());
}

/// (why, find in the example, replacement, the key path the error must name).
const BAD: &[(&str, &str, &str, &str)] = &[
    ("typo in a key", "workers = 2", "wokers = 2", "training.wokers"),
    ("wrong type", "workers = 2", "workers = \"two\"", "training.workers"),
    ("missing required key", "image = \"nvcr.io/nvidia/pytorch:25.01-py3\"\n", "", "training.image"),
    ("unknown executor", "kind = \"kubernetes\"", "kind = \"slurm\"", "executor.kind"),
    ("unknown api", "api = \"pytorchjob\"", "api = \"mpijob\"", "training.api"),
    ("bad duration", "timeout = \"45m\"", "timeout = \"45 minutes-ish\"", "training.timeout"),
    ("zero duration", "timeout = \"45m\"", "timeout = \"0s\"", "training.timeout"),
    ("namespace not a label", "namespace = \"dpu-demo\"", "namespace = \"Dpu_Demo\"", "cluster.namespace"),
    ("bad agent endpoint", "agent = \"tcp:dpu-a.lab:50051\"", "agent = \"http://dpu-a\"", "storage.agent"),
    ("agent port 0", "agent = \"tcp:dpu-a.lab:50051\"", "agent = \"tcp:dpu-a.lab:0\"", "storage.agent"),
    ("bad exposure id", "exposure = \"disk0\"", "exposure = \"0disk\"", "storage.exposure"),
    (
        "exposure spec with an unknown enum name",
        "exposure = \"disk0\"",
        "exposure = \"disk0\"\nexposure_spec = { remote = { transport = \"RDMA\" } }",
        "storage.exposure_spec",
    ),
    ("bad volume", "volume = \"RemoteNvme0n1\"", "volume = \"a/b\"", "storage.volume"),
    ("relative mount point", "mount_point = \"/mnt/nvme-demo\"", "mount_point = \"mnt\"", "storage.mount_point"),
    ("shared path with ..", "shared_path = \"/mnt/nvme-demo/shared\"", "shared_path = \"/mnt/../etc\"", "storage.shared_path"),
    ("manifest path escapes", "path = \"models/base/config.json\"", "path = \"../secret\"", "storage.manifest[1].path"),
    ("manifest path absolute", "path = \"datasets/alpaca-sample.jsonl\"", "path = \"/etc/passwd\"", "storage.manifest[0].path"),
    ("manifest path twice", "path = \"models/base/config.json\"", "path = \"datasets/alpaca-sample.jsonl\"", "storage.manifest[1].path"),
    ("uppercase sha256", "sha256 = \"9f86d0", "sha256 = \"9F86D0", "storage.manifest[0].sha256"),
    ("short sha256", "sha256 = \"60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752\"", "sha256 = \"60303ae2\"", "storage.manifest[1].sha256"),
    ("negative bytes", "bytes = 712", "bytes = -1", "storage.manifest[1].bytes"),
    ("manifest and manifest_file", "volume = \"RemoteNvme0n1\"", "volume = \"RemoteNvme0n1\"\nmanifest_file = \"m.json\"", "storage.manifest_file"),
    ("one node for kubernetes", "nodes = [\"gpu-node-a\", \"gpu-node-b\"]", "nodes = [\"gpu-node-a\"]", "communication.nodes"),
    ("bad node name", "nodes = [\"gpu-node-a\", \"gpu-node-b\"]", "nodes = [\"gpu-node-a\", \"GPU_B\"]", "communication.nodes[1]"),
    ("duplicate node", "nodes = [\"gpu-node-a\", \"gpu-node-b\"]", "nodes = [\"gpu-node-a\", \"gpu-node-a\"]", "communication.nodes[1]"),
    ("empty nccl command", "nccl_tests = [\"all_reduce_perf\", \"-b\", \"8\", \"-e\", \"1G\", \"-f\", \"2\", \"-g\", \"1\"]", "nccl_tests = []", "communication.nccl_tests"),
    ("busbw not positive", "min_busbw_gbps = 20.0", "min_busbw_gbps = -1.0", "communication.min_busbw_gbps"),
    ("bad rdma device", "rdma_device = \"mlx5_0\"", "rdma_device = \"mlx5 0\"", "communication.rdma_device"),
    ("zero workers", "workers = 2", "workers = 0", "training.workers"),
    ("zero gpus on kubernetes", "gpus_per_worker = 1", "gpus_per_worker = 0", "training.gpus_per_worker"),
    ("rdma resource without domain", "rdma_resource = \"rdma/rdma_shared_device_a\"", "rdma_resource = \"rdma_shared_device_a\"", "training.rdma_resource"),
    ("rdma resource in kubernetes.io", "rdma_resource = \"rdma/rdma_shared_device_a\"", "rdma_resource = \"kubernetes.io/rdma\"", "training.rdma_resource"),
    ("rdma resource missing on kubernetes", "rdma_resource = \"rdma/rdma_shared_device_a\"\n", "", "training.rdma_resource"),
    ("zero rdma per worker", "rdma_per_worker = 1", "rdma_per_worker = 0", "training.rdma_per_worker"),
    ("NCCL_IB_DISABLE set", "NCCL_SOCKET_IFNAME = \"eth0\"", "NCCL_IB_DISABLE = \"1\"", "training.env.NCCL_IB_DISABLE"),
    ("NCCL_DEBUG lowered", "NCCL_SOCKET_IFNAME = \"eth0\"", "NCCL_DEBUG = \"WARN\"", "training.env.NCCL_DEBUG"),
    ("operator variable", "NCCL_SOCKET_IFNAME = \"eth0\"", "WORLD_SIZE = \"4\"", "training.env.WORLD_SIZE"),
    ("env value not a string", "HF_HOME = \"/mnt/nvme-demo/shared/hf\"", "HF_HOME = 1", "training.env.HF_HOME"),
    ("bad env name", "NCCL_SOCKET_IFNAME = \"eth0\"", "\"1BAD\" = \"x\"", "training.env.1BAD"),
    ("trainjob without runtime", "api = \"pytorchjob\"", "api = \"trainjob\"", "training.runtime_ref"),
    ("empty image", "image = \"nvcr.io/nvidia/pytorch:25.01-py3\"", "image = \"\"", "training.image"),
    ("empty program", "command = [\"python\", \"/mnt/nvme-demo/shared/train_qlora.py\", \"--epochs\", \"1\"]", "command = [\"\"]", "training.command"),
    ("tolerance of 1", "rel_tolerance = 0.02", "rel_tolerance = 1.0", "merge.rel_tolerance"),
    ("fingerprint is archive", "archive = \"archive/fingerprint.json\"", "archive = \"out/fingerprint.json\"", "merge.archive"),
    ("zero replicas", "replicas = 2", "replicas = 0", "serving.replicas"),
    ("relative model path", "model_path = \"/mnt/nvme-demo/shared/merged\"", "model_path = \"merged\"", "serving.model_path"),
    ("service name starts with digit", "service_name = \"vllm-demo\"", "service_name = \"1vllm\"", "serving.service_name"),
    ("port out of range", "port = 8000", "port = 70000", "serving.port"),
    ("plain http url", "ingress_host = \"vllm.lab.example\"", "url = \"http://vllm.lab.example/\"", "serving.url"),
    ("bad ingress host", "ingress_host = \"vllm.lab.example\"", "ingress_host = \"vllm_lab\"", "serving.ingress_host"),
    ("similarity above 1", "min_similarity = 0.6", "min_similarity = 1.5", "serving.answers[0].min_similarity"),
    ("empty expected answer", "expect = \"It offloads networking, storage and security from the host CPU.\"", "expect = \"\"", "serving.answers[0].expect"),
    ("unknown key in an array of tables", "min_similarity = 0.6", "min_similarity = 0.6\nanswer = \"x\"", "serving.answers[0].answer"),
    ("unknown section", "[cleanup]", "[clean_up]", "clean_up"),
    ("cleanup not a bool", "delete_jobs = true", "delete_jobs = \"yes\"", "cleanup.delete_jobs"),
    ("empty local command", "[cleanup]", "[local]\ntrain = []\n\n[cleanup]", "local.train"),
];

#[test]
fn each_bad_plan_names_its_key() {
    assert!(BAD.len() >= 25);
    for (why, find, replace, key) in BAD {
        let errors = problems(&edited(find, replace));
        assert!(
            errors.iter().any(|e| e.key == *key),
            "{why}: expected an error at {key:?}, got {errors:#?}"
        );
        for error in &errors {
            assert!(!error.message.is_empty(), "{why}: empty message");
        }
    }
}

#[test]
fn local_executor_needs_work_dir_and_one_node() {
    let text = edited("kind = \"kubernetes\"", "kind = \"local\"")
        .replace("work_dir = \"runs\"", "")
        .replace("nodes = [\"gpu-node-a\", \"gpu-node-b\"]", "nodes = []");
    let keys: Vec<String> = problems(&text).into_iter().map(|e| e.key).collect();
    assert_eq!(keys, ["executor.work_dir", "communication.nodes"]);
    // One node, no RDMA resource, no URL and no GPUs are fine locally.
    let text = edited("kind = \"kubernetes\"", "kind = \"local\"")
        .replace(
            "nodes = [\"gpu-node-a\", \"gpu-node-b\"]",
            "nodes = [\"localhost\"]",
        )
        .replace("rdma_resource = \"rdma/rdma_shared_device_a\"\n", "")
        .replace("gpus_per_worker = 1", "gpus_per_worker = 0")
        .replace("ingress_host = \"vllm.lab.example\"\n", "");
    let plan = parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(plan.validate(), Vec::new());
    assert_eq!(plan.serving_url().as_deref(), Some("http://127.0.0.1:8000"));
}

#[test]
fn collects_every_problem_at_once() {
    let text = edited("workers = 2", "workers = 0")
        .replace("namespace = \"dpu-demo\"", "namespace = \"NS\"")
        .replace("rel_tolerance = 0.02", "rel_tolerance = 0.0")
        .replace("sha256 = \"9f86d0", "sha256 = \"zz86d0")
        .replace("min_similarity = 0.6", "min_similarity = 0.0");
    let keys: Vec<String> = problems(&text).into_iter().map(|e| e.key).collect();
    assert_eq!(
        keys,
        [
            "cluster.namespace",
            "storage.manifest[0].sha256",
            "training.workers",
            "merge.rel_tolerance",
            "serving.answers[0].min_similarity",
        ]
    );
}

#[test]
fn toml_errors_carry_line_and_column() {
    let text = edited("workers = 2", "wokers = 2");
    let line = text
        .lines()
        .position(|l| l.starts_with("wokers"))
        .map(|i| i + 1);
    let errors = parse(&text).err().unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, line);
    assert_eq!(errors[0].column, Some(1));
    assert!(errors[0].message.contains("unknown field"), "{}", errors[0]);
    // A syntax error has a position too.
    let errors = parse("[training\nworkers = 2\n").err().unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].line, Some(1));
}

#[test]
fn load_locates_validation_errors_and_reads_the_manifest_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let manifest = r#"{"files": [
        {"path": "a.bin", "bytes": 3, "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"path": "../b.bin", "bytes": 1, "sha256": "nope"}
    ]}"#;
    std::fs::write(dir.path().join("manifest.json"), manifest).unwrap_or_else(|e| panic!("{e}"));
    let inline_start = EXAMPLE.find("[[storage.manifest]]").unwrap_or(0);
    let inline_end = EXAMPLE.find("[communication]").unwrap_or(0);
    let mut text = EXAMPLE.to_owned();
    text.replace_range(
        inline_start..inline_end,
        "manifest_file = \"manifest.json\"\n\n",
    );
    let plan_path = dir.path().join("plan.toml");

    std::fs::write(&plan_path, &text).unwrap_or_else(|e| panic!("{e}"));
    let errors = Plan::load(&plan_path)
        .err()
        .map(|e| e.errors)
        .unwrap_or_default();
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "storage.manifest_file.files[1].path",
            "storage.manifest_file.files[1].sha256"
        ]
    );
    // Located at the manifest_file key, the deepest part of the path in the plan.
    let line = text
        .lines()
        .position(|l| l.starts_with("manifest_file"))
        .map(|i| i + 1);
    assert_eq!(errors[0].line, line);

    let fixed = manifest.replace("../b.bin", "b.bin").replace(
        "\"nope\"",
        "\"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d\"",
    );
    std::fs::write(dir.path().join("manifest.json"), fixed).unwrap_or_else(|e| panic!("{e}"));
    let plan = Plan::load(&plan_path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.storage.manifest.len(), 2);
    assert_eq!(plan.storage.manifest[1].path, Path::new("b.bin"));

    // Validation errors point at the offending line.
    std::fs::write(&plan_path, text.replace("workers = 2", "workers = 0"))
        .unwrap_or_else(|e| panic!("{e}"));
    let errors = Plan::load(&plan_path)
        .err()
        .unwrap_or_else(|| panic!("accepted"));
    let line = text
        .lines()
        .position(|l| l.starts_with("workers"))
        .map(|i| i + 1);
    assert_eq!(errors.errors.len(), 1);
    assert_eq!(errors.errors[0].line, line);
    assert!(
        errors.to_string().contains("training.workers: is 0"),
        "{errors}"
    );
}

#[test]
fn missing_plan_file_is_one_error() {
    let errors = Plan::load(Path::new("/nonexistent/plan.toml"))
        .err()
        .map(|e| e.errors);
    assert_eq!(errors.map(|e| e.len()), Some(1));
}

#[test]
fn serving_url_prefers_the_explicit_url() {
    let mut plan = example();
    assert_eq!(
        plan.serving_url().as_deref(),
        Some("https://vllm.lab.example/")
    );
    plan.serving.url = Some("https://gw.example/vllm".to_owned());
    assert_eq!(
        plan.serving_url().as_deref(),
        Some("https://gw.example/vllm")
    );
    assert_eq!(plan.tls_secret(), "vllm-demo-tls");
}

/// The local plan shipped in examples/demo stays valid as the schema changes (its
/// manifest file lives on the demo disk, so it is not read here).
#[test]
fn the_shipped_local_example_plan_is_valid() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo/plan-local.toml");
    let plan = Plan::load_with(&path, false).unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.local.serve.is_some());
    assert!(plan
        .merge
        .archive
        .ends_with("examples/demo/archive/fingerprint.json"));
}
