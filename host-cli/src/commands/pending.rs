//! Commands whose implementation has not landed yet. They parse their arguments (so the
//! command surface is fixed and documented) and then say plainly that they do nothing.

use crate::outcome::Outcome;

pub(crate) fn not_yet(command: &str, area: &str) -> anyhow::Result<Outcome> {
    anyhow::bail!("`dpuctl {command}` is not implemented in this version (area: {area})")
}
