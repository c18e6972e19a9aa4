//! The demo run (being written).

use crate::commands::Env;
use crate::demo::args::TrainingStorageArgs;
use crate::outcome::Outcome;

pub(crate) async fn training_storage(
    _env: &Env<'_>,
    _args: &TrainingStorageArgs,
) -> anyhow::Result<Outcome> {
    anyhow::bail!("demo training-storage is not built yet")
}
