//! The semantic rules of a plan. Each rule pushes a [`PlanError`] and carries on, so one
//! run reports everything wrong with a plan. Name rules are Kubernetes' own (DNS-1123
//! labels and subdomains, RFC 1035 labels, extended resource names) because a name the
//! API server would reject should fail here, before the storage and NCCL steps have run;
//! agent ids reuse `dpu_proto::names`, the rules the agent itself enforces.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use dpu_proto::names::Collection;
use dpu_proto::Endpoint;

use super::error::PlanError;
use super::{ExecutorKind, ManifestEntry, Plan, TrainingApi};

/// Environment variables the training operators set themselves; a plan that sets them
/// would break `torchrun`'s rendezvous in ways that only show up as a hung job.
const OPERATOR_ENV: &[&str] = &[
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "PET_NODE_RANK",
    "PET_NPROC_PER_NODE",
    "PET_NNODES",
];

/// Collects problems; `check` keeps each rule a one-liner.
struct Problems(Vec<PlanError>);

impl Problems {
    /// Records a problem at `key`.
    fn push(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(PlanError::new(key, message));
    }

    /// Records a problem at `key` when `result` is an error.
    fn check(&mut self, key: impl Into<String>, result: Result<(), String>) {
        if let Err(message) = result {
            self.push(key, message);
        }
    }
}

/// Every problem of the plan; see [`Plan::validate`].
pub(crate) fn validate(plan: &Plan) -> Vec<PlanError> {
    let mut p = Problems(Vec::new());
    let k8s = plan.executor.kind == ExecutorKind::Kubernetes;
    cluster(plan, &mut p);
    if plan.executor.kind == ExecutorKind::Local && plan.executor.work_dir.is_none() {
        p.push(
            "executor.work_dir",
            "missing; the local executor needs a directory for its logs and outputs",
        );
    }
    storage(plan, &mut p);
    communication(plan, k8s, &mut p);
    training(plan, k8s, &mut p);
    merge(plan, &mut p);
    serving(plan, k8s, &mut p);
    local(plan, &mut p);
    p.0
}

/// `[cluster]`.
fn cluster(plan: &Plan, p: &mut Problems) {
    p.check("cluster.namespace", dns1123_label(&plan.cluster.namespace));
    if let Some(context) = &plan.cluster.context {
        if context.trim().is_empty() {
            p.push(
                "cluster.context",
                "is empty; remove it to use the current context",
            );
        }
    }
}

/// `[storage]`.
fn storage(plan: &Plan, p: &mut Problems) {
    let s = &plan.storage;
    match s.agent.parse::<Endpoint>() {
        Ok(Endpoint::Tcp { port: 0, .. }) => p.push(
            "storage.agent",
            "port 0 cannot be connected to; expected 1-65535",
        ),
        Ok(_) => {}
        Err(e) => p.push("storage.agent", e.to_string()),
    }
    if let Err(e) = Collection::Exposures.check_id(&s.exposure) {
        p.push("storage.exposure", e.to_string());
    }
    if let Some(spec) = &s.exposure_spec {
        if let Err(e) = serde_json::from_value::<dpu_proto::v1::ExposureSpec>(spec.clone()) {
            p.push(
                "storage.exposure_spec",
                format!("not an ExposureSpec (proto3 JSON field and enum names): {e}"),
            );
        }
    }
    if let Some(volume) = &s.volume {
        if let Err(e) = Collection::Volumes.check_id(volume) {
            p.push("storage.volume", e.to_string());
        }
    }
    p.check("storage.mount_point", node_path(&s.mount_point));
    if s.mount_point == Path::new("/") {
        p.push(
            "storage.mount_point",
            "must not be \"/\"; expected the mount point of the exposed disk",
        );
    }
    p.check("storage.shared_path", node_path(&s.shared_path));
    match (s.manifest.is_empty(), &s.manifest_file) {
        (true, None) => p.push(
            "storage.manifest",
            "missing; give [[storage.manifest]] entries or storage.manifest_file, so the \
             demo can prove the data is on the disk",
        ),
        (false, Some(_)) => p.push(
            "storage.manifest_file",
            "given together with [[storage.manifest]] entries; use one of the two",
        ),
        _ => {}
    }
    p.0.extend(manifest_entries("storage.manifest", &s.manifest));
}

/// Checks manifest entries under `key` (`storage.manifest` or the manifest file's
/// `files`): safe relative paths, no duplicates, well-formed digests.
pub(crate) fn manifest_entries(key: &str, entries: &[ManifestEntry]) -> Vec<PlanError> {
    let mut p = Problems(Vec::new());
    let mut seen = BTreeSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let at = format!("{key}[{index}]");
        match relative_path(&entry.path) {
            Err(message) => p.push(format!("{at}.path"), message),
            Ok(()) => {
                if !seen.insert(entry.path.clone()) {
                    p.push(
                        format!("{at}.path"),
                        format!("{} is listed twice", entry.path.display()),
                    );
                }
            }
        }
        p.check(format!("{at}.sha256"), sha256(&entry.sha256));
    }
    p.0
}

/// `[communication]`.
fn communication(plan: &Plan, k8s: bool, p: &mut Problems) {
    let c = &plan.communication;
    let needed = if k8s { 2 } else { 1 };
    if c.nodes.len() < needed {
        p.push(
            "communication.nodes",
            format!(
                "has {} node(s); the {} executor needs at least {needed}{}",
                c.nodes.len(),
                if k8s { "kubernetes" } else { "local" },
                if k8s {
                    " so NCCL crosses the network"
                } else {
                    ""
                }
            ),
        );
    }
    let mut seen = BTreeSet::new();
    for (index, node) in c.nodes.iter().enumerate() {
        let key = format!("communication.nodes[{index}]");
        match dns1123_subdomain(node) {
            Err(message) => p.push(key, format!("node {node:?}: {message}")),
            Ok(()) if !seen.insert(node) => p.push(key, format!("node {node:?} is listed twice")),
            Ok(()) => {}
        }
    }
    p.check("communication.nccl_tests", argv(&c.nccl_tests));
    if let Some(min) = c.min_busbw_gbps {
        if !(min.is_finite() && min > 0.0) {
            p.push(
                "communication.min_busbw_gbps",
                format!("is {min}; expected a positive number of GB/s"),
            );
        }
    }
    if let Some(device) = &c.rdma_device {
        if let Err(e) = Collection::RdmaDevices.check_id(device) {
            p.push("communication.rdma_device", e.to_string());
        }
    }
}

/// `[training]`.
fn training(plan: &Plan, k8s: bool, p: &mut Problems) {
    let t = &plan.training;
    p.check("training.image", image(&t.image));
    p.check("training.command", argv(&t.command));
    if t.workers == 0 {
        p.push("training.workers", "is 0; expected at least 1");
    }
    if k8s && t.gpus_per_worker == 0 {
        p.push(
            "training.gpus_per_worker",
            "is 0; the kubernetes executor trains on GPUs, expected at least 1",
        );
    }
    match &t.rdma_resource {
        Some(resource) => p.check("training.rdma_resource", extended_resource(resource)),
        None if k8s => p.push(
            "training.rdma_resource",
            "missing; the kubernetes executor needs the RDMA device-plugin resource \
             (e.g. \"rdma/rdma_shared_device_a\"), without it pods have no /dev/infiniband \
             and NCCL falls back to TCP",
        ),
        None => {}
    }
    if t.rdma_per_worker == 0 {
        p.push("training.rdma_per_worker", "is 0; expected at least 1");
    }
    if t.timeout.0.is_zero() {
        p.push("training.timeout", "is zero; expected e.g. \"30m\"");
    }
    for (name, value) in &t.env {
        let key = format!("training.env.{name}");
        if let Err(message) = env_name(name) {
            p.push(key, message);
        } else if name == "NCCL_IB_DISABLE" {
            p.push(
                key,
                "must not be set: it makes NCCL use TCP sockets, which is what the demo \
                 must rule out",
            );
        } else if name == "NCCL_DEBUG" && !matches!(value.as_str(), "INFO" | "TRACE") {
            p.push(
                key,
                format!(
                    "is {value:?}; the transport check reads NCCL's INFO log, expected \
                     \"INFO\" or \"TRACE\" (or leave it out)"
                ),
            );
        } else if OPERATOR_ENV.contains(&name.as_str()) {
            p.push(key, "is set by the training operator; remove it");
        }
    }
    match (&t.runtime_ref, t.api) {
        (None, TrainingApi::TrainJob) => p.push(
            "training.runtime_ref",
            "missing; api = \"trainjob\" needs the (Cluster)TrainingRuntime name, e.g. \
             \"torch-distributed\"",
        ),
        (Some(name), _) => p.check("training.runtime_ref", dns1123_subdomain(name)),
        (None, TrainingApi::PyTorchJob) => {}
    }
}

/// `[merge]`.
fn merge(plan: &Plan, p: &mut Problems) {
    let m = &plan.merge;
    p.check("merge.command", argv(&m.command));
    if m.fingerprint == m.archive {
        p.push(
            "merge.archive",
            "is the same file as merge.fingerprint; comparing a file with itself proves nothing",
        );
    }
    if !(m.rel_tolerance.is_finite() && m.rel_tolerance > 0.0 && m.rel_tolerance < 1.0) {
        p.push(
            "merge.rel_tolerance",
            format!(
                "is {}; expected a fraction with 0 < x < 1, e.g. 0.01",
                m.rel_tolerance
            ),
        );
    }
}

/// `[serving]`.
fn serving(plan: &Plan, k8s: bool, p: &mut Problems) {
    let s = &plan.serving;
    p.check("serving.image", image(&s.image));
    if s.replicas == 0 {
        p.push("serving.replicas", "is 0; expected at least 1");
    }
    if s.model.trim().is_empty() || s.model.chars().any(char::is_whitespace) {
        p.push(
            "serving.model",
            format!(
                "{:?} is not a model name; expected a non-empty name without spaces",
                s.model
            ),
        );
    }
    p.check("serving.model_path", node_path(&s.model_path));
    p.check("serving.service_name", rfc1035_label(&s.service_name));
    if s.port == 0 {
        p.push("serving.port", "is 0; expected 1-65535");
    }
    if let Some(url) = &s.url {
        p.check("serving.url", https_url(url));
    }
    if let Some(host) = &s.ingress_host {
        p.check("serving.ingress_host", dns1123_subdomain(host));
    }
    if let Some(class) = &s.ingress_class {
        p.check("serving.ingress_class", dns1123_subdomain(class));
    }
    if let Some(secret) = &s.tls_secret {
        p.check("serving.tls_secret", dns1123_subdomain(secret));
    }
    if k8s && s.url.is_none() && s.ingress_host.is_none() {
        p.push(
            "serving.url",
            "missing; the kubernetes executor needs serving.url or serving.ingress_host to \
             reach vLLM over HTTPS",
        );
    }
    for (index, arg) in s.extra_args.iter().enumerate() {
        if arg.is_empty() {
            p.push(format!("serving.extra_args[{index}]"), "is empty");
        }
    }
    if s.answers.is_empty() {
        p.push(
            "serving.answers",
            "missing; give at least one [[serving.answers]] so the served model is compared \
             with the archived run",
        );
    }
    for (index, answer) in s.answers.iter().enumerate() {
        let at = format!("serving.answers[{index}]");
        if answer.prompt.trim().is_empty() {
            p.push(format!("{at}.prompt"), "is empty");
        }
        if answer.expect.trim().is_empty() {
            p.push(
                format!("{at}.expect"),
                "is empty; expected the archived answer text",
            );
        }
        let m = answer.min_similarity;
        if !(m.is_finite() && m > 0.0 && m <= 1.0) {
            p.push(
                format!("{at}.min_similarity"),
                format!("is {m}; expected 0 < x <= 1, e.g. 0.8"),
            );
        }
    }
}

/// `[local]`.
fn local(plan: &Plan, p: &mut Problems) {
    let l = &plan.local;
    for (name, command) in [
        ("train", &l.train),
        ("merge", &l.merge),
        ("serve", &l.serve),
    ] {
        if let Some(command) = command {
            p.check(format!("local.{name}"), argv(command));
        }
    }
    if let Some(url) = &l.serve_url {
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url
                .split_once("://")
                .is_some_and(|(_, rest)| rest.is_empty())
        {
            p.push("local.serve_url", format!("{url:?} is not an http(s) URL"));
        }
    }
}

/// An argv vector: at least the program, which must not be empty. Never run through a
/// shell, so no quoting rules apply.
pub(crate) fn argv(command: &[String]) -> Result<(), String> {
    match command.first() {
        None => Err("is empty; expected an argv vector such as [\"program\", \"arg\"]".to_owned()),
        Some(program) if program.trim().is_empty() => {
            Err("has an empty program name as its first element".to_owned())
        }
        Some(_) => Ok(()),
    }
}

/// A path on the nodes: absolute, with no `.` or `..` that would make it mean something
/// else once mounted into a container.
fn node_path(path: &Path) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(format!(
            "{} is relative; expected an absolute path on the nodes",
            path.display()
        ));
    }
    if path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(format!(
            "{} contains '.' or '..'; expected a plain absolute path",
            path.display()
        ));
    }
    Ok(())
}

/// A manifest path: relative and staying below the mount point.
fn relative_path(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err("is empty; expected a path relative to storage.mount_point".to_owned());
    }
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!(
            "{shown} must be relative to storage.mount_point, without a leading '/', '.' or '..'"
        ));
    }
    Ok(())
}

/// 64 lowercase hex digits, the form `sha256sum` prints.
fn sha256(digest: &str) -> Result<(), String> {
    if digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        Ok(())
    } else {
        Err(format!(
            "{digest:?} is not a SHA-256; expected 64 lowercase hex digits"
        ))
    }
}

/// A container image reference, loosely: the registry decides the rest.
fn image(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err(
            "is empty; expected an image such as \"nvcr.io/nvidia/pytorch:25.01-py3\"".to_owned(),
        );
    }
    if reference.starts_with('-')
        || reference
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!("{reference:?} is not an image reference"));
    }
    Ok(())
}

/// A C-style environment variable name.
fn env_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not an environment variable name; expected [A-Za-z_][A-Za-z0-9_]*"
        ))
    }
}

/// `https://host[...]`: the serving checks must go through TLS, as the course requires.
fn https_url(url: &str) -> Result<(), String> {
    let host = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("{url:?} is not an https:// URL"))?
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(format!("{url:?} has no host"));
    }
    Ok(())
}

/// A DNS-1123 label (namespaces, most object names): 1-63 of `[a-z0-9-]`, alphanumeric
/// at both ends.
pub(crate) fn dns1123_label(name: &str) -> Result<(), String> {
    if label_ok(name) {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a DNS-1123 label; expected 1-63 lowercase letters, digits or '-', \
             starting and ending with a letter or digit"
        ))
    }
}

/// An RFC 1035 label (Service names): a DNS-1123 label that starts with a letter.
pub(crate) fn rfc1035_label(name: &str) -> Result<(), String> {
    if label_ok(name) && name.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not an RFC 1035 label; expected 1-63 lowercase letters, digits or '-', \
             starting with a letter and ending with a letter or digit"
        ))
    }
}

/// A DNS-1123 subdomain (node names, host names, resource prefixes): dot-separated
/// labels, at most 253 characters.
pub(crate) fn dns1123_subdomain(name: &str) -> Result<(), String> {
    if !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a DNS-1123 subdomain; expected lowercase labels of letters, digits \
             and '-' separated by '.', at most 253 characters"
        ))
    }
}

/// An extended resource name as the API server accepts it in `resources.limits`:
/// `domain/name`, the domain outside `kubernetes.io`, the name a qualified-name part.
pub(crate) fn extended_resource(name: &str) -> Result<(), String> {
    let expected =
        "expected DOMAIN/NAME such as \"rdma/rdma_shared_device_a\" or \"nvidia.com/hostdev\"";
    let Some((domain, local)) = name.split_once('/') else {
        return Err(format!("{name:?} has no domain prefix; {expected}"));
    };
    if dns1123_subdomain(domain).is_err() {
        return Err(format!(
            "{name:?}: {domain:?} is not a DNS subdomain; {expected}"
        ));
    }
    if domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") {
        return Err(format!(
            "{name:?} is in the reserved kubernetes.io domain; {expected}"
        ));
    }
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let local_ok = local.len() <= 63
        && ends_ok(local.chars().next())
        && ends_ok(local.chars().last())
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !local_ok {
        return Err(format!(
            "{name:?}: {local:?} is not a valid resource name (1-63 of letters, digits, \
             '-', '_', '.', alphanumeric at both ends); {expected}"
        ));
    }
    Ok(())
}

/// The DNS-1123 label rule, shared by the checks above.
fn label_ok(label: &str) -> bool {
    let bytes = label.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}
