//! The run id: one short token per demo run that goes into object names and into the
//! `dpuctl/run-id` label, so cleanup deletes exactly what this run created and two runs in
//! one namespace never collide. It is a UTC timestamp because people read it in
//! `kubectl get` output and want to know which run an object belongs to.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A validated run id: 1-20 characters of `[a-z0-9-]`, starting with a digit or letter
/// and ending alphanumeric, so it fits both label values and DNS-1123 object names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunId(String);

/// Longest run id, so `dpuctl-train-{id}` stays well inside the 63-character limit.
const MAX_LEN: usize = 20;

impl RunId {
    /// Checks a run id given by the user (`--run-id`) or read back from a label.
    pub fn new(id: &str) -> Result<Self, String> {
        let ok = !id.is_empty()
            && id.len() <= MAX_LEN
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !id.starts_with('-')
            && !id.ends_with('-');
        if ok {
            Ok(Self(id.to_owned()))
        } else {
            Err(format!(
                "run id {id:?}: expected 1-{MAX_LEN} lowercase letters, digits or '-', not \
                 starting or ending with '-'"
            ))
        }
    }

    /// The id for a run started at `now`: `YYYYMMDD-HHMMSS` in UTC.
    pub fn from_time(now: SystemTime) -> Self {
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let days = i64::try_from(secs / 86_400).unwrap_or(0);
        let rest = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        Self(format!(
            "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        ))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`), so no date crate is needed for one timestamp.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_dates() {
        let at = |secs| RunId::from_time(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0).as_str(), "19700101-000000");
        // 2026-11-30 05:07:45 UTC.
        assert_eq!(at(1_796_015_265).as_str(), "20261130-050745");
        // Leap day.
        assert_eq!(at(951_782_400).as_str(), "20000229-000000");
        assert!(RunId::new(at(1_796_015_265).as_str()).is_ok());
    }

    #[test]
    fn rejects_ids_that_cannot_be_names() {
        for bad in ["", "-a", "a-", "A1", "a_b", "a.b", "123456789012345678901"] {
            assert!(RunId::new(bad).is_err(), "{bad:?}");
        }
        assert!(RunId::new("r1").is_ok());
    }
}
