//! `switchyard stdio [--data-dir DIR] [--read-only TOOL]… [--inherit-env NAME]… -- <command>
//! [args…]`: the gateway in front of one local MCP server (see [`crate::stdio`]).

use std::path::{Path, PathBuf};

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where calls, pins and the audit log are kept (default:
    /// `$XDG_DATA_HOME/switchyard/stdio/<digest of the command>`, so the next launch of the same
    /// server finds them).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A tool that only reads (repeatable). Every other tool is a write: never sent twice.
    #[arg(long = "read-only", value_name = "TOOL")]
    read_only: Vec<String>,
    /// An environment variable the server may inherit (repeatable), besides PATH, HOME, USER,
    /// LANG and the like.
    #[arg(long = "inherit-env", value_name = "NAME")]
    inherit_env: Vec<String>,
    /// The MCP server to launch, and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub async fn run(args: Args, mut cfg: Config, config_file: Option<&Path>) -> anyhow::Result<()> {
    cfg.server.data_dir = match args.data_dir {
        Some(dir) => dir,
        None => crate::stdio::data_dir("stdio", &args.command)?,
    };
    std::fs::create_dir_all(&cfg.server.data_dir)?;
    cfg.mcp.upstreams.push(crate::stdio::upstream(args.command, &args.read_only, args.inherit_env));
    cfg.mcp.wait_for_approval = true;
    cfg.validate()?;
    // stdout carries the protocol; the log goes to stderr, warnings only unless asked for more.
    if cfg.log.filter == crate::config::LogConfig::default().filter {
        cfg.log.filter = "warn".into();
    }
    let traces = super::serve::init_tracing(&cfg)?;
    let served = crate::stdio::serve(cfg, config_file).await;
    if let Some(provider) = traces {
        let _ = tokio::task::spawn_blocking(move || crate::telemetry::stop(&provider)).await;
    }
    served
}
