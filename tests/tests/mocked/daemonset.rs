//! deploy/kubernetes/: the DaemonSet's ConfigMap is a configuration the agent accepts
//! (`dpu-agent --check-config`), its kubelet probes are native `grpc:` probes on the port
//! that configuration's `[health] listen` names (readiness asking the `readiness`
//! service, liveness the whole server), its container ports name the health and metrics
//! listeners, and the PodMonitor scrapes the `metrics` port over mutual TLS.
//!
//! The manifests are read as text (the workspace has no YAML parser, and these checks
//! need only keys and their indentation).

use std::process::Command;

use dpu_tests::harness::bin_dir;

const DAEMONSET: &str = include_str!("../../../deploy/kubernetes/dpu-agent-daemonset.yaml");
const PODMONITOR: &str = include_str!("../../../deploy/kubernetes/dpu-agent-podmonitor.yaml");

/// Of `lines`, those below the first that reads `key` (trimmed), as long as they are
/// indented deeper than it (blank lines included); None when no line reads `key`.
fn block<'a>(lines: &[&'a str], key: &str) -> Option<Vec<&'a str>> {
    let mut lines = lines.iter().copied();
    let head = lines.by_ref().find(|l| l.trim() == key)?;
    let depth = indent(head);
    Some(
        lines
            .take_while(|l| l.trim().is_empty() || indent(l) > depth)
            .collect(),
    )
}

/// The lines of a manifest.
fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The value of the first `key: value` line among `lines`.
fn value<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        l.trim()
            .trim_start_matches("- ")
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// The ConfigMap's `config.toml`, dedented.
fn config_toml(yaml: &str) -> String {
    let lines = block(&lines(yaml), "config.toml: |").expect("the ConfigMap has config.toml");
    let depth = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .expect("config.toml is not empty");
    lines
        .iter()
        .map(|l| l.get(depth..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The port of `listen = "tcp:HOST:PORT"` in `[section]` of a printed configuration.
fn section_port(config: &str, section: &str) -> Option<u16> {
    let header = format!("[{section}]");
    config
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .find_map(|l| l.trim().strip_prefix("listen = "))
        .and_then(|v| v.trim_matches('"').rsplit(':').next())
        .and_then(|p| p.parse().ok())
}

/// The container port named `name`.
fn container_port(yaml: &str, name: &str) -> Option<u16> {
    let ports = block(&lines(yaml), "ports:")?;
    let at = ports
        .iter()
        .position(|l| l.trim() == format!("- name: {name}"))?;
    value(&ports[at..], "containerPort")?.parse().ok()
}

/// What is wrong with the DaemonSet's probes for a health-only listener on `port`.
fn probe_problems(yaml: &str, port: u16) -> Vec<String> {
    let mut problems = Vec::new();
    for (probe, service) in [
        ("readinessProbe:", Some("readiness")),
        ("livenessProbe:", None),
    ] {
        let Some(lines) = block(&lines(yaml), probe) else {
            problems.push(format!("no {probe}"));
            continue;
        };
        let Some(grpc) = block(&lines, "grpc:") else {
            problems.push(format!("{probe} is not a grpc: probe: {lines:?}"));
            continue;
        };
        if lines.iter().any(|l| l.trim() == "exec:") {
            problems.push(format!("{probe} still has an exec: probe"));
        }
        let probed = value(&grpc, "port").and_then(|p| p.parse::<u16>().ok());
        if probed != Some(port) {
            problems.push(format!(
                "{probe} probes port {probed:?}, [health] listen is port {port}"
            ));
        }
        let asked = value(&grpc, "service").map(|s| s.trim_matches('"'));
        if asked.filter(|s| !s.is_empty()) != service {
            problems.push(format!(
                "{probe} asks service {asked:?}, expected {service:?}"
            ));
        }
    }
    problems
}

#[test]
fn the_config_map_passes_check_config_and_the_probes_use_its_health_port() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config_toml(DAEMONSET)).expect("write config.toml");
    let out = Command::new(bin_dir().join("dpu-agent"))
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        // The TLS Secret is mounted only in the pod: the ConfigMap is checked alone.
        .arg("--skip-file-checks")
        .env_remove("DPU_AGENT_CONFIG")
        .output()
        .expect("run dpu-agent --check-config");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the ConfigMap's config.toml is refused: {}{printed}",
        String::from_utf8_lossy(&out.stderr)
    );
    let health = section_port(&printed, "health").expect("[health] listen is set");
    let metrics = section_port(&printed, "metrics").expect("[metrics] listen is set");
    let problems = probe_problems(DAEMONSET, health);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(container_port(DAEMONSET, "health"), Some(health));
    assert_eq!(container_port(DAEMONSET, "metrics"), Some(metrics));

    // The negative control: the same check notices a probe on another port.
    let moved = DAEMONSET.replace(
        &format!("port: {health}\n              service: readiness"),
        &format!("port: {}\n              service: readiness", health + 1),
    );
    assert_ne!(moved, DAEMONSET, "the readiness probe's port was found");
    let problems = probe_problems(&moved, health);
    assert!(
        problems.len() == 1 && problems[0].starts_with("readinessProbe: probes port"),
        "{problems:?}"
    );
}

#[test]
fn the_pod_monitor_scrapes_the_metrics_port_over_mutual_tls() {
    let pod_labels = block(&lines(DAEMONSET), "template:")
        .and_then(|t| block(&t, "labels:"))
        .expect("the pod template has labels");
    let name = value(&pod_labels, "app.kubernetes.io/name").expect("the pod's name label");
    let selector = block(&lines(PODMONITOR), "selector:").expect("the PodMonitor has a selector");
    assert_eq!(value(&selector, "app.kubernetes.io/name"), Some(name));
    let endpoints = block(&lines(PODMONITOR), "podMetricsEndpoints:").expect("endpoints");
    assert_eq!(value(&endpoints, "port"), Some("metrics"));
    assert!(container_port(DAEMONSET, "metrics").is_some());
    assert_eq!(value(&endpoints, "scheme"), Some("https"));
    assert_eq!(value(&endpoints, "interval"), Some("15s"));
    let tls = block(&endpoints, "tlsConfig:").expect("tlsConfig");
    for part in ["ca:", "cert:", "keySecret:"] {
        let lines = block(&tls, part).unwrap_or_else(|| panic!("tlsConfig {part}"));
        assert_eq!(
            value(&lines, "name"),
            Some("dpu-agent-metrics-client"),
            "{part}"
        );
    }
    assert!(PODMONITOR.contains("kind: ServiceMonitor") && PODMONITOR.contains("clusterIP: None"));
}
