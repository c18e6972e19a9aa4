//! `dpuctl demo ...`: dispatch to the demo module.

use super::Env;
use crate::cli::DemoCommand;
use crate::outcome::Outcome;

pub(crate) async fn run(env: &Env<'_>, cmd: &DemoCommand) -> anyhow::Result<Outcome> {
    match cmd {
        DemoCommand::TrainingStorage(args) => crate::demo::run::training_storage(env, args).await,
        DemoCommand::CheckServing(args) => {
            crate::demo::serving::check_serving_command(env, args).await
        }
    }
}
