//! `switchyard validate-config [FILE]`: parse and validate a configuration (its policy, Cedar
//! policy set included), print a summary.

use std::path::{Path, PathBuf};

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to check (default: --config).
    file: Option<PathBuf>,
}

pub fn run(args: &Args, global: Option<&Path>) -> anyhow::Result<()> {
    let file = args.file.as_deref().or(global);
    let cfg = Config::load(file, std::env::vars())?;
    super::warn_deprecated(&cfg);
    // The policy as the gateway would load it: its Cedar policy set read and validated too.
    if let Some(p) = &cfg.policy {
        let evaluator = switchyard_policy::Evaluator::new(p.clone())?;
        let cedar = evaluator.cedar_hash().map(|h| format!(", cedar policy set {h}")).unwrap_or_default();
        println!("policy {}{cedar}: ok", evaluator.version());
    }
    println!(
        "{}: ok (store {}, listen {}, {} upstream(s))",
        file.map_or_else(|| "defaults".to_string(), |f| f.display().to_string()),
        switchyard_store::redact_url(&cfg.store_url()),
        cfg.server.listen,
        cfg.upstreams.len()
    );
    Ok(())
}
