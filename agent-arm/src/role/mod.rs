//! What a caller may do: the vocabulary the configuration names roles in (`[security]
//! insecure_role`, `unix_role`) and the one policy table ([`policy`]) of which role each
//! RPC needs. Below the configuration, the security layer and the telemetry, so none of
//! them imports another to know a role or whether a method is served.

pub(crate) mod policy;

use serde::{Deserialize, Serialize};

/// What a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    /// Nothing but health checks and reflection.
    None,
    /// Inventory, counters, listings and flow dumps: reads only.
    Viewer,
    /// Everything, including what changes storage and switching.
    Operator,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Viewer => "viewer",
            Self::Operator => "operator",
        }
    }
}
