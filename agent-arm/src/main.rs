//! `dpu-agent`: the gRPC agent on the BlueField Arm cores.
//!
//! Owns: serving the `dpu.v1` API (listeners, health, reflection, shutdown), the agent's
//! configuration, and mapping backend results to gRPC statuses. Must not touch: protocol
//! details of SNAP, OVS or netlink (those live in `dpu-nvmeof`, `dpu-ovs`, `dpu-probe`),
//! and it never runs a shell command.

mod backends;
mod cli;
mod config;
mod context;
mod datapath_counters;
mod edge;
mod errors;
mod grpc_status;
mod health;
mod health_check;
mod metrics;
mod observability;
mod ovs;
mod role;
mod security;
mod server;
mod service_future;
mod services;
mod storage;
mod telemetry;
mod version;
mod volume_counters;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    if args.print_man {
        // Before the config: printing the page needs no config file.
        return match cli::man_page().and_then(|page| std::io::stdout().write_all(&page)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dpu-agent: error: cannot print the man page: {e}");
                ExitCode::from(2)
            }
        };
    }
    match real_main(&args) {
        Ok(code) => code,
        Err(e) => {
            // The subscriber may not be installed yet (bad config), so print directly.
            eprintln!("dpu-agent: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main(args: &cli::Args) -> anyhow::Result<ExitCode> {
    let mut config = config::Config::load(args.config.as_deref())?;
    args.apply_to(&mut config);
    config.validate()?;
    if let Some(services) = &args.health_check {
        let serving = health_check::run(&config, services)?;
        return Ok(if serving {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    if args.check_config {
        // The files the config names are read as the start reads them, so a config that
        // passes here does not fail the start on a missing or world-readable key.
        if !args.skip_file_checks {
            security::tls::acceptor(&config.security).context(
                "cannot load the TLS files (--skip-file-checks validates the config alone)",
            )?;
        }
        let text = toml::to_string(&config).context("cannot print the effective config")?;
        // The effective config is the command's output.
        #[allow(clippy::print_stdout)]
        {
            print!("{text}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    observability::init(&config.log)?;
    match edge::accept::raise_fd_limit() {
        Ok((before, after)) if before != after => {
            tracing::info!(
                before,
                after,
                "open-file soft limit raised to the hard limit"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file soft limit"),
    }
    // Checked by the kernel here, so a placement it refuses stops the agent with the
    // reason instead of being ignored; every sampler made from now on uses it.
    let placement = config
        .counters
        .placement()
        .context("invalid [counters] placement")?;
    dpu_probe::counters::set_read_placement(placement.clone())
        .context("cannot place the counter reads as [counters] asks")?;
    dpu_probe::counters::set_default_window_bound(config.counters.window_bound);
    if !placement.is_default() {
        tracing::info!(cpus = ?placement.cpus.as_ref().map(ToString::to_string), priority = %placement.priority, "counter reads placed");
    }
    tracing::info!(version = version::AGENT_VERSION, listeners = ?config.listen.iter().map(ToString::to_string).collect::<Vec<_>>(), "dpu-agent starting");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("dpu-agent")
        .build()
        .context("cannot start the async runtime")?
        .block_on(server::run(config))?;
    Ok(ExitCode::SUCCESS)
}
