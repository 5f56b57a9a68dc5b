//! `switchyard migrate`: apply pending migrations and exit.

use crate::config::Config;

pub async fn run(cfg: &Config) -> anyhow::Result<()> {
    super::open_store(cfg).await?;
    println!("migrations applied to {}", switchyard_store::redact_url(&cfg.store_url()));
    Ok(())
}
