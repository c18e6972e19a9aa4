//! The OVS backend of the Switch service: an OVSDB handle and the ovs-vswitchd control
//! socket, both built once at start and both lazy.
//!
//! Nothing connects at start: the OVSDB handle opens its socket on the first call and
//! reopens it on the first call after ovsdb-server restarts, and the control socket is
//! found through `{rundir}/ovs-vswitchd.pid` on every call, so a restarted ovs-vswitchd
//! (new pid, new socket) is picked up too. The agent therefore starts without OVS and
//! serves the Switch API as soon as OVS appears, with no agent restart.

pub(crate) mod flow_wire;
pub(crate) mod flows;

use dpu_jsonrpc::ClientOptions;
use dpu_ovs::ovsdb::{Ovsdb, OvsdbOptions};
use dpu_ovs::unixctl::Unixctl;

use crate::config::Config;

/// Why the OVS backend has no clients; the Switch service answers it as `UNAVAILABLE`,
/// the readiness checks and `/metrics` report its text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OvsUnavailable {
    /// `[ovs] enabled = false`.
    #[error("ovsdb: the OVS backend is disabled by configuration ([ovs] enabled = false)")]
    Disabled,
    /// The configured address cannot be used.
    #[error("ovsdb: the OVS backend cannot be used: {0}")]
    Unusable(String),
}

/// The OVS clients, or why there are none.
#[derive(Debug)]
pub(crate) struct OvsBackend {
    state: State,
}

#[derive(Debug)]
enum State {
    /// `[ovs] enabled = false`.
    Disabled,
    /// The configured address cannot be used; checked once at start.
    Unusable(String),
    Ready(OvsClients),
}

/// Handles to ovsdb-server and ovs-vswitchd; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct OvsClients {
    /// The Open_vSwitch database.
    pub(crate) ovsdb: Ovsdb,
    /// ovs-vswitchd's control socket (what `ovs-appctl` talks to), found through the pid
    /// file in the configured run directory.
    pub(crate) vswitchd: Unixctl,
}

impl OvsBackend {
    pub(crate) fn new(config: &Config) -> Self {
        if !config.ovs.enabled {
            return Self {
                state: State::Disabled,
            };
        }
        let address = format!("unix:{}", config.ovsdb_socket().display());
        let rpc = ClientOptions {
            call_timeout: config.ovs.call_timeout,
            ..ClientOptions::v1()
        };
        let options = OvsdbOptions {
            rpc: rpc.clone(),
            ..OvsdbOptions::default()
        };
        let state = match Ovsdb::with_options(&address, options) {
            Ok(ovsdb) => State::Ready(OvsClients {
                ovsdb,
                vswitchd: Unixctl::vswitchd(&config.ovs.rundir).with_options(rpc),
            }),
            Err(e) => State::Unusable(e.to_string()),
        };
        Self { state }
    }

    /// The clients, or why there are none (switched off or misconfigured). Reachability is
    /// not checked here: the call that uses a client finds out, and its error says which
    /// daemon is missing.
    pub(crate) fn clients(&self) -> Result<&OvsClients, OvsUnavailable> {
        match &self.state {
            State::Ready(clients) => Ok(clients),
            State::Disabled => Err(OvsUnavailable::Disabled),
            State::Unusable(reason) => Err(OvsUnavailable::Unusable(reason.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn disabled_backend_says_so_naming_ovs() {
        let mut config = Config::default();
        config.ovs.enabled = false;
        let err = OvsBackend::new(&config).clients().expect_err("disabled");
        assert!(matches!(err, OvsUnavailable::Disabled), "{err:?}");
        assert!(err.to_string().starts_with("ovsdb: "), "{err}");
        assert!(err.to_string().contains("[ovs] enabled = false"), "{err}");
    }

    #[test]
    fn enabled_backend_is_built_without_connecting() {
        let mut config = Config::default();
        config.ovs.rundir = PathBuf::from("/nonexistent/run/openvswitch");
        let backend = OvsBackend::new(&config);
        let clients = backend
            .clients()
            .expect("built lazily, nothing to reach yet");
        assert_eq!(
            clients.ovsdb.socket(),
            PathBuf::from("/nonexistent/run/openvswitch/db.sock")
        );
    }
}
