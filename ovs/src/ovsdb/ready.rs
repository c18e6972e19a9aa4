//! "Created, not just applied": `cur_cfg` reaching a change's `next_cfg` says ovs-vswitchd
//! processed it, not that it accepted it. A bridge or port it refused is reported only in
//! the database, in its interface's `ofport` and `error` columns (OVS
//! `vswitchd/vswitch.xml`; ovs-vsctl checks the same after its wait, `utilities/ovs-vsctl.c`
//! `post_db_reload_do_checks`). After a bridge or port change is applied, the interface is
//! read back; a refused one is removed again in one transaction (when this request added
//! it) and the caller gets [`Error::NotCreated`] with OVS's own text.

use super::apply::WaitPolicy;
use super::error::Error;
use super::handle::Ovsdb;
use super::model::InterfaceState;
use super::txn::Operation;

/// What a change asked ovs-vswitchd to create.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Created<'a> {
    /// `bridge` or `port`.
    pub(crate) kind: &'static str,
    /// The bridge's or port's name (and its interface's).
    pub(crate) name: &'a str,
    /// The bridge it is on.
    pub(crate) bridge: &'a str,
}

impl Ovsdb {
    /// Reads back what `created` names once ovs-vswitchd has applied the change; when it
    /// refused it, commits `undo` (the operations removing what this request added; `None`
    /// when it existed before) and fails with [`Error::NotCreated`]. A row gone meanwhile
    /// (deleted by someone else) is not this request's failure.
    pub(crate) async fn check_created(
        &self,
        created: Created<'_>,
        undo: Option<Vec<Operation>>,
        policy: WaitPolicy,
    ) -> Result<(), Error> {
        let tables = self.snapshot().await?;
        let caught_up = tables.open_vswitch().is_some_and(|root| root.caught_up());
        let Some(bridge) = tables.bridge(created.bridge) else {
            return Ok(());
        };
        let interface = if created.kind == "bridge" {
            bridge.local_interface()
        } else {
            bridge
                .port(created.name)
                .and_then(|p| p.interfaces.iter().find(|i| i.name == created.name))
        };
        let Some(state) = interface.map(|i| i.state(caught_up)) else {
            return Ok(());
        };
        if !state.is_failed() {
            return Ok(());
        }
        let error = match &state {
            InterfaceState::Refused { error } => error.clone(),
            _ => None,
        };
        let (removed, removal) = match undo {
            None => (false, None),
            Some(ops) => match self.commit_change(ops, policy).await {
                Ok(_) => (true, None),
                Err(e) => (false, Some(Box::new(e))),
            },
        };
        tracing::warn!(
            kind = created.kind,
            name = created.name,
            bridge = created.bridge,
            error = error.as_deref().unwrap_or(""),
            removed,
            "ovs-vswitchd did not create it"
        );
        Err(Error::NotCreated {
            kind: created.kind,
            name: created.name.to_owned(),
            bridge: created.bridge.to_owned(),
            datapath_type: bridge.datapath_type.clone(),
            error,
            removed,
            removal,
        })
    }
}
