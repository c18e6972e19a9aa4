//! Problems of a plan, collected under their field names so one run names everything
//! wrong; shared by the measurement checks (`plan_check.rs`) and the knob checks
//! (`plan_check_knob.rs`).

use super::plan_error::PlanError;

/// Collects problems, each under its field.
#[derive(Default)]
pub(super) struct Problems(pub(super) Vec<PlanError>);

impl Problems {
    pub(super) fn push(&mut self, field: &str, reason: impl Into<String>) {
        self.0.push(PlanError::new(field, reason));
    }

    /// The value of `result`, or None after recording its error under `field`.
    pub(super) fn take<T>(&mut self, field: &str, result: Result<T, String>) -> Option<T> {
        result.map_err(|reason| self.push(field, reason)).ok()
    }
}

/// Records a problem for every key given that `kind` does not take.
pub(super) fn extra_keys(
    table: &str,
    kind: &str,
    given: &[(&str, bool)],
    takes: &[&str],
    p: &mut Problems,
) {
    for (key, present) in given {
        if *present && !takes.contains(key) {
            p.push(
                &format!("{table}.{key}"),
                format!(
                    "is not a key of a {kind} {table} (its keys: {})",
                    takes.join(", ")
                ),
            );
        }
    }
}

/// A required key of `kind`, or None after recording that it is missing.
pub(super) fn required<'v, T: ?Sized>(
    field: &str,
    kind: &str,
    value: Option<&'v T>,
    p: &mut Problems,
) -> Option<&'v T> {
    if value.is_none() {
        p.push(field, format!("missing; a {kind} needs it"));
    }
    value
}
