//! The plan's errors located in its file, through the TOML key/position foundation
//! ([`dpu_host::toml_keys`]).

use super::error::PlanError;
use dpu_host::toml_keys::{locate_toml_error, KeyPositions};

/// Turns a toml deserialization error into a plan error with key path and position.
pub(super) fn from_toml(text: &str, error: &toml::de::Error) -> PlanError {
    let problem = locate_toml_error(text, error);
    PlanError {
        key: problem.key,
        message: problem.message,
        line: problem.position.map(|(line, _)| line),
        column: problem.position.map(|(_, column)| column),
    }
}

/// Fills in line/column for errors that have a key path but no position, using the
/// deepest part of the path present in the file (a missing key points at its table).
pub(super) fn locate_all(text: &str, errors: &mut [PlanError]) {
    let positions = KeyPositions::parse(text);
    for error in errors.iter_mut().filter(|e| e.line.is_none()) {
        if let Some((line, column)) = positions.of(&error.key) {
            error.line = Some(line);
            error.column = Some(column);
        }
    }
}
