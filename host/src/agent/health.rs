//! What `dpu health` reports: the agent's overall and per-service gRPC health, and each
//! backend's state, judged healthy or not.
//!
//! Why in the library: `dpuctl dpu health` shows it for one agent and `dpuctl fleet health`
//! for two hundred; one judgement (a service whose backends are all disabled by
//! configuration is not a fault) must serve both.

use dpu_proto::v1::{self, inventory_client::InventoryClient};
use serde::Serialize;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::agent::session::{rpc_error, AgentConnection, AgentError};

/// One component of the agent's health: the agent, one of its services, or a backend.
#[derive(Debug, Clone, Serialize)]
pub struct HealthRow {
    /// `agent`, a service name (`dpu.v1.Storage`) or `backend NAME`.
    pub component: String,
    /// Its state in lower case (`serving`, `not-serving`, `disabled`, `ready`, ...).
    pub state: String,
    /// Whether this state is fine (serving, ready, or disabled on purpose).
    pub healthy: bool,
    /// What the agent said about it (endpoint, version, reason).
    pub detail: String,
}

impl HealthRow {
    /// The backend's name when this row is one (`backend snap` → `snap`).
    pub fn backend(&self) -> Option<&str> {
        self.component.strip_prefix("backend ")
    }

    /// One line for a problem's detail: `backend snap is unavailable (unix:/x  refused)`.
    pub fn describe(&self) -> String {
        if self.detail.is_empty() {
            format!("{} is {}", self.component, self.state)
        } else {
            format!("{} is {} ({})", self.component, self.state, self.detail)
        }
    }
}

/// The agent's health and the system it runs on.
#[derive(Debug, Clone)]
pub struct AgentHealth {
    /// `Inventory.GetSystem`, which carries the backends.
    pub system: v1::System,
    /// Every component, the agent first.
    pub rows: Vec<HealthRow>,
}

impl AgentHealth {
    /// Whether every component is healthy.
    pub fn healthy(&self) -> bool {
        self.rows.iter().all(|r| r.healthy)
    }
}

/// The backends one area of the agent needs, and the services that stop serving when they
/// are down: the agent's health (`agent-arm/src/health.rs`) follows exactly these.
///
/// Why a table: one judgement serves both "disabled on purpose is not a fault" and the fleet's
/// folding of a down backend's consequences into one cause (`fleet health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendGroup {
    /// What the operator calls the area (`storage`, `switch`): the first word of a cause.
    pub area: &'static str,
    /// What the operator calls the backend (`snap`, `ovs`).
    pub label: &'static str,
    /// The backends' names as `GetSystem.backends` gives them.
    pub backends: &'static [&'static str],
    /// The gRPC services that are NOT_SERVING while one of these backends is down.
    pub services: &'static [&'static str],
}

/// Every backend the agent reports, grouped by what an operator would fix.
pub const BACKEND_GROUPS: &[BackendGroup] = &[
    BackendGroup {
        area: "storage",
        label: "snap",
        backends: &["snap"],
        services: &["dpu.v1.Storage"],
    },
    BackendGroup {
        area: "storage",
        label: "kernel-nvmeof",
        backends: &["kernel-nvmeof"],
        services: &["dpu.v1.Storage"],
    },
    BackendGroup {
        area: "switch",
        label: "ovs",
        backends: &["ovsdb", "ovs-vswitchd"],
        services: &["dpu.v1.Switch"],
    },
    BackendGroup {
        area: "inventory and counters",
        label: "sysfs",
        backends: &["sysfs"],
        services: &["dpu.v1.Inventory", "dpu.v1.Counters"],
    },
];

fn disabled_on_purpose(service: &str, backends: &[v1::BackendStatus]) -> bool {
    let needs: Vec<&str> = BACKEND_GROUPS
        .iter()
        .filter(|g| g.services.contains(&service))
        .flat_map(|g| g.backends.iter().copied())
        .collect();
    let mut needed = backends
        .iter()
        .filter(|b| needs.contains(&b.backend.as_str()))
        .peekable();
    needed.peek().is_some() && needed.all(|b| b.state == v1::BackendState::Disabled as i32)
}

/// An enum's proto name without its prefix, lower case with dashes (`OPER_STATE_UP` → `up`).
pub fn enum_name(full: &str, prefix: &str) -> String {
    full.strip_prefix(prefix)
        .unwrap_or(full)
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// Asks the agent for its health: `Inventory.GetSystem`, then `grpc.health.v1.Health/Check`
/// for the agent, each service and the readiness service (where the agent has one).
pub async fn agent_health(agent: &AgentConnection) -> Result<AgentHealth, AgentError> {
    let channel = agent.channel().await?;
    let mut health = HealthClient::new(channel.clone());
    let mut rows = Vec::new();
    let system = InventoryClient::new(channel)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .get_system(v1::GetSystemRequest {})
        .await
        .map_err(rpc_error("Inventory.GetSystem"))?
        .into_inner();
    let services = std::iter::once("")
        .chain(dpu_proto::SERVICE_NAMES)
        .chain([dpu_proto::READINESS_SERVICE]);
    for service in services {
        let reply = match health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
        {
            Ok(reply) => reply.into_inner(),
            Err(status)
                if service == dpu_proto::READINESS_SERVICE
                    && status.code() == tonic::Code::NotFound =>
            {
                continue;
            }
            Err(status) => return Err(rpc_error("grpc.health.v1.Health/Check")(status)),
        };
        rows.push(service_row(service, reply.status, &system.backends));
    }
    for backend in &system.backends {
        rows.push(backend_row(backend));
    }
    Ok(AgentHealth { system, rows })
}

fn service_row(service: &str, status: i32, backends: &[v1::BackendStatus]) -> HealthRow {
    let status = ServingStatus::try_from(status).unwrap_or(ServingStatus::Unknown);
    let off = status == ServingStatus::NotServing && disabled_on_purpose(service, backends);
    HealthRow {
        component: if service.is_empty() {
            "agent".to_owned()
        } else {
            service.to_owned()
        },
        state: if off {
            "disabled".to_owned()
        } else {
            status.as_str_name().to_ascii_lowercase()
        },
        healthy: status == ServingStatus::Serving || off,
        detail: if off {
            "its backends are disabled by configuration".to_owned()
        } else {
            String::new()
        },
    }
}

fn backend_row(backend: &v1::BackendStatus) -> HealthRow {
    let state = v1::BackendState::try_from(backend.state).unwrap_or(v1::BackendState::Unspecified);
    HealthRow {
        component: format!("backend {}", backend.backend),
        state: enum_name(state.as_str_name(), "BACKEND_STATE_"),
        // A backend switched off on purpose is not a fault.
        healthy: matches!(state, v1::BackendState::Ready | v1::BackendState::Disabled),
        detail: [&backend.endpoint, &backend.version, &backend.detail]
            .into_iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("  "),
    }
}
