//! Pinned upstream definitions ([`BindingStore`]) and sealed secrets ([`SecretVault`]) on both
//! databases. The SQL is the same in both
//! dialects except for placeholders, so it is written once with `$n` and rewritten to `?n`.

use async_trait::async_trait;
use sqlx::Row;
use switchyard_contract::{Binding, BindingStore, Error, FIRST_USE, SecretVault, wall_clock_ms};

use crate::error::db;

const COLUMNS: &str = "upstream, kind, name, approved_digest, observed_digest, approved_by, updated_at_ms";

/// First sighting: approved at once (trust on first use, approver [`FIRST_USE`]). Later sightings change only the
/// observed digest, so a changed definition stops matching its approval.
const OBSERVE: &str = "INSERT INTO upstream_bindings \
    (upstream, kind, name, approved_digest, observed_digest, approved_by, updated_at_ms) \
    VALUES ($1, $2, $3, $4, $4, $6, $5) \
    ON CONFLICT (upstream, kind, name) DO UPDATE SET \
    observed_digest = excluded.observed_digest, updated_at_ms = excluded.updated_at_ms \
    RETURNING upstream, kind, name, approved_digest, observed_digest, approved_by, updated_at_ms";

const APPROVE: &str = "UPDATE upstream_bindings SET approved_digest = observed_digest, approved_by = $3, \
    updated_at_ms = $4 WHERE upstream = $1 AND ($2 IS NULL OR name = $2) \
    AND (approved_digest IS NULL OR approved_digest <> observed_digest)";

fn decode<R: Row>(row: &R) -> Result<Binding, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Binding {
        upstream: row.try_get(0)?,
        kind: row.try_get(1)?,
        name: row.try_get(2)?,
        approved_digest: row.try_get(3)?,
        observed_digest: row.try_get(4)?,
        approved_by: row.try_get(5)?,
        updated_at_ms: row.try_get(6)?,
    })
}

fn list_sql(one: bool) -> String {
    let filter = if one { "WHERE upstream = $1 " } else { "" };
    format!("SELECT {COLUMNS} FROM upstream_bindings {filter}ORDER BY upstream, kind, name")
}

/// Bindings on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgBindings {
    pool: sqlx::PgPool,
}

impl PgBindings {
    pub(crate) fn from_pool(pool: sqlx::PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl BindingStore for PgBindings {
    async fn observe(&self, upstream: &str, kind: &str, name: &str, digest: &str) -> Result<Binding, Error> {
        let row = sqlx::query(OBSERVE)
            .bind(upstream)
            .bind(kind)
            .bind(name)
            .bind(digest)
            .bind(wall_clock_ms())
            .bind(FIRST_USE)
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        decode(&row).map_err(db)
    }

    async fn list(&self, upstream: Option<&str>) -> Result<Vec<Binding>, Error> {
        let sql = list_sql(upstream.is_some());
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        if let Some(u) = upstream {
            q = q.bind(u);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(db)?;
        rows.iter().map(|r| decode(r).map_err(db)).collect()
    }

    async fn approve(&self, upstream: &str, name: Option<&str>, by: &str) -> Result<u64, Error> {
        let done = sqlx::query(APPROVE)
            .bind(upstream)
            .bind(name)
            .bind(by)
            .bind(wall_clock_ms())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(done.rows_affected())
    }
}

/// Bindings on SQLite: writes on the single writer connection, reads on the readers.
#[derive(Debug, Clone)]
pub struct SqliteBindings {
    writer: sqlx::SqlitePool,
    readers: sqlx::SqlitePool,
}

impl SqliteBindings {
    pub(crate) fn from_pools(writer: sqlx::SqlitePool, readers: sqlx::SqlitePool) -> Self {
        Self { writer, readers }
    }
}

fn sqlite(sql: &str) -> String {
    sql.replace('$', "?")
}

#[async_trait]
impl BindingStore for SqliteBindings {
    async fn observe(&self, upstream: &str, kind: &str, name: &str, digest: &str) -> Result<Binding, Error> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sqlite(OBSERVE)))
            .bind(upstream)
            .bind(kind)
            .bind(name)
            .bind(digest)
            .bind(wall_clock_ms())
            .bind(FIRST_USE)
            .fetch_one(&self.writer)
            .await
            .map_err(db)?;
        decode(&row).map_err(db)
    }

    async fn list(&self, upstream: Option<&str>) -> Result<Vec<Binding>, Error> {
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sqlite(&list_sql(upstream.is_some()))));
        if let Some(u) = upstream {
            q = q.bind(u);
        }
        let rows = q.fetch_all(&self.readers).await.map_err(db)?;
        rows.iter().map(|r| decode(r).map_err(db)).collect()
    }

    async fn approve(&self, upstream: &str, name: Option<&str>, by: &str) -> Result<u64, Error> {
        let done = sqlx::query(sqlx::AssertSqlSafe(sqlite(APPROVE)))
            .bind(upstream)
            .bind(name)
            .bind(by)
            .bind(wall_clock_ms())
            .execute(&self.writer)
            .await
            .map_err(db)?;
        Ok(done.rows_affected())
    }
}

const SECRET_GET: &str = "SELECT sealed FROM sealed_secrets WHERE name = $1";
const SECRET_PUT: &str = "INSERT INTO sealed_secrets (name, sealed, updated_at_ms) VALUES ($1, $2, $3) \
    ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated_at_ms = excluded.updated_at_ms";
const SECRET_DELETE: &str = "DELETE FROM sealed_secrets WHERE name = $1";

#[async_trait]
impl SecretVault for PgBindings {
    async fn get(&self, name: &str) -> Result<Option<String>, Error> {
        let row = sqlx::query(SECRET_GET).bind(name).fetch_optional(&self.pool).await.map_err(db)?;
        row.map(|r| r.try_get(0).map_err(db)).transpose()
    }

    async fn put(&self, name: &str, sealed: &str) -> Result<(), Error> {
        sqlx::query(SECRET_PUT).bind(name).bind(sealed).bind(wall_clock_ms()).execute(&self.pool).await.map_err(db)?;
        Ok(())
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        sqlx::query(SECRET_DELETE).bind(name).execute(&self.pool).await.map_err(db)?;
        Ok(())
    }
}

#[async_trait]
impl SecretVault for SqliteBindings {
    async fn get(&self, name: &str) -> Result<Option<String>, Error> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sqlite(SECRET_GET)))
            .bind(name)
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|r| r.try_get(0).map_err(db)).transpose()
    }

    async fn put(&self, name: &str, sealed: &str) -> Result<(), Error> {
        sqlx::query(sqlx::AssertSqlSafe(sqlite(SECRET_PUT)))
            .bind(name)
            .bind(sealed)
            .bind(wall_clock_ms())
            .execute(&self.writer)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        sqlx::query(sqlx::AssertSqlSafe(sqlite(SECRET_DELETE))).bind(name).execute(&self.writer).await.map_err(db)?;
        Ok(())
    }
}
