//! Pinned upstream definitions ([`BindingStore`]) on both databases: trust on first use, and a
//! changed definition stops matching its approval until an operator approves it again.

use async_trait::async_trait;
use switchyard_contract::{Binding, BindingStore, Error, FIRST_USE};

use crate::dialect::{self as sql, Cells, Dialect, Pools, Stmt};

const COLUMNS: &str = "upstream, kind, name, approved_digest, observed_digest, approved_by, updated_at_ms";

/// The binding store on one database.
#[derive(Debug, Clone)]
pub struct SqlBindings<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlBindings<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }
}

fn decode(row: &impl Cells) -> Result<Binding, Error> {
    Ok(Binding {
        upstream: row.text(0)?,
        kind: row.text(1)?,
        name: row.text(2)?,
        approved_digest: row.opt_text(3)?,
        observed_digest: row.text(4)?,
        approved_by: row.opt_text(5)?,
        updated_at_ms: row.int(6)?,
    })
}

#[async_trait]
impl<D: Dialect> BindingStore for SqlBindings<D> {
    /// First sighting: approved at once (approver [`FIRST_USE`]). Later sightings change only
    /// the observed digest.
    async fn observe(&self, upstream: &str, kind: &str, name: &str, digest: &str) -> Result<Binding, Error> {
        let stmt = Stmt::new(format!(
            "INSERT INTO upstream_bindings \
             (upstream, kind, name, approved_digest, observed_digest, approved_by, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $4, $5, {}) \
             ON CONFLICT (upstream, kind, name) DO UPDATE SET \
             observed_digest = excluded.observed_digest, updated_at_ms = excluded.updated_at_ms \
             RETURNING {COLUMNS}",
            D::NOW
        ))
        .text(upstream)
        .text(kind)
        .text(name)
        .text(digest)
        .text(FIRST_USE);
        decode(&sql::one::<D>(self.pools.write(), stmt).await?)
    }

    async fn list(&self, upstream: Option<&str>) -> Result<Vec<Binding>, Error> {
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM upstream_bindings WHERE ($1 IS NULL OR upstream = $1) ORDER BY upstream, kind, name"
        ))
        .opt_text(upstream);
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode).collect()
    }

    async fn approve(&self, upstream: &str, only: Option<(&str, &[&str])>, by: &str) -> Result<u64, Error> {
        let (name, kinds) =
            only.map_or((None, Vec::new()), |(n, k)| (Some(n), k.iter().map(|k| k.to_string()).collect()));
        let stmt = Stmt::new(format!(
            "UPDATE upstream_bindings SET approved_digest = observed_digest, approved_by = $3, updated_at_ms = {} \
             WHERE upstream = $1 AND ($2 IS NULL OR (name = $2 AND {})) \
             AND (approved_digest IS NULL OR approved_digest <> observed_digest)",
            D::NOW,
            D::any("kind", 4)
        ))
        .text(upstream)
        .opt_text(name)
        .text(by)
        .texts(kinds);
        sql::affected::<D>(self.pools.write(), stmt).await
    }
}
