//! Reading a plan from TOML text: syntax, unknown keys and types first (located with the
//! TOML key-path recovery the demo plan uses too), then every rule of `plan_check.rs`.

use super::plan::Plan;
use super::plan_check::check;
use super::plan_error::{PlanError, PlanErrors};
use super::plan_file::PlanFile;
use crate::toml_keys::locate_toml_error;

/// Parses and checks plan text; every problem found is returned, each naming its field.
pub fn parse(text: &str) -> Result<Plan, PlanErrors> {
    let file: PlanFile = toml::from_str(text).map_err(|e| {
        // The TOML deserializer stops at its first problem; the key path and position
        // come from the spanned document (toml_keys.rs).
        let located = locate_toml_error(text, &e);
        // A missing top-level table is reported by toml at the document's start, which
        // the span lookup reads as inside the first table (`knob.measurement`); the only
        // required tables are top-level, so name them alone and without a position.
        let missing = e.message().starts_with("missing field");
        if let Some(table) = ["measurement", "knob"]
            .into_iter()
            .find(|t| missing && (located.key == *t || located.key.ends_with(&format!(".{t}"))))
        {
            return PlanErrors(vec![PlanError::new(
                table,
                format!("missing; the plan needs a [{table}] table"),
            )]);
        }
        let reason = match located.position {
            Some((line, column)) => format!("{} (line {line}, column {column})", located.message),
            None => located.message,
        };
        PlanErrors(vec![PlanError::new(located.key, reason)])
    })?;
    check(&file).map_err(PlanErrors)
}
