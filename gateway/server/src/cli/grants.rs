//! `switchyard grants mint|list|revoke`: grants let a subject's calls run up to a tier without
//! waiting for approval. Minted with the gateway's grant key (see `[policy] grant_key_file`),
//! recorded in the store, verified offline by every replica; a revocation takes effect at every
//! replica's next decision on that grant.

use switchyard_contract::{AuditEntry, AuditKind, TenantId};
use switchyard_policy::Tier;
use switchyard_policy::grants::GrantClaims;

use crate::config::Config;

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
    let grants = stores.grants;
    match cmd {
        Command::Mint { subject, tenant, upstream, operation, ceiling, expires_in_s } => {
            let tenant = TenantId::new(tenant)?;
            let ceiling: Tier = serde_json::from_value(serde_json::Value::String(ceiling.clone()))
                .map_err(|_| anyhow::anyhow!("--ceiling must be routine, sensitive or critical (got `{ceiling}`)"))?;
            let now = u64::try_from(switchyard_contract::wall_clock_ms() / 1000).unwrap_or(0);
            let claims = GrantClaims {
                jti: format!("grt_{}", uuid::Uuid::now_v7().simple()),
                iss: String::new(),
                tenant: tenant.as_str().to_string(),
                sub: subject.clone(),
                upstream,
                operation,
                ceiling,
                when: Vec::new(),
                iat: now,
                exp: now + expires_in_s,
                approval: None,
            };
            let token = crate::keys::grant_key(cfg)?.mint(claims.clone())?;
            // Recorded in the audit log first: a grant that cannot be audited is not minted.
            let detail = serde_json::json!({ "grant": claims.jti, "claims": claims });
            super::audit::record(cfg, &stores.audit, entry(AuditKind::GrantMinted, &tenant, detail)).await?;
            grants.record(&claims.jti, &tenant, &subject, &serde_json::to_value(&claims)?).await?;
            println!("{token}");
            eprintln!("grant {} for {subject} in {tenant}: up to {}, {}s", claims.jti, ceiling.as_str(), expires_in_s);
        }
        Command::List { tenant } => {
            let tenant = tenant.map(TenantId::new).transpose()?;
            println!("{:<36}  {:<10}  {:<16}  {:<10}  status", "id", "tenant", "subject", "ceiling");
            for g in grants.list(tenant.as_ref()).await? {
                let status = match &g.revoked_by {
                    Some(by) if by.starts_with(switchyard_policy::grants::USED_BY) => by.clone(),
                    Some(by) => format!("revoked by {by}"),
                    None => "active".into(),
                };
                let ceiling = g.claims["ceiling"].as_str().unwrap_or("?").to_string();
                println!("{:<36}  {:<10}  {:<16}  {:<10}  {status}", g.id, g.tenant.as_str(), g.subject, ceiling);
            }
        }
        Command::Revoke { id, by } => {
            let known = grants.list(None).await?.into_iter().find(|g| g.id == id);
            anyhow::ensure!(grants.revoke(&id, &by).await?, "no active grant `{id}`");
            println!("grant {id} is revoked; every replica refuses it at its next decision");
            if let Some(g) = known {
                let mut revoked =
                    entry(AuditKind::GrantRevoked, &g.tenant, serde_json::json!({ "grant": id, "subject": g.subject }));
                revoked.actor = by;
                super::audit::record(cfg, &stores.audit, revoked).await?;
            }
        }
    }
    Ok(())
}

/// An entry about a grant, by the operator at this command line.
fn entry(kind: AuditKind, tenant: &TenantId, detail: serde_json::Value) -> AuditEntry {
    AuditEntry { kind, tenant: tenant.clone(), actor: "operator".into(), invocation: None, detail }
}
