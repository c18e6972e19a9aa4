//! deploy/kubernetes/dpuctl-fleet.yaml: its RBAC is least privilege (exactly the verbs
//! dpuctl fleet's discovery and publishing use, nothing on Secrets, no wildcards), its
//! bindings name its ServiceAccount in the agent's namespace, and each Job/CronJob runs
//! dpuctl with arguments dpuctl accepts, pointed at the DaemonSet's namespace, pod label
//! and gRPC port, with the client TLS Secret mounted where its DPUCTL_* variables say.
//! (dpu-host's `fleet::kube::rbac_tests` hold the same rules to the requests the code
//! makes against a scripted API server.)
//!
//! Read as text like daemonset.rs: the workspace has no YAML parser, and one-line flow
//! lists (`args: [...]`, `verbs: [...]`) are JSON.

use std::collections::BTreeSet;
use std::process::Command;

use dpu_tests::harness::bin_dir;

const FLEET: &str = include_str!("../../../deploy/kubernetes/dpuctl-fleet.yaml");
const DAEMONSET: &str = include_str!("../../../deploy/kubernetes/dpu-agent-daemonset.yaml");

/// The manifest's documents.
fn documents(text: &str) -> Vec<&str> {
    text.split("\n---\n").collect()
}

/// The document's top-level `kind`.
fn kind(document: &str) -> Option<&str> {
    document.lines().find_map(|l| l.strip_prefix("kind: "))
}

/// The values of every `key: value` line (any depth, list items included).
fn values<'a>(document: &'a str, key: &str) -> Vec<&'a str> {
    document
        .lines()
        .filter_map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(':'))
                .map(str::trim)
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// The single value of `key` in the document.
fn one<'a>(document: &'a str, key: &str) -> &'a str {
    let found = values(document, key);
    assert_eq!(found.len(), 1, "{key}: {found:?} in\n{document}");
    found[0]
}

/// A one-line flow list of strings, parsed as the JSON it is.
fn flow(value: &str) -> Vec<String> {
    serde_json::from_str(value).unwrap_or_else(|e| panic!("{value}: not a flow list: {e}"))
}

/// The environment variables of the document's container, `name` then `value` lines.
fn env(document: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = document.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter_map(|w| {
            let name = w[0].strip_prefix("- name: ")?;
            let value = w[1].strip_prefix("value: ")?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Every (kind, resource, verb) the manifest's Roles and ClusterRoles grant, with what is
/// wrong with a rule (a non-core group, a wildcard, a multi-line list).
fn grants(text: &str) -> (BTreeSet<(String, String, String)>, Vec<String>) {
    let mut grants = BTreeSet::new();
    let mut problems = Vec::new();
    for document in documents(text) {
        let Some(role @ ("Role" | "ClusterRole")) = kind(document) else {
            continue;
        };
        let groups = values(document, "apiGroups");
        let resources = values(document, "resources");
        let verbs = values(document, "verbs");
        if resources.len() != verbs.len() || groups.len() != verbs.len() {
            problems.push(format!("{role}: rules not in the one-line form"));
            continue;
        }
        for ((group, resource), verb) in groups.iter().zip(&resources).zip(&verbs) {
            if flow(group) != [""] {
                problems.push(format!("{role}: apiGroups {group}"));
            }
            for resource in flow(resource) {
                for verb in flow(verb) {
                    if resource.contains('*') || verb == "*" {
                        problems.push(format!("{role}: wildcard {verb} {resource}"));
                    }
                    grants.insert((role.to_owned(), resource.clone(), verb));
                }
            }
        }
    }
    (grants, problems)
}

/// The DaemonSet's namespace, pod label and gRPC port: what discovery must be told.
fn daemonset_facts() -> (String, String, String) {
    let daemonset = documents(DAEMONSET)
        .into_iter()
        .find(|d| kind(d) == Some("DaemonSet"))
        .expect("the DaemonSet");
    let namespace = one(daemonset, "namespace").to_owned();
    let label = values(daemonset, "app.kubernetes.io/name")[0];
    let lines: Vec<&str> = daemonset.lines().map(str::trim).collect();
    let port = lines
        .windows(2)
        .find(|w| w[0] == "- name: grpc")
        .and_then(|w| w[1].strip_prefix("containerPort: "))
        .expect("the grpc container port");
    (
        namespace,
        format!("app.kubernetes.io/name={label}"),
        port.to_owned(),
    )
}

/// The value after `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

#[test]
fn the_rbac_grants_exactly_what_discovery_and_publishing_use() {
    let expected: BTreeSet<(String, String, String)> = [
        ("Role", "pods", "list"),
        ("ClusterRole", "nodes", "list"),
        ("ClusterRole", "nodes", "get"),
        ("ClusterRole", "nodes", "patch"),
        ("ClusterRole", "nodes/status", "patch"),
    ]
    .into_iter()
    .map(|(k, r, v)| (k.to_owned(), r.to_owned(), v.to_owned()))
    .collect();
    let (granted, problems) = grants(FLEET);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(granted, expected);

    // The negative control: a wider rule is noticed.
    let wider = FLEET.replace(
        "resources: [\"pods\"]\n    verbs: [\"list\"]",
        "resources: [\"pods\", \"secrets\"]\n    verbs: [\"list\", \"*\"]",
    );
    assert_ne!(wider, FLEET, "the pods rule was found");
    let (granted, problems) = grants(&wider);
    assert_ne!(granted, expected);
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn bindings_name_the_service_account_in_the_agent_namespace() {
    let (namespace, _, _) = daemonset_facts();
    let docs = documents(FLEET);
    let of_kind = |k: &str| -> Vec<&str> {
        docs.iter()
            .copied()
            .filter(|d| kind(d) == Some(k))
            .collect()
    };
    let account = of_kind("ServiceAccount");
    assert_eq!(account.len(), 1);
    assert_eq!(one(account[0], "namespace"), namespace);
    let account_name = values(account[0], "name")[0];
    for role in ["Role", "RoleBinding"] {
        for doc in of_kind(role) {
            let namespaces = values(doc, "namespace");
            assert!(
                !namespaces.is_empty() && namespaces.iter().all(|n| *n == namespace),
                "{role}: {namespaces:?}"
            );
        }
    }
    for (binding, role) in [
        ("RoleBinding", "Role"),
        ("ClusterRoleBinding", "ClusterRole"),
    ] {
        let bindings = of_kind(binding);
        assert_eq!(bindings.len(), 1, "{binding}");
        let role_name = values(of_kind(role)[0], "name")[0];
        let lines: Vec<&str> = bindings[0].lines().map(str::trim).collect();
        let role_ref = lines
            .iter()
            .position(|l| *l == "roleRef:")
            .expect("roleRef");
        assert!(lines[role_ref..].contains(&format!("kind: {role}").as_str()));
        assert!(lines[role_ref..].contains(&format!("name: {role_name}").as_str()));
        let subjects = lines
            .iter()
            .position(|l| *l == "subjects:")
            .expect("subjects");
        assert_eq!(
            &lines[subjects + 1..subjects + 4],
            [
                "- kind: ServiceAccount",
                &format!("name: {account_name}"),
                &format!("namespace: {namespace}"),
            ]
        );
    }
}

#[test]
fn the_jobs_run_dpuctl_fleet_against_the_daemonset_with_the_client_tls_mounted() {
    let (namespace, selector, port) = daemonset_facts();
    let jobs: Vec<&str> = documents(FLEET)
        .into_iter()
        .filter(|d| matches!(kind(d), Some("Job" | "CronJob")))
        .collect();
    assert_eq!(jobs.len(), 3, "a Job and two CronJobs");
    let mut commands = BTreeSet::new();
    for job in jobs {
        let name = values(job, "name")[0];
        assert_eq!(one(job, "serviceAccountName"), "dpuctl-fleet", "{name}");
        assert_eq!(one(job, "restartPolicy"), "Never", "{name}");
        let args = flow(one(job, "args"));
        assert_eq!(args[0], "fleet", "{name}: {args:?}");
        assert!(args.contains(&"--kube".to_owned()), "{name}");
        assert!(args.contains(&"--publish".to_owned()), "{name}");
        assert_eq!(flag(&args, "--kube-namespace"), Some(namespace.as_str()));
        assert_eq!(flag(&args, "--kube-selector"), Some(selector.as_str()));
        assert_eq!(flag(&args, "--kube-agent-port"), Some(port.as_str()));
        commands.insert(args.last().cloned().unwrap_or_default());

        let mount = one(job, "mountPath");
        assert_eq!(one(job, "secretName"), "dpuctl-fleet-tls", "{name}");
        let env = env(job);
        for var in ["DPUCTL_CA", "DPUCTL_CERT", "DPUCTL_KEY"] {
            let path = env
                .iter()
                .find(|(n, _)| n == var)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("{name}: no {var}"));
            assert!(
                path.starts_with(&format!("{mount}/")),
                "{name}: {var}={path} is not in the Secret's mount {mount}"
            );
        }
        assert!(
            env.iter()
                .any(|(n, v)| n == "DPUCTL_TLS_NAME" && !v.is_empty()),
            "{name}: the agents are reached by IP, so the name to verify must be set"
        );
        // The key is readable by the container's group and nobody else.
        assert_eq!(one(job, "defaultMode"), "0440", "{name}");
        assert_eq!(one(job, "fsGroup"), one(job, "runAsGroup"), "{name}");
        assert_eq!(one(job, "runAsNonRoot"), "true", "{name}");
        assert_eq!(one(job, "readOnlyRootFilesystem"), "true", "{name}");
    }
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    assert_eq!(commands, ["check", "health"]);
}

#[test]
fn dpuctl_accepts_the_jobs_arguments() {
    let dpuctl = bin_dir().join("dpuctl");
    let parses = |args: &[String]| {
        Command::new(&dpuctl)
            .args(args)
            .arg("--help")
            .env_remove("DPUCTL_INVENTORY")
            .output()
            .expect("run dpuctl")
    };
    for document in documents(FLEET) {
        if !matches!(kind(document), Some("Job" | "CronJob")) {
            continue;
        }
        let args = flow(one(document, "args"));
        let out = parses(&args);
        assert!(
            out.status.success(),
            "dpuctl {args:?} is refused: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The negative control: a misspelt flag is refused the same way.
    let misspelt: Vec<String> = [
        "fleet",
        "--kube",
        "--kube-namespaces",
        "dpu-system",
        "check",
    ]
    .map(str::to_owned)
    .to_vec();
    assert!(!parses(&misspelt).status.success());
}
