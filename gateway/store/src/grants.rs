//! Minted grants and their revocations ([`GrantStore`]) on both databases. Every time is the
//! database's.

use async_trait::async_trait;
use serde_json::Value;
use switchyard_contract::{Error, GrantRecord, GrantStore, TenantId};

use crate::dialect::{self as sql, Cells, Dialect, Pools, Stmt};
use crate::row::{corrupt, parse_json};

/// The grant store on one database.
#[derive(Debug, Clone)]
pub struct SqlGrants<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlGrants<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }
}

fn decode(row: &impl Cells) -> Result<GrantRecord, Error> {
    Ok(GrantRecord {
        id: row.text(0)?,
        tenant: TenantId::new(row.text(1)?).map_err(corrupt)?,
        subject: row.text(2)?,
        claims: parse_json(&row.text(3)?, "grant claims")?,
        minted_ms: row.int(4)?,
        revoked_ms: row.opt_int(5)?,
        revoked_by: row.opt_text(6)?,
    })
}

#[async_trait]
impl<D: Dialect> GrantStore for SqlGrants<D> {
    async fn record(&self, id: &str, tenant: &TenantId, subject: &str, claims: &Value) -> Result<(), Error> {
        let stmt = Stmt::new(format!(
            "INSERT INTO grants (id, tenant, subject, claims, minted_ms) VALUES ($1, $2, $3, $4, {})",
            D::NOW
        ))
        .text(id)
        .text(tenant.as_str())
        .text(subject)
        .text(claims.to_string());
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn revoke(&self, id: &str, by: &str) -> Result<bool, Error> {
        let stmt = Stmt::new(format!(
            "UPDATE grants SET revoked_ms = {}, revoked_by = $2 WHERE id = $1 AND revoked_ms IS NULL",
            D::NOW
        ))
        .text(id)
        .text(by);
        Ok(sql::affected::<D>(self.pools.write(), stmt).await? > 0)
    }

    async fn spend(&self, id: &str, by: &str) -> Result<bool, Error> {
        let stmt = Stmt::new(format!(
            "UPDATE grants SET revoked_ms = COALESCE(revoked_ms, {}), revoked_by = $2 \
             WHERE id = $1 AND (revoked_ms IS NULL OR revoked_by = $2)",
            D::NOW
        ))
        .text(id)
        .text(by);
        Ok(sql::affected::<D>(self.pools.write(), stmt).await? > 0)
    }

    async fn is_revoked(&self, id: &str) -> Result<bool, Error> {
        let stmt = Stmt::new("SELECT 1 FROM grants WHERE id = $1 AND revoked_ms IS NOT NULL").text(id);
        Ok(sql::optional::<D>(self.pools.read(), stmt).await?.is_some())
    }

    async fn list(&self, tenant: Option<&TenantId>) -> Result<Vec<GrantRecord>, Error> {
        let stmt = Stmt::new(
            "SELECT id, tenant, subject, claims, minted_ms, revoked_ms, revoked_by FROM grants \
             WHERE ($1 IS NULL OR tenant = $1) ORDER BY minted_ms DESC, id LIMIT 1000",
        )
        .opt_text(tenant.map(TenantId::as_str));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode).collect()
    }
}
