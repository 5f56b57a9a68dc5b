//! The command line: one file per subcommand.

mod approvals;
mod artifacts;
mod audit;
mod auth;
mod config;
mod conformance;
mod connect;
mod grants;
mod init;
mod invocations;
mod migrate;
mod reconcile;
mod serve;
mod stdio;
mod upstreams;
mod validate_config;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;

/// Switchyard: a durable MCP / A2A gateway.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about)]
pub struct Cli {
    /// Configuration file (TOML). Without one, built-in defaults apply: SQLite and files under
    /// ./.switchyard, listening on 127.0.0.1:8787, with the demo upstream.
    #[arg(long, short, global = true, env = "SWITCHYARD_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway.
    Serve(serve::Args),
    /// Run the gateway in front of one local MCP server, on stdin and stdout: what a desktop
    /// client launches instead of the server (`switchyard stdio -- <command> [args…]`).
    Stdio(stdio::Args),
    /// Relay stdin and stdout to a remote MCP server over Streamable HTTP, for clients that
    /// launch only stdio servers (`switchyard connect <url> [--token T | --login]`).
    Connect(connect::Args),
    /// Write a commented starting configuration for one job (`--bridge`, `--guard`, `--expose`).
    Init(init::Args),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Check a configuration file (default: --config) and exit.
    ValidateConfig(validate_config::Args),
    /// The configuration's JSON Schema and reference, and `migrate` for older files.
    #[command(subcommand)]
    Config(config::Command),
    /// Inspect invocations in the store.
    #[command(subcommand)]
    Invocations(invocations::Command),
    /// Resolve an invocation whose outcome is unknown.
    Reconcile(reconcile::Args),
    /// The calls the policy enforcement point holds for approval.
    #[command(subcommand)]
    Approvals(approvals::Command),
    /// Grants that let a subject's calls run without approval, up to a tier.
    #[command(subcommand)]
    Grants(grants::Command),
    /// Verify or export the hash-chained audit log.
    #[command(subcommand)]
    Audit(audit::Command),
    /// Inspect, download and collect stored artifacts.
    #[command(subcommand)]
    Artifacts(artifacts::Command),
    /// Authorize the gateway at OAuth-protected upstreams (authorization code flow).
    #[command(subcommand)]
    Auth(auth::Command),
    /// Run the official MCP suites and the A2A TCK against a server, client or agent, directly
    /// and through the gateway; list and show past runs.
    #[command(subcommand)]
    Conformance(conformance::Command),
    /// Review and approve pinned upstream tool schemas.
    #[command(subcommand)]
    Upstreams(upstreams::Command),
}

/// Parses the command line, runs the subcommand, and maps errors to exit code 1 (2 for usage).
pub fn main() -> ExitCode {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::ValidateConfig(args) => return validate_config::run(args, cli.config.as_deref()),
        Command::Init(args) => return init::run(args),
        Command::Config(cmd) => return config::run(cmd),
        _ => {}
    }
    let cfg = Config::load(cli.config.as_deref(), std::env::vars())?;
    if matches!(cli.command, Command::Serve(_) | Command::Stdio(_)) {
        warn_deprecated(&cfg); // where a configuration starts (and in validate-config), not in every inspection
    }
    match cli.command {
        Command::Serve(args) => serve::run(args, cfg).await,
        Command::Stdio(args) => stdio::run(args, cfg, cli.config.as_deref()).await,
        Command::Connect(args) => connect::run(args, cfg).await,
        Command::Migrate => migrate::run(&cfg).await,
        Command::Invocations(cmd) => invocations::run(cmd, &cfg).await,
        Command::Reconcile(args) => reconcile::run(args, &cfg).await,
        Command::Approvals(cmd) => approvals::run(cmd, &cfg).await,
        Command::Grants(cmd) => grants::run(cmd, &cfg).await,
        Command::Audit(cmd) => audit::run(cmd, &cfg).await,
        Command::Artifacts(cmd) => artifacts::run(cmd, &cfg).await,
        Command::Upstreams(cmd) => upstreams::run(cmd, &cfg).await,
        Command::Auth(cmd) => auth::run(cmd, &cfg).await,
        Command::Conformance(cmd) => conformance::run(cmd, &cfg).await,
        Command::ValidateConfig(_) | Command::Init(_) | Command::Config(_) => Ok(()),
    }
}

/// Prints on stderr what an older file form became, and the new form.
pub(crate) fn warn_deprecated(cfg: &Config) {
    for line in &cfg.deprecations {
        eprintln!("warning: {line}");
    }
}

/// Opens the configured stores (migrating them) for the inspection commands.
async fn open_store(cfg: &Config) -> anyhow::Result<switchyard_store::Stores> {
    std::fs::create_dir_all(&cfg.server.data_dir)?;
    let opts = switchyard_store::StoreOptions { max_connections: 2, ..Default::default() };
    Ok(switchyard_store::connect(&cfg.store_url(), &opts).await?)
}
