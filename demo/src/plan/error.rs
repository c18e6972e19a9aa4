//! What is wrong with a plan: each problem located (key path, line, column), and all of
//! one file's problems as one error.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// One problem with a plan: where (key path and, when known, line/column) and what is
/// wrong and expected. A list of these is the whole answer to "why was my plan refused".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanError {
    /// TOML key path, e.g. `storage.manifest[2].sha256`; empty for the file as a whole.
    pub key: String,
    /// What is wrong and what is expected.
    pub message: String,
    /// 1-based line in the plan file, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters), when known.
    pub column: Option<usize>,
}

impl PlanError {
    /// An error about `key` without a position yet ([`Plan::load`](super::Plan::load) adds it).
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, "{line}:{column}: ")?;
        }
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.message)
    }
}

/// All problems of one plan file, printable as one error (one line per problem, prefixed
/// with the file name the way compilers do, so editors can jump to them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors {
    /// The plan file.
    pub file: PathBuf,
    /// Every problem found, in file order where known.
    pub errors: Vec<PlanError>,
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.errors.len();
        write!(
            f,
            "{}: {count} problem{} in the plan",
            self.file.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for error in &self.errors {
            // `file:line:col: ...` when located (what editors jump to), else `file: ...`.
            let sep = if error.line.is_some() { ":" } else { ": " };
            write!(f, "\n  {}{sep}{error}", self.file.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}
