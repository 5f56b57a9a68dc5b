//! Sealed secrets ([`SecretVault`]) on both databases: the gateway encrypts (upstream OAuth
//! tokens); the store keeps only the sealed text.

use async_trait::async_trait;
use switchyard_contract::{Error, SecretVault};

use crate::dialect::{self as sql, Cells, Dialect, Pools, Stmt};

/// The secret vault on one database.
#[derive(Debug, Clone)]
pub struct SqlSecrets<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlSecrets<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }
}

#[async_trait]
impl<D: Dialect> SecretVault for SqlSecrets<D> {
    async fn get(&self, name: &str) -> Result<Option<String>, Error> {
        let stmt = Stmt::new("SELECT sealed FROM sealed_secrets WHERE name = $1").text(name);
        sql::optional::<D>(self.pools.read(), stmt).await?.map(|r| r.text(0)).transpose()
    }

    async fn put(&self, name: &str, sealed: &str) -> Result<(), Error> {
        let stmt = Stmt::new(format!(
            "INSERT INTO sealed_secrets (name, sealed, updated_at_ms) VALUES ($1, $2, {}) \
             ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated_at_ms = excluded.updated_at_ms",
            D::NOW
        ))
        .text(name)
        .text(sealed);
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        sql::affected::<D>(self.pools.write(), Stmt::new("DELETE FROM sealed_secrets WHERE name = $1").text(name))
            .await?;
        Ok(())
    }
}
