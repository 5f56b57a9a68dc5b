//! Grants as the operator issues them, from the command line or the console: minted with the
//! gateway's grant key (audited first: a grant that cannot be audited is not minted), recorded
//! in the store so every replica can refuse it once revoked; listed; revoked (audited).

use std::sync::Arc;

use switchyard_contract::{AuditEntry, AuditKind, AuditLog, GrantRecord, GrantStore, TenantId};
use switchyard_policy::Tier;
use switchyard_policy::grants::{GrantClaims, GrantKey};

/// The longest a grant may last: a week.
pub const MAX_EXPIRES_IN_S: u64 = 7 * 24 * 3600;

/// Where grants are minted, listed and revoked.
#[derive(Clone)]
pub struct GrantDesk {
    key: Arc<GrantKey>,
    store: Arc<dyn GrantStore>,
    /// The audit log, when it is on.
    audit: Option<Arc<dyn AuditLog>>,
}

impl std::fmt::Debug for GrantDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantDesk").finish_non_exhaustive()
    }
}

/// What to mint: who may run what, up to which tier, for how long.
#[derive(Debug, Clone)]
pub struct Asked {
    pub tenant: TenantId,
    pub subject: String,
    pub upstream: String,
    pub operation: String,
    pub ceiling: Tier,
    pub expires_in_s: u64,
}

/// How a grant stands: `active`, `used by …` (an approval's), or `revoked by …`.
pub fn status(g: &GrantRecord) -> String {
    match &g.revoked_by {
        Some(by) if by.starts_with(switchyard_policy::grants::USED_BY) => by.clone(),
        Some(by) => format!("revoked by {by}"),
        None => "active".into(),
    }
}

impl GrantDesk {
    pub fn new(key: GrantKey, store: Arc<dyn GrantStore>, audit: Option<Arc<dyn AuditLog>>) -> Self {
        Self { key: Arc::new(key), store, audit }
    }

    /// Mints a grant for `asked`, `by` the named person: the signed token (shown once, never
    /// stored) and its claims.
    pub async fn mint(&self, asked: Asked, by: &str) -> anyhow::Result<(String, GrantClaims)> {
        anyhow::ensure!(!asked.subject.trim().is_empty(), "a grant needs a subject");
        anyhow::ensure!(
            (1..=MAX_EXPIRES_IN_S).contains(&asked.expires_in_s),
            "a grant lasts 1 to {MAX_EXPIRES_IN_S} seconds"
        );
        let now = u64::try_from(switchyard_contract::wall_clock_ms() / 1000).unwrap_or(0);
        let claims = GrantClaims {
            jti: format!("grt_{}", uuid::Uuid::now_v7().simple()),
            iss: String::new(),
            tenant: asked.tenant.as_str().to_string(),
            sub: asked.subject.clone(),
            upstream: asked.upstream,
            operation: asked.operation,
            ceiling: asked.ceiling,
            when: Vec::new(),
            iat: now,
            exp: now + asked.expires_in_s,
            approval: None,
        };
        let token = self.key.mint(claims.clone())?;
        let detail = serde_json::json!({ "grant": claims.jti, "claims": claims });
        self.audit(AuditKind::GrantMinted, &asked.tenant, by, detail).await?;
        self.store.record(&claims.jti, &asked.tenant, &asked.subject, &serde_json::to_value(&claims)?).await?;
        Ok((token, claims))
    }

    /// The grants of `tenant` (every tenant's with `None`), newest first.
    pub async fn list(&self, tenant: Option<&TenantId>) -> anyhow::Result<Vec<GrantRecord>> {
        Ok(self.store.list(tenant).await?)
    }

    /// Revokes grant `id` of `tenant` (any tenant's with `None`), `by` the named person; an id
    /// that names no active grant there is an error.
    pub async fn revoke(&self, id: &str, tenant: Option<&TenantId>, by: &str) -> anyhow::Result<()> {
        let known = self.store.list(tenant).await?.into_iter().find(|g| g.id == id && g.revoked_by.is_none());
        let Some(g) = known else { anyhow::bail!("no active grant `{id}`") };
        anyhow::ensure!(self.store.revoke(id, by).await?, "no active grant `{id}`");
        self.audit(AuditKind::GrantRevoked, &g.tenant, by, serde_json::json!({ "grant": id, "subject": g.subject }))
            .await
    }

    async fn audit(
        &self,
        kind: AuditKind,
        tenant: &TenantId,
        by: &str,
        detail: serde_json::Value,
    ) -> anyhow::Result<()> {
        if let Some(log) = &self.audit {
            let entry = AuditEntry { kind, tenant: tenant.clone(), actor: by.into(), invocation: None, detail };
            log.append(entry).await?;
        }
        Ok(())
    }
}
