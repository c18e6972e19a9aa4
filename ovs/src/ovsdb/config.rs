//! Global knobs in `Open_vSwitch.other_config` (ovs-netlink.md §1.2). One key is changed
//! with a `mutate` (delete the key, insert the new pair — what the IDL sends for a map
//! update, since RFC 7047's map `insert` never overwrites), never by rewriting the whole map,
//! so concurrent changes to other keys are not lost. The previous value is read by a
//! `select` in the same transaction, so "did it change" is exact.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::apply::{Applied, WaitPolicy};
use super::database::not_initialized;
use super::datum::{set, str_map};
use super::error::Error;
use super::handle::Ovsdb;
use super::model::OPEN_VSWITCH;
use super::txn::{Mutation, Operation};

/// Keys ovs-vswitchd reads only at start-up (or only once), with the evidence: a change
/// is stored and acknowledged (`cur_cfg` advances) but has no effect until ovs-vswitchd
/// restarts. "doc" = OVS 3.1 `ovs-vswitchd.conf.db(5)` ("Changing this value requires
/// restarting the daemon"); "source" = `lib/netdev-offload.c`
/// `netdev_set_flow_api_enabled`, which reads these inside an `ovsthread_once` the first
/// time `hw-offload` is true.
const RESTART_KEYS: &[(&str, &str)] = &[
    (
        "hw-offload",
        "doc: requires restarting ovs-vswitchd (source: enabling is latched once at run \
         time, disabling needs a restart)",
    ),
    (
        "tc-policy",
        "source: read once, when hw-offload is first enabled; restart ovs-vswitchd",
    ),
    (
        "offload-rebalance",
        "doc: requires restarting ovs-vswitchd (source: read once with hw-offload)",
    ),
    ("n-offload-threads", "doc: requires restarting ovs-vswitchd"),
    ("dpdk-init", "doc: requires restarting ovs-vswitchd"),
    ("dpdk-socket-mem", "doc: requires restarting ovs-vswitchd"),
    ("dpdk-socket-limit", "doc: requires restarting ovs-vswitchd"),
    ("dpdk-hugepage-dir", "doc: requires restarting ovs-vswitchd"),
    ("dpdk-extra", "doc: requires restarting ovs-vswitchd"),
    ("vhost-sock-dir", "doc: requires restarting ovs-vswitchd"),
    (
        "vhost-iommu-support",
        "doc: requires restarting ovs-vswitchd",
    ),
    (
        "vhost-postcopy-support",
        "doc: requires restarting ovs-vswitchd",
    ),
    (
        "userspace-tso-enable",
        "doc: requires restarting ovs-vswitchd",
    ),
    (
        "per-port-memory",
        "doc: requires restarting ovs-vswitchd once dpdk-init is true",
    ),
    (
        "shared-mempool-config",
        "doc: requires restarting ovs-vswitchd once dpdk-init is true",
    ),
];

/// Why changing `key` needs an ovs-vswitchd restart to take effect, or `None` when
/// ovs-vswitchd applies it at run time (e.g. `max-idle`, `max-revalidator`).
pub fn restart_note(key: &str) -> Option<&'static str> {
    RESTART_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, note)| *note)
}

/// Value rules of the keys we know (OVS 3.1 `ovs-vswitchd.conf.db(5)`); OVSDB stores any
/// string and ovs-vswitchd silently falls back to the default on a bad one, so these are
/// checked before sending.
fn validate(key: &str, value: &str) -> Result<(), Error> {
    let int_at_least = |min: i64| match value.parse::<i64>() {
        Ok(n) if n >= min => Ok(()),
        _ => Err(format!("an integer, at least {min}")),
    };
    let rule = match key {
        "hw-offload" | "offload-rebalance" => match value {
            "true" | "false" => Ok(()),
            _ => Err("true or false".to_owned()),
        },
        "tc-policy" => match value {
            "none" | "skip_sw" | "skip_hw" => Ok(()),
            _ => Err("one of none, skip_sw, skip_hw".to_owned()),
        },
        "max-idle" => int_at_least(500),
        "max-revalidator" => int_at_least(100),
        "min-revalidate-pps" => int_at_least(1),
        "stats-update-interval" => int_at_least(5000),
        "n-offload-threads" => match value.parse::<u32>() {
            Ok(1..=10) => Ok(()),
            _ => Err("an integer in 1..=10".to_owned()),
        },
        _ => Ok(()),
    };
    rule.map_err(|reason| Error::InvalidValue {
        key: format!("other_config:{key}"),
        value: value.to_owned(),
        reason: format!("expected {reason}"),
    })
}

impl Ovsdb {
    /// Global knobs in `Open_vSwitch.other_config` (`hw-offload`, `tc-policy`, ...).
    pub fn other_config(&self) -> OtherConfigHandle {
        OtherConfigHandle::new(self.clone())
    }
}

/// `Open_vSwitch.other_config` operations on one database.
#[derive(Debug, Clone)]
pub struct OtherConfigHandle {
    ovsdb: Ovsdb,
}

impl OtherConfigHandle {
    pub(crate) fn new(ovsdb: Ovsdb) -> Self {
        Self { ovsdb }
    }

    /// The whole map.
    pub async fn get_all(&self) -> Result<BTreeMap<String, String>, Error> {
        let results = self
            .ovsdb
            .transact()
            .op(Operation::select(OPEN_VSWITCH, vec![], &["other_config"]))
            .execute()
            .await?;
        let rows = results.first().map(|r| r.rows()).unwrap_or_default();
        let row = rows.first().ok_or_else(not_initialized)?;
        Ok(str_map(row.get("other_config")))
    }

    /// One key's value, `None` when unset (ovs-vswitchd then uses its default).
    pub async fn get(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.get_all().await?.remove(key))
    }

    /// Sets `key` to `value` (checked for the keys in the reference first).
    pub fn set(&self, key: &str, value: &str) -> SetOtherConfig {
        self.change(key, Some(value))
    }

    /// Removes `key`, so ovs-vswitchd falls back to its default.
    pub fn remove(&self, key: &str) -> SetOtherConfig {
        self.change(key, None)
    }

    /// Several keys set (`Some`) or removed (`None`) in one transaction: all of them or
    /// none, so a bad value for the third key cannot leave the first two changed.
    pub fn update(
        &self,
        changes: impl IntoIterator<Item = (String, Option<String>)>,
    ) -> UpdateOtherConfig {
        UpdateOtherConfig {
            ovsdb: self.ovsdb.clone(),
            changes: changes.into_iter().collect(),
            policy: WaitPolicy::default(),
        }
    }

    fn change(&self, key: &str, value: Option<&str>) -> SetOtherConfig {
        SetOtherConfig {
            ovsdb: self.ovsdb.clone(),
            key: key.to_owned(),
            value: value.map(str::to_owned),
            policy: WaitPolicy::default(),
        }
    }
}

/// A change of several `other_config` keys being built; see [`OtherConfigHandle::update`].
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct UpdateOtherConfig {
    ovsdb: Ovsdb,
    changes: Vec<(String, Option<String>)>,
    policy: WaitPolicy,
}

impl UpdateOtherConfig {
    /// Returns once committed, without waiting for ovs-vswitchd to apply it.
    pub fn no_wait(mut self) -> Self {
        self.policy.no_wait = true;
        self
    }

    /// How long to wait for ovs-vswitchd (default: the handle's apply timeout).
    pub fn apply_timeout(mut self, timeout: Duration) -> Self {
        self.policy.timeout = Some(timeout);
        self
    }

    /// Validates every key and value first, then commits all changes with one
    /// `next_cfg += 1` and waits for ovs-vswitchd. One [`ConfigChange`] per key, in
    /// request order.
    pub async fn execute(self) -> Result<Vec<ConfigChange>, Error> {
        let mut seen = std::collections::BTreeSet::new();
        for (key, value) in &self.changes {
            if key.is_empty() {
                return Err(Error::InvalidValue {
                    key: "other_config".to_owned(),
                    value: String::new(),
                    reason: "the key must not be empty".to_owned(),
                });
            }
            if !seen.insert(key.as_str()) {
                return Err(Error::InvalidValue {
                    key: format!("other_config:{key}"),
                    value: value.clone().unwrap_or_default(),
                    reason: "the key is changed twice in one update".to_owned(),
                });
            }
            if let Some(value) = value {
                validate(key, value)?;
            }
        }
        if self.changes.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<serde_json::Value> = self.changes.iter().map(|(k, _)| json!(k)).collect();
        let mut mutations = vec![Mutation::delete("other_config", set(keys))];
        let pairs: Vec<serde_json::Value> = self
            .changes
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| json!([k, v])))
            .collect();
        if !pairs.is_empty() {
            mutations.push(Mutation::insert("other_config", json!(["map", pairs])));
        }
        let ops = vec![
            Operation::select(OPEN_VSWITCH, vec![], &["other_config"]),
            Operation::mutate(OPEN_VSWITCH, vec![], mutations),
        ];
        let (results, applied) = self.ovsdb.commit_change(ops, self.policy).await?;
        let before = results.first().map(|r| r.rows()).unwrap_or_default();
        let mut previous_map = before
            .first()
            .map(|row| str_map(row.get("other_config")))
            .ok_or_else(not_initialized)?;
        Ok(self
            .changes
            .into_iter()
            .map(|(key, value)| {
                let previous = previous_map.remove(&key);
                let changed = previous != value;
                let restart_required = changed && restart_note(&key).is_some();
                tracing::info!(%key, ?previous, ?value, restart_required, "other_config changed");
                ConfigChange {
                    key,
                    previous,
                    value,
                    applied,
                    restart_required,
                }
            })
            .collect())
    }
}

/// A change of one `other_config` key being built.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct SetOtherConfig {
    ovsdb: Ovsdb,
    key: String,
    value: Option<String>,
    policy: WaitPolicy,
}

/// What a change of one `other_config` key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChange {
    /// The key.
    pub key: String,
    /// Its value before the change (`None`: unset).
    pub previous: Option<String>,
    /// Its value now (`None`: removed).
    pub value: Option<String>,
    /// The commit and whether ovs-vswitchd confirmed it.
    pub applied: Applied,
    /// True when the value changed and the key only takes effect after ovs-vswitchd
    /// restarts (see [`restart_note`]); ovs-vswitchd acknowledges such a change without
    /// acting on it, so the caller must tell the user.
    pub restart_required: bool,
}

impl SetOtherConfig {
    /// Returns once committed, without waiting for ovs-vswitchd to apply it.
    pub fn no_wait(mut self) -> Self {
        self.policy.no_wait = true;
        self
    }

    /// How long to wait for ovs-vswitchd (default: the handle's apply timeout).
    pub fn apply_timeout(mut self, timeout: Duration) -> Self {
        self.policy.timeout = Some(timeout);
        self
    }

    /// Commits the change with `next_cfg += 1` and waits for ovs-vswitchd.
    pub async fn execute(self) -> Result<ConfigChange, Error> {
        let update = UpdateOtherConfig {
            ovsdb: self.ovsdb,
            changes: vec![(self.key.clone(), self.value)],
            policy: self.policy,
        };
        update
            .execute()
            .await?
            .pop()
            .ok_or_else(|| Error::InvalidValue {
                key: format!("other_config:{}", self.key),
                value: String::new(),
                reason: "no change was made".to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_are_validated() {
        validate("hw-offload", "true").expect("bool");
        validate("tc-policy", "skip_sw").expect("enum");
        validate("max-idle", "500").expect("minimum");
        validate("some-future-key", "anything").expect("unknown keys pass");
        for (key, value) in [
            ("hw-offload", "yes"),
            ("tc-policy", "skip"),
            ("max-idle", "499"),
            ("max-idle", "10s"),
            ("max-revalidator", "99"),
            ("n-offload-threads", "11"),
        ] {
            let err = validate(key, value).expect_err(value);
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn restart_keys_are_the_documented_ones() {
        assert!(restart_note("hw-offload").is_some());
        assert!(restart_note("tc-policy").is_some());
        assert!(restart_note("max-idle").is_none());
        assert!(restart_note("max-revalidator").is_none());
    }
}
