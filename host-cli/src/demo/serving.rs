//! Serving checks (being written).

use crate::commands::Env;
use crate::demo::args::CheckServingArgs;
use crate::outcome::Outcome;

pub(crate) async fn check_serving_command(
    _env: &Env<'_>,
    _args: &CheckServingArgs,
) -> anyhow::Result<Outcome> {
    anyhow::bail!("demo check-serving is not built yet")
}
