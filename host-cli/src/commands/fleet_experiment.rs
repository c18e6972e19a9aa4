//! `dpuctl fleet experiment PLAN.toml`: the plan checked here, then run by every selected
//! host's own dpuctl over ssh (`dpu_host::fleet::experiment`), `--at-once` hosts at a
//! time; the fleet's table, each node's verdict and effect, and the distribution.

use anyhow::Context as _;
use std::future::Future;

use dpu_host::experiment::plan_load::parse;
use dpu_host::fleet::experiment::Distribution;
use dpu_host::fleet::on_host::OnHost;
use dpu_host::fleet::report::FleetReport;
use dpu_host::fleet::runner::{run_fleet, unreachable, RunOptions};
use dpu_host::fleet::target::Target;
use dpu_host::remote::watched::Cancel;

use crate::fleet_cli::FleetExperimentArgs;

/// Refuses, before any host is asked, a plan that is not an absolute path (the hosts
/// read the same path) or that does not load here.
pub(super) fn check_plan(args: &FleetExperimentArgs) -> anyhow::Result<()> {
    let path = &args.plan;
    if !path.is_absolute() {
        anyhow::bail!(
            "the plan {} must be an absolute path: each host reads the same path",
            path.display()
        );
    }
    let Some(text) = path.to_str() else {
        anyhow::bail!("the plan's path {} is not UTF-8", path.display());
    };
    let plan =
        std::fs::read_to_string(path).with_context(|| format!("cannot read the plan {text}"))?;
    parse(&plan).with_context(|| format!("the plan {text} is not valid"))?;
    Ok(())
}

/// Runs the experiment on every target's host through `on_host`; when `interrupted`
/// resolves (Ctrl-C), every remote run is stopped (each host reverts its knob on the
/// SIGTERM that stop sends).
pub(super) async fn run(
    targets: &[Target],
    options: &RunOptions,
    on_host: OnHost,
    interrupted: impl Future<Output = ()>,
    args: &FleetExperimentArgs,
) -> FleetReport {
    let cancel = Cancel::new();
    let stop = cancel.clone();
    let stopped = async move {
        interrupted.await;
        stop.cancel();
    };
    let limit = options.deadline;
    let options = options.with_proof_grace();
    let plan = args.plan.to_string_lossy().into_owned();
    run_fleet("experiment", targets, &options, stopped, |_, target| {
        let (on_host, target, cancel) = (on_host.clone(), target.clone(), cancel.clone());
        let (plan, words) = (plan.clone(), args.args.clone());
        async move {
            let run = move || on_host.experiment(&target, &plan, &words, limit, &cancel);
            Ok(tokio::task::spawn_blocking(run)
                .await
                .unwrap_or_else(|e| unreachable(format!("the ssh session's thread failed: {e}"))))
        }
    })
    .await
}

/// The distribution in words: the verdicts by count, and the effect's spread.
pub(super) fn distribution_lines(d: &Distribution) -> Vec<String> {
    if d.verdicts.is_empty() {
        return vec!["no host reported an experiment".to_owned()];
    }
    let mut by_count: Vec<(&String, &usize)> = d.verdicts.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let verdicts: Vec<String> = by_count
        .iter()
        .map(|(verdict, n)| format!("{verdict} {n}"))
        .collect();
    let mut lines = vec![format!("verdicts: {}", verdicts.join(", "))];
    if let Some(s) = &d.effect_percent {
        lines.push(format!(
            "effect of B (% of A's median) over {} node(s): min {:+.2}%, median {:+.2}%, max {:+.2}%",
            s.nodes, s.min, s.median, s.max
        ));
    }
    lines
}
