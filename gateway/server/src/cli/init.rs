//! `switchyard init --bridge|--guard|--expose [FILE]`: write a commented starting configuration
//! for one job. The files are the quick starts' own (`config/quickstart/`), so what `init`
//! writes is what the README runs.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("job").required(true).multiple(false)))]
pub struct Args {
    /// Bridge an MCP server's tools to A2A clients, and an A2A agent to MCP clients.
    #[arg(long, group = "job")]
    bridge: bool,
    /// Put approval in front of an MCP server's write tools.
    #[arg(long, group = "job")]
    guard: bool,
    /// Expose an internal A2A agent, with its own card, on every A2A binding.
    #[arg(long, group = "job")]
    expose: bool,
    /// Where to write it.
    #[arg(default_value = "switchyard.toml")]
    file: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    force: bool,
}

const BRIDGE: &str = include_str!("../../../../config/quickstart/bridge.toml");
const GUARD: &str = include_str!("../../../../config/quickstart/guard.toml");
const EXPOSE: &str = include_str!("../../../../config/quickstart/expose.toml");

impl Args {
    fn template(&self) -> &'static str {
        if self.bridge {
            BRIDGE
        } else if self.guard {
            GUARD
        } else {
            EXPOSE
        }
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(&args.file) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!("{} exists: choose another file, or pass --force to replace it", args.file.display())
        }
        other => other.with_context(|| format!("cannot write {}", args.file.display()))?,
    };
    file.write_all(args.template().as_bytes()).with_context(|| format!("cannot write {}", args.file.display()))?;
    println!("wrote {}; run it with: switchyard --config {} serve", args.file.display(), args.file.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// Each template is a configuration `serve` accepts as it is.
    #[test]
    fn every_template_loads() {
        for (name, text) in [("bridge", BRIDGE), ("guard", GUARD), ("expose", EXPOSE)] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = dir.path().join("switchyard.toml");
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = Config::load(Some(&path), std::iter::empty()) {
                panic!("{name}: {e}");
            }
        }
    }
}
