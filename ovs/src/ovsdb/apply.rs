//! "Applied, not just stored": every change carries `next_cfg += 1` and a `select next_cfg`
//! in the change's own transaction (what ovs-vsctl's IDL appends, `lib/ovsdb-idl.c`), then
//! waits for ovs-vswitchd to publish `cur_cfg >= next_cfg`. The wait is one server-side `wait`
//! operation (`until: "!="` on the rows with `cur_cfg >= N`, which is empty until
//! ovs-vswitchd catches up) instead of polling, so it returns as soon as the row changes.

use std::time::Duration;

use serde_json::{json, Value};

use super::database::not_initialized;
use super::error::Error;
use super::handle::Ovsdb;
use super::model::OPEN_VSWITCH;
use super::txn::{Condition, Mutation, OpResult, Operation};

/// Slack on top of the server-side wait for the JSON-RPC deadline, so the server's own
/// `timed out` answer (which names the cause) arrives before our call gives up.
const CALL_SLACK: Duration = Duration::from_secs(5);

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// False when the database already matched the request (an idempotent repeat) and no
    /// transaction was sent.
    pub changed: bool,
    /// The `next_cfg` the change was committed with; `None` when nothing was sent.
    pub next_cfg: Option<i64>,
    /// True when ovs-vswitchd confirmed it (`cur_cfg >= next_cfg`); false with `no_wait`
    /// or when nothing changed.
    pub confirmed: bool,
}

impl Applied {
    /// The result of a request that found nothing to do.
    pub(crate) const UNCHANGED: Self = Self {
        changed: false,
        next_cfg: None,
        confirmed: false,
    };
}

/// Whether and how long a change waits for ovs-vswitchd.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitPolicy {
    pub(crate) no_wait: bool,
    pub(crate) timeout: Option<Duration>,
}

impl Ovsdb {
    /// Commits `ops` plus the `next_cfg` increment in one transaction, then (unless
    /// `no_wait`) waits until ovs-vswitchd applied it. Returns the results of `ops` only.
    pub(crate) async fn commit_change(
        &self,
        ops: Vec<Operation>,
        policy: WaitPolicy,
    ) -> Result<(Vec<OpResult>, Applied), Error> {
        let n = ops.len();
        let mut results = self
            .transact()
            .ops(ops)
            .op(Operation::mutate(
                OPEN_VSWITCH,
                vec![],
                vec![Mutation::add("next_cfg", 1)],
            ))
            .op(Operation::select(OPEN_VSWITCH, vec![], &["next_cfg"]))
            .execute()
            .await?;
        let next_cfg = results
            .last()
            .and_then(|r| {
                r.rows()
                    .first()
                    .and_then(|row| row.get("next_cfg").cloned())
            })
            .and_then(|v| v.as_i64())
            .ok_or_else(not_initialized)?;
        results.truncate(n);
        let confirmed = if policy.no_wait {
            false
        } else {
            let timeout = policy.timeout.unwrap_or(self.apply_timeout);
            self.wait_applied(next_cfg, timeout).await?;
            true
        };
        let applied = Applied {
            changed: true,
            next_cfg: Some(next_cfg),
            confirmed,
        };
        Ok((results, applied))
    }

    /// Waits until ovs-vswitchd has applied configuration `next_cfg` (`cur_cfg >=
    /// next_cfg`), failing with [`Error::NotApplied`] after `timeout` — typically because no
    /// ovs-vswitchd is connected to this database.
    pub async fn wait_applied(&self, next_cfg: i64, timeout: Duration) -> Result<(), Error> {
        let wait = Operation::wait(
            OPEN_VSWITCH,
            vec![Condition::new("cur_cfg", ">=", json!(next_cfg))],
            &["_uuid"],
            "!=",
            vec![],
            timeout,
        );
        let outcome = self
            .transact()
            .op(wait)
            .timeout(timeout.saturating_add(CALL_SLACK))
            .execute()
            .await;
        match outcome {
            Ok(_) => Ok(()),
            Err(Error::Operation { error, .. }) if error == "timed out" => {
                let cur_cfg = self.cur_cfg().await.ok();
                Err(Error::NotApplied {
                    next_cfg,
                    cur_cfg,
                    after: timeout,
                })
            }
            Err(e) => Err(e),
        }
    }

    async fn cur_cfg(&self) -> Result<i64, Error> {
        let results = self
            .transact()
            .op(Operation::select(OPEN_VSWITCH, vec![], &["cur_cfg"]))
            .execute()
            .await?;
        results
            .first()
            .and_then(|r| r.rows().first().and_then(|row| row.get("cur_cfg").cloned()))
            .as_ref()
            .and_then(Value::as_i64)
            .ok_or_else(not_initialized)
    }
}
