//! Why a plan was refused: each problem names its field, so the user knows which line to
//! change without reading the code.

use std::fmt;

use serde::Serialize;

/// One problem: the field (a TOML key path such as `knob.interface`, empty for the file as
/// a whole) and what is wrong with it and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanError {
    /// The TOML key path.
    pub field: String,
    /// What is wrong and what is expected.
    pub reason: String,
}

impl PlanError {
    /// A problem with `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.reason)
    }
}

impl std::error::Error for PlanError {}

/// Every problem of one plan, so one edit can fix them all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanErrors(pub Vec<PlanError>);

impl PlanErrors {
    /// Whether `field` has a problem (for tests and for callers that highlight fields).
    pub fn names(&self, field: &str) -> bool {
        self.0.iter().any(|e| e.field == field)
    }
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        write!(
            f,
            "{count} problem{} in the experiment plan",
            if count == 1 { "" } else { "s" }
        )?;
        for error in &self.0 {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}
