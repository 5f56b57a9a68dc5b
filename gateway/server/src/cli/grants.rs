//! `switchyard grants mint|list|revoke`: grants let a subject's calls run up to a tier without
//! waiting for approval. Minted with the gateway's grant key (see `[policy] grant_key_file`),
//! recorded in the store, verified offline by every replica; a revocation takes effect at every
//! replica's next decision on that grant.

use switchyard_contract::TenantId;
use switchyard_policy::Tier;

use crate::config::Config;
use crate::grants::{Asked, GrantDesk, status};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Mint a grant; prints the token (present it as MCP `_meta["dev.switchyard/grant"]` or the
    /// admin API's `Switchyard-Grant` header).
    Mint {
        #[arg(long)]
        subject: String,
        #[arg(long, default_value = "default")]
        tenant: String,
        #[arg(long, default_value = "*")]
        upstream: String,
        #[arg(long, default_value = "*")]
        operation: String,
        /// The highest tier it lets run: routine, sensitive or critical.
        #[arg(long)]
        ceiling: String,
        #[arg(long, default_value_t = 3600)]
        expires_in_s: u64,
    },
    /// The tenant's grants (all tenants without `--tenant`), newest first.
    List {
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a grant by id.
    Revoke {
        id: String,
        #[arg(long, default_value = "operator")]
        by: String,
    },
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    anyhow::ensure!(cfg.policy.is_some(), "no [policy] is configured: grants have no effect");
    let stores = super::open_store(cfg).await?;
    let audit = cfg.audited().then(|| crate::app::audit_log(&stores.audit, super::audit::CLI_PARTITION.into()));
    let desk = GrantDesk::new(crate::keys::grant_key(cfg)?, stores.grants.clone(), audit);
    match cmd {
        Command::Mint { subject, tenant, upstream, operation, ceiling, expires_in_s } => {
            let tenant = TenantId::new(tenant)?;
            let ceiling: Tier = serde_json::from_value(serde_json::Value::String(ceiling.clone()))
                .map_err(|_| anyhow::anyhow!("--ceiling must be routine, sensitive or critical (got `{ceiling}`)"))?;
            let asked =
                Asked { tenant: tenant.clone(), subject: subject.clone(), upstream, operation, ceiling, expires_in_s };
            let (token, claims) = desk.mint(asked, "operator").await?;
            println!("{token}");
            eprintln!("grant {} for {subject} in {tenant}: up to {}, {}s", claims.jti, ceiling.as_str(), expires_in_s);
        }
        Command::List { tenant } => {
            let tenant = tenant.map(TenantId::new).transpose()?;
            println!("{:<36}  {:<10}  {:<16}  {:<10}  status", "id", "tenant", "subject", "ceiling");
            for g in desk.list(tenant.as_ref()).await? {
                let ceiling = g.claims["ceiling"].as_str().unwrap_or("?").to_string();
                println!("{:<36}  {:<10}  {:<16}  {:<10}  {}", g.id, g.tenant.as_str(), g.subject, ceiling, status(&g));
            }
        }
        Command::Revoke { id, by } => {
            desk.revoke(&id, None, &by).await?;
            println!("grant {id} is revoked; every replica refuses it at its next decision");
        }
    }
    Ok(())
}
