use dpu_proto::v1;

use super::problems;
use crate::agent::health::{AgentHealth, HealthRow};
use crate::fleet::report::NodeStatus;

fn row(component: &str, state: &str, detail: &str) -> HealthRow {
    HealthRow {
        component: component.into(),
        state: state.into(),
        healthy: matches!(state, "serving" | "ready" | "disabled"),
        detail: detail.into(),
    }
}

/// The rows an agent reports with SNAP `snap` and OVS `ovs` in the given states and
/// itself in `agent` (`serving`, or `not-serving` as it shuts down), as `agent_health`
/// builds them: the agent, each service, readiness, then each backend.
fn node(agent: &str, snap: &str, ovs: &str) -> AgentHealth {
    let serving = |up: bool| if up { "serving" } else { "not-serving" };
    let agent_up = agent == "serving";
    let storage_up = agent_up && snap == "ready";
    // Without OVS, Switch is disabled on purpose and readiness does not require it.
    let switch_off = ovs == "disabled";
    let switch_up = agent_up && (ovs == "ready" || switch_off);
    AgentHealth {
        system: v1::System::default(),
        rows: vec![
            row("agent", agent, ""),
            row("dpu.v1.Inventory", serving(agent_up), ""),
            row("dpu.v1.Storage", serving(storage_up), ""),
            row(
                "dpu.v1.Switch",
                if switch_off {
                    "disabled"
                } else {
                    serving(switch_up)
                },
                "",
            ),
            row("dpu.v1.Counters", serving(agent_up), ""),
            row("readiness", serving(storage_up && switch_up), ""),
            row(
                "backend snap",
                snap,
                "unix:/run/snap.sock  connection refused",
            ),
            row("backend sysfs", "ready", "/"),
            row("backend ovsdb", ovs, "unix:/run/ovsdb.sock"),
            row("backend ovs-vswitchd", ovs, ""),
        ],
    }
}

fn causes(health: &AgentHealth) -> Vec<String> {
    problems(health).into_iter().map(|p| p.cause).collect()
}

#[test]
fn snap_and_ovs_down_is_one_cause_per_backend_with_the_services_folded_in() {
    let health = node("serving", "unavailable", "unavailable");
    let found = problems(&health);
    let causes: Vec<&str> = found.iter().map(|p| p.cause.as_str()).collect();
    assert_eq!(
        causes,
        [
            "storage: snap backend unavailable",
            "switch: ovs backend unavailable"
        ],
        "{found:#?}"
    );
    assert!(found
        .iter()
        .all(|p| p.status == NodeStatus::Fail && p.check == "agent.health"));
    // The detail keeps what was folded: the backends' own words and the service they stop.
    assert!(
        found[0].detail.contains("connection refused")
            && found[0].detail.contains("so dpu.v1.Storage is not-serving"),
        "{}",
        found[0].detail
    );
    assert!(
        found[1].detail.contains("backend ovsdb is unavailable")
            && found[1]
                .detail
                .contains("backend ovs-vswitchd is unavailable")
            && found[1].detail.contains("so dpu.v1.Switch is not-serving"),
        "{}",
        found[1].detail
    );
}

#[test]
fn only_snap_down_is_one_cause() {
    assert_eq!(
        causes(&node("serving", "unavailable", "ready")),
        ["storage: snap backend unavailable"]
    );
    // A degraded backend says so rather than "unavailable".
    assert_eq!(
        causes(&node("serving", "ready", "degraded")),
        ["switch: ovs backend degraded"]
    );
}

#[test]
fn an_agent_not_serving_with_healthy_backends_is_one_cause() {
    let health = node("not-serving", "ready", "ready");
    let found = problems(&health);
    assert_eq!(
        found.iter().map(|p| p.cause.as_str()).collect::<Vec<_>>(),
        ["agent not SERVING"],
        "{found:#?}"
    );
    assert!(
        found[0]
            .detail
            .contains("so dpu.v1.Inventory is not-serving")
            && found[0].detail.contains("readiness is not-serving"),
        "{}",
        found[0].detail
    );
}

#[test]
fn a_healthy_node_has_no_problem_and_disabled_ovs_is_not_one() {
    assert!(problems(&node("serving", "ready", "ready")).is_empty());
    assert!(problems(&node("serving", "ready", "disabled")).is_empty());
}

#[test]
fn what_no_backend_explains_keeps_its_own_cause() {
    // A service down with its backends ready, and readiness alone, each name themselves.
    let mut health = node("serving", "ready", "ready");
    health.rows[2] = row("dpu.v1.Storage", "not-serving", "");
    assert_eq!(causes(&health), ["dpu.v1.Storage not SERVING"]);
    let mut health = node("serving", "ready", "ready");
    health.rows[5] = row("readiness", "not-serving", "");
    assert_eq!(causes(&health), ["readiness not SERVING"]);
    // A backend this dpuctl does not know is named as the agent names it.
    let mut health = node("serving", "ready", "ready");
    health.rows.push(row("backend doca", "unavailable", ""));
    assert_eq!(causes(&health), ["doca backend unavailable"]);
}
