//! SPDK bdev QoS: `bdev_set_qos_limit` and the `assigned_rate_limits` of `bdev_get_bdevs`
//! (docs/reference/storage.md §7), with SPDK's own rules, so a caller can refuse what SPDK
//! would silently change (round up, clamp) before anything is sent.

use serde::{Deserialize, Serialize};

use super::{SnapCall, SnapClient};

/// `SPDK_BDEV_QOS_MIN_IOS_PER_SEC` (SPDK v24.01 lib/bdev/bdev.c): IOPS limits are applied in
/// multiples of it; SPDK rounds any other value up (storage.md §7.2).
pub const QOS_MIN_IOS_PER_SEC: u64 = 1000;

/// `SPDK_BDEV_QOS_MAX_MBYTES_PER_SEC` (SPDK v24.01 lib/bdev/bdev.c): a larger MiB/s limit is
/// clamped to it (storage.md §7.2).
pub const QOS_MAX_MBYTES_PER_SEC: u64 = u64::MAX / (1024 * 1024);

/// The four rate limits of one bdev, in SPDK's keys and units; 0 is unlimited. Both the
/// params of `bdev_set_qos_limit` (with `name`, see [`SetQosLimit`]) and `bdev_get_bdevs`'
/// `assigned_rate_limits` (all four keys always present there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QosLimits {
    /// Read and write I/Os per second together.
    pub rw_ios_per_sec: u64,
    /// Read and write MiB per second together.
    pub rw_mbytes_per_sec: u64,
    /// Read MiB per second.
    pub r_mbytes_per_sec: u64,
    /// Write MiB per second.
    pub w_mbytes_per_sec: u64,
}

/// A limit SPDK would not apply as given: it would round it up or clamp it, so what it
/// enforces (and reports) would differ from what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QosLimitError {
    /// An IOPS limit that is not a multiple of [`QOS_MIN_IOS_PER_SEC`].
    #[error("{key}: {value} is not a multiple of {QOS_MIN_IOS_PER_SEC} (SPDK would round it up to {rounded}); use 0 for unlimited")]
    NotMultiple {
        /// The SPDK key.
        key: &'static str,
        /// The value asked for.
        value: u64,
        /// What SPDK would apply instead (saturated where SPDK itself would wrap).
        rounded: u64,
    },
    /// A MiB/s limit above [`QOS_MAX_MBYTES_PER_SEC`].
    #[error("{key}: {value} is above SPDK's largest bandwidth limit {QOS_MAX_MBYTES_PER_SEC} MiB/s (SPDK would clamp it); use 0 for unlimited")]
    TooLarge {
        /// The SPDK key.
        key: &'static str,
        /// The value asked for.
        value: u64,
    },
}

impl QosLimits {
    /// Whether every limit is 0, i.e. the bdev is not limited at all.
    pub fn is_unlimited(&self) -> bool {
        *self == Self::default()
    }

    /// The limits by SPDK key, in SPDK's order (`qos_rpc_type[]`).
    pub fn by_key(&self) -> [(&'static str, u64); 4] {
        [
            ("rw_ios_per_sec", self.rw_ios_per_sec),
            ("rw_mbytes_per_sec", self.rw_mbytes_per_sec),
            ("r_mbytes_per_sec", self.r_mbytes_per_sec),
            ("w_mbytes_per_sec", self.w_mbytes_per_sec),
        ]
    }

    /// Checks the limits against SPDK v24.01's rules (storage.md §7.2): an IOPS limit is 0
    /// or a multiple of 1000, a MiB/s limit at most [`QOS_MAX_MBYTES_PER_SEC`]. SPDK itself
    /// accepts other values but changes them; refusing them keeps what is stored equal to
    /// what SPDK enforces and reports. The first offending key is named.
    pub fn check(&self) -> Result<(), QosLimitError> {
        let iops = self.rw_ios_per_sec;
        if !iops.is_multiple_of(QOS_MIN_IOS_PER_SEC) {
            return Err(QosLimitError::NotMultiple {
                key: "rw_ios_per_sec",
                value: iops,
                rounded: iops.saturating_add(QOS_MIN_IOS_PER_SEC - iops % QOS_MIN_IOS_PER_SEC),
            });
        }
        for (key, value) in &self.by_key()[1..] {
            if *value > QOS_MAX_MBYTES_PER_SEC {
                return Err(QosLimitError::TooLarge { key, value: *value });
            }
        }
        Ok(())
    }
}

/// Params of `bdev_set_qos_limit`: always all four keys, so the bdev ends up with exactly
/// these limits (a key left out would keep the bdev's old limit of that type, §7.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetQosLimit<'a> {
    /// The bdev.
    pub name: &'a str,
    /// The limits; 0 lifts one.
    #[serde(flatten)]
    pub limits: QosLimits,
}

impl SnapClient {
    /// `bdev_set_qos_limit`: gives bdev `name` exactly `limits` (all zero lifts them). SPDK
    /// answers `true`; an unknown bdev is -19 "No such device", which
    /// [`SnapError::kind`](super::SnapError::kind) reads as not found. Check the limits with
    /// [`QosLimits::check`] first: SPDK rounds or clamps what breaks its rules instead of
    /// refusing it.
    pub fn bdev_set_qos_limit(&self, name: &str, limits: QosLimits) -> SnapCall<bool> {
        self.call("bdev_set_qos_limit", SetQosLimit { name, limits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_carries_the_name_and_all_four_keys() {
        let request = SetQosLimit {
            name: "r0n1",
            limits: QosLimits {
                rw_ios_per_sec: 2000,
                r_mbytes_per_sec: 10,
                ..QosLimits::default()
            },
        };
        assert_eq!(
            serde_json::to_value(&request).expect("serialize"),
            json!({"name": "r0n1", "rw_ios_per_sec": 2000, "rw_mbytes_per_sec": 0,
                   "r_mbytes_per_sec": 10, "w_mbytes_per_sec": 0})
        );
    }

    #[test]
    fn assigned_rate_limits_decode_from_a_v24_01_bdev_entry() {
        // One entry of SPDK v24.01's bdev_get_bdevs (rpc_dump_bdev_info), trimmed.
        let entry = json!({
            "name": "r0n1", "aliases": [], "product_name": "NVMe disk", "block_size": 512,
            "num_blocks": 131072, "uuid": "8f2c1bd6-6c44-4bd7-9d3e-6ab1f4c1b2a0",
            "assigned_rate_limits": {"rw_ios_per_sec": 2000, "rw_mbytes_per_sec": 0,
                                     "r_mbytes_per_sec": 10, "w_mbytes_per_sec": 0},
            "claimed": false, "zoned": false
        });
        let info: super::super::BdevInfo = serde_json::from_value(entry).expect("decode");
        assert_eq!(
            info.assigned_rate_limits,
            Some(QosLimits {
                rw_ios_per_sec: 2000,
                rw_mbytes_per_sec: 0,
                r_mbytes_per_sec: 10,
                w_mbytes_per_sec: 0,
            })
        );
        // A peer that does not report them (not SPDK's bdev layer) reads as unknown, not 0.
        let bare: super::super::BdevInfo =
            serde_json::from_value(json!({"name": "x"})).expect("decode");
        assert_eq!(bare.assigned_rate_limits, None);
    }

    #[test]
    fn spdk_rules_refuse_what_spdk_would_round_or_clamp() {
        let iops = |n| QosLimits {
            rw_ios_per_sec: n,
            ..QosLimits::default()
        };
        assert_eq!(iops(0).check(), Ok(()));
        assert_eq!(iops(1000).check(), Ok(()));
        assert_eq!(iops(18_446_744_073_709_551_000).check(), Ok(()));
        assert_eq!(
            iops(1500).check(),
            Err(QosLimitError::NotMultiple {
                key: "rw_ios_per_sec",
                value: 1500,
                rounded: 2000
            })
        );
        let text = iops(1).check().expect_err("1").to_string();
        assert!(
            text.starts_with("rw_ios_per_sec: 1 is not a multiple of 1000"),
            "{text}"
        );
        // u64::MAX is SPDK's "not given": refused like any other non-multiple.
        assert!(iops(u64::MAX).check().is_err());
        let max = QosLimits {
            r_mbytes_per_sec: QOS_MAX_MBYTES_PER_SEC,
            ..QosLimits::default()
        };
        assert_eq!(max.check(), Ok(()));
        for (key, limits) in [
            (
                "rw_mbytes_per_sec",
                QosLimits {
                    rw_mbytes_per_sec: QOS_MAX_MBYTES_PER_SEC + 1,
                    ..QosLimits::default()
                },
            ),
            (
                "r_mbytes_per_sec",
                QosLimits {
                    r_mbytes_per_sec: u64::MAX,
                    ..QosLimits::default()
                },
            ),
            (
                "w_mbytes_per_sec",
                QosLimits {
                    w_mbytes_per_sec: QOS_MAX_MBYTES_PER_SEC + 1,
                    ..QosLimits::default()
                },
            ),
        ] {
            let err = limits.check().expect_err(key);
            assert!(
                matches!(err, QosLimitError::TooLarge { key: k, .. } if k == key),
                "{err}"
            );
        }
        assert_eq!(QOS_MAX_MBYTES_PER_SEC, 17_592_186_044_415);
        assert!(QosLimits::default().is_unlimited());
        assert!(!iops(1000).is_unlimited());
    }
}
