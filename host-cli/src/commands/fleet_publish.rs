//! `dpuctl fleet --kube` and `--publish`: Kubernetes discovery of the targets and results
//! written onto Nodes (dpu-host's `fleet::kube`). Without the `kube` feature both are
//! refused with the reason. Discovered targets use the global `--ca/--cert/--key` for
//! the agents' mutual-TLS listeners.

use dpu_host::agent::connect::TlsFiles;
use dpu_host::fleet::not_ready::NotReady;
use dpu_host::fleet::report::FleetReport;
use dpu_host::fleet::target::Target;

use crate::fleet_cli::FleetTargets;

#[cfg(not(feature = "kube"))]
pub(crate) async fn discover(
    _fleet: &FleetTargets,
    _tls: Option<TlsFiles>,
) -> anyhow::Result<(Vec<Target>, Vec<NotReady>)> {
    anyhow::bail!("--kube needs dpuctl built with `--features kube`")
}

#[cfg(not(feature = "kube"))]
pub(crate) async fn publish(
    _fleet: &FleetTargets,
    _targets: &[Target],
    _report: &FleetReport,
    _parallel: usize,
) -> anyhow::Result<()> {
    anyhow::bail!("--publish needs dpuctl built with `--features kube`")
}

/// The agent pods of the DaemonSet as targets, and the pods that are not ready (they are
/// not asked: no agent answers there yet; each becomes an UNREACHABLE row).
#[cfg(feature = "kube")]
pub(crate) async fn discover(
    fleet: &FleetTargets,
    tls: Option<TlsFiles>,
) -> anyhow::Result<(Vec<Target>, Vec<NotReady>)> {
    use anyhow::Context as _;
    use dpu_host::fleet::kube::{discover, Discovery};

    let client = kube::Client::try_default()
        .await
        .context("cannot configure a Kubernetes client (in-cluster or kubeconfig)")?;
    let discovery = Discovery {
        namespace: fleet.kube_namespace.clone(),
        label_selector: fleet.kube_selector.clone(),
        agent_port: fleet.kube_agent_port,
        tls,
        page_size: 500,
    };
    let found = discover(&client, &discovery).await?;
    let not_ready = found
        .not_ready
        .iter()
        .map(|pod| NotReady {
            name: pod.node.clone().unwrap_or_else(|| pod.pod.clone()),
            detail: format!(
                "agent pod {} is not ready: {} {}",
                pod.pod, pod.phase, pod.reason
            ),
        })
        .collect::<Vec<_>>();
    if found.targets.is_empty() && not_ready.is_empty() {
        anyhow::bail!(
            "no ready agent pod in namespace {} matches {}",
            fleet.kube_namespace,
            fleet.kube_selector
        );
    }
    Ok((found.targets, not_ready))
}

/// Writes each node's result onto its Node; one node that cannot be written is named and
/// makes the command exit 2 after the others are written.
#[cfg(feature = "kube")]
pub(crate) async fn publish(
    _fleet: &FleetTargets,
    targets: &[Target],
    report: &FleetReport,
    parallel: usize,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use dpu_host::fleet::kube::publish;
    use dpu_host::fleet::publish_marks::marks_for;
    use dpu_probe::error_chain;

    let (marks, without_node) = marks_for(report, targets);
    for name in &without_node {
        crate::output::diag(&format!(
            "dpuctl: note: {name} names no Kubernetes node (`node = ...`); not published"
        ));
    }
    let client = kube::Client::try_default()
        .await
        .context("cannot configure a Kubernetes client (in-cluster or kubeconfig)")?;
    let failed: Vec<String> = publish(&client, &marks, parallel)
        .await
        .into_iter()
        .filter_map(|o| o.result.err().map(|e| error_chain(&e)))
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "could not publish to {} node(s):\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    Ok(())
}
