//! One member of a fleet: an agent to ask, and the host it serves.
//!
//! Why a type of its own: every fleet command (health, checks, counters, proofs, RoCE pairs,
//! publishing) needs the same few facts about a node, whether they came from an inventory
//! file or from Kubernetes discovery, and a node's name is how every result is reported.

use std::collections::BTreeMap;

use dpu_proto::Endpoint;

use crate::agent::connect::TlsFiles;

/// A node of the fleet, as the inventory file or Kubernetes discovery describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The node's name: unique in the fleet, what every result row is keyed by (and, when
    /// discovered in Kubernetes, the Node object's name).
    pub name: String,
    /// Where its dpu-agent listens, as this dpuctl reaches it.
    pub agent: Endpoint,
    /// Mutual TLS towards a `tcp:` agent; `None`: plaintext or a Unix socket.
    pub tls: Option<TlsFiles>,
    /// The host's ssh destination (`user@host`), for the commands that run on the host
    /// itself (RoCE pairs, host-side checks); `None`: those commands skip the node.
    pub ssh: Option<String>,
    /// The agent as the host itself reaches it (the tmfifo address, usually the same on
    /// every host), given as `--agent` to the dpuctl that commands run on the host (`fleet
    /// prove`); `None`: that dpuctl's own default.
    pub host_agent: Option<Endpoint>,
    /// The host's data interface (the rail RoCE pairs test), when it is not the default.
    pub interface: Option<String>,
    /// Free-form labels (`rack`, `rail`, ...): what `--select` and the pair groups match.
    pub labels: BTreeMap<String, String>,
    /// The Kubernetes Node this target runs on, where results are published; `None`
    /// outside Kubernetes (an inventory may set it with `node = "..."`).
    pub node: Option<String>,
}

impl Target {
    /// A target with only a name and an agent: the rest empty.
    pub fn new(name: impl Into<String>, agent: Endpoint) -> Self {
        Self {
            name: name.into(),
            agent,
            tls: None,
            ssh: None,
            host_agent: None,
            interface: None,
            labels: BTreeMap::new(),
            node: None,
        }
    }

    /// The value of a label, with `name` standing for the target's name.
    pub fn label(&self, key: &str) -> Option<&str> {
        if key == "name" {
            return Some(&self.name);
        }
        self.labels.get(key).map(String::as_str)
    }
}
