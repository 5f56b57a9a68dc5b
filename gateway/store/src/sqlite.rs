//! SQLite: the embedded default, for one gateway process. Writes go through a single connection
//! and `BEGIN IMMEDIATE`, so transitions are serialized; readers use a separate pool (WAL).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use switchyard_contract::{
    Admission, Error, Event, Invocation, InvocationId, InvocationStore, ListQuery, Millis, NewInvocation, Page,
    TenantId, Transition, WorkerId,
};

use crate::StoreOptions;
use crate::error::{StoreError, db};
use crate::migrate::{Embedded, SQLITE};
use crate::row::{append, decode_event, decode_invocation, id_text, mutable, page, to_json};

/// The invocation columns, in the order `row::decode_invocation` reads them.
const COLUMNS: &str = "id, tenant, subject, upstream, operation, effect, request, digest, ingress_key, state_data, \
    attempts, cancel_data, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms";
const NOW: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file named by `url`, e.g. `sqlite:///var/lib/x.db`.
    pub async fn connect(url: &str, opts: &StoreOptions) -> Result<Self, StoreError> {
        let (writer, readers) = open_pools(url, opts).await?;
        Ok(Self::from_pools(writer, readers))
    }

    /// Shares pools from [`open_pools`] (the single writer stays single).
    pub(crate) fn from_pools(writer: SqlitePool, readers: SqlitePool) -> Self {
        Self { writer, readers }
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        sqlx::migrate::Migrator::new(Embedded(SQLITE)).await?.run(&self.writer).await?;
        Ok(())
    }
}

/// The single writer (migrated when `opts.migrate`) and the read-only reader pool on one
/// database file (WAL, full sync, 5 s busy timeout, foreign keys on), for every SQLite store.
pub(crate) async fn open_pools(url: &str, opts: &StoreOptions) -> Result<(SqlitePool, SqlitePool), StoreError> {
    if url.contains(":memory:") || url.contains("mode=memory") {
        return Err(StoreError::Config("in-memory SQLite is not durable; give a file path".into()));
    }
    let base = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
    let writer = SqlitePoolOptions::new().max_connections(1).connect_with(base.clone()).await?;
    if opts.migrate {
        sqlx::migrate::Migrator::new(Embedded(SQLITE)).await?.run(&writer).await?;
    }
    let readers = SqlitePoolOptions::new()
        .max_connections(opts.max_connections.clamp(1, 8))
        .connect_lazy_with(base.read_only(true).create_if_missing(false));
    Ok((writer, readers))
}

fn q(sql: String) -> sqlx::query::Query<'static, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

fn inv(row: &SqliteRow) -> Result<Invocation, Error> {
    decode_invocation(row)
}

#[async_trait]
impl InvocationStore for SqliteStore {
    async fn admit(&self, draft: NewInvocation) -> Result<Admission, Error> {
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        let now: i64 = q(format!("SELECT {NOW}")).fetch_one(&mut *tx).await.map_err(db)?.try_get(0).map_err(db)?;
        let (mut new, first) = Invocation::admit(draft, now);
        let events = append(&mut new, vec![first], now)?;
        let m = mutable(&new)?;
        let inserted = q("INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest, \
                ingress_key, state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms) \
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12, ?13, ?14, ?15, ?16, ?16) \
                ON CONFLICT (tenant, ingress_key) WHERE ingress_key IS NOT NULL DO NOTHING"
            .to_string())
        .bind(id_text(new.id))
        .bind(new.principal.tenant.as_str().to_string())
        .bind(new.principal.subject.clone())
        .bind(new.target.upstream.clone())
        .bind(new.target.operation.clone())
        .bind(new.target.effect.as_str())
        .bind(to_json(&new.request)?)
        .bind(new.digest.as_str().to_string())
        .bind(new.ingress_key.as_ref().map(|k| k.as_str().to_string()))
        .bind(m.state)
        .bind(m.state_data)
        .bind(m.lease_owner)
        .bind(m.fence)
        .bind(m.lease_expires_ms)
        .bind(m.last_seq)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if inserted.rows_affected() == 0 {
            let sql = format!("SELECT {COLUMNS} FROM invocations WHERE tenant = ?1 AND ingress_key = ?2");
            let row = q(sql)
                .bind(new.principal.tenant.as_str().to_string())
                .bind(new.ingress_key.as_ref().map(|k| k.as_str().to_string()))
                .fetch_one(&mut *tx)
                .await
                .map_err(db)?;
            return Ok(Admission::Existing(inv(&row)?));
        }
        insert_events(&mut tx, new.id, &events).await?;
        tx.commit().await.map_err(db)?;
        Ok(Admission::Created(new))
    }

    async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
        let row = q(format!("SELECT {COLUMNS}, {NOW} FROM invocations WHERE id = ?1"))
            .bind(id_text(id))
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format!("invocation {id} not found")))?;
        let now: i64 = row.try_get(18).map_err(db)?;
        let mut current = inv(&row)?;
        let before = current.clone();
        let kinds = f(&mut current, now)?;
        if kinds.is_empty() && current == before {
            return Ok((current, Vec::new()));
        }
        let events = append(&mut current, kinds, now)?;
        let m = mutable(&current)?;
        q("UPDATE invocations SET state = ?2, state_data = ?3, attempts = ?4, cancel_data = ?5, lease_owner = ?6, \
            fence = ?7, lease_expires_ms = ?8, last_seq = ?9, updated_ms = ?10 WHERE id = ?1"
            .to_string())
        .bind(id_text(id))
        .bind(m.state)
        .bind(m.state_data)
        .bind(m.attempts)
        .bind(m.cancel_data)
        .bind(m.lease_owner)
        .bind(m.fence)
        .bind(m.lease_expires_ms)
        .bind(m.last_seq)
        .bind(m.updated_ms)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        insert_events(&mut tx, id, &events).await?;
        tx.commit().await.map_err(db)?;
        Ok((current, events.into_iter().map(|(e, _)| e).collect()))
    }

    async fn get(&self, tenant: Option<&TenantId>, id: InvocationId) -> Result<Option<Invocation>, Error> {
        let row = q(format!("SELECT {COLUMNS} FROM invocations WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)"))
            .bind(id_text(id))
            .bind(tenant.map(|t| t.as_str().to_string()))
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.as_ref().map(inv).transpose()
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, Error> {
        let limit = query.page_size()?;
        let after = query.after()?;
        let sql = format!(
            "SELECT {COLUMNS} FROM invocations WHERE tenant = ?1 AND (?2 IS NULL OR state = ?2) \
             AND (?3 IS NULL OR (created_ms, id) < (?3, ?4)) ORDER BY created_ms DESC, id DESC LIMIT ?5"
        );
        let rows = q(sql)
            .bind(tenant.as_str().to_string())
            .bind(query.state.map(|s| s.as_str()))
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1.to_string()))
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        page(rows.iter().map(inv).collect::<Result<_, _>>()?, limit)
    }

    async fn unknown_of(
        &self,
        upstream: &str,
        after: Option<InvocationId>,
        limit: u32,
    ) -> Result<Vec<Invocation>, Error> {
        let sql = format!(
            "SELECT {COLUMNS} FROM invocations WHERE upstream = ?1 AND state = 'unknown' \
             AND (?2 IS NULL OR id > ?2) ORDER BY id LIMIT ?3"
        );
        let rows = q(sql)
            .bind(upstream.to_string())
            .bind(after.map(id_text))
            .bind(i64::from(limit))
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        rows.iter().map(inv).collect()
    }

    async fn events(&self, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        let rows = q("SELECT invocation_id, seq, event_id, data, at_ms FROM invocation_events \
                WHERE invocation_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
            .to_string())
        .bind(id_text(id))
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(decode_event).collect()
    }

    async fn acquire_expired(&self, worker: WorkerId, ttl_ms: Millis, limit: u32) -> Result<Vec<Invocation>, Error> {
        let sql = format!(
            "UPDATE invocations SET lease_owner = ?1, fence = fence + 1, lease_expires_ms = {NOW} + ?2 \
             WHERE id IN (SELECT id FROM invocations WHERE state IN ('admitted', 'dispatching', 'retrying') \
                 AND lease_expires_ms < {NOW} ORDER BY lease_expires_ms LIMIT ?3) RETURNING {COLUMNS}"
        );
        let rows = q(sql)
            .bind(worker.to_string())
            .bind(ttl_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.writer)
            .await
            .map_err(db)?;
        rows.iter().map(inv).collect()
    }

    async fn release_leases(&self, worker: WorkerId) -> Result<u64, Error> {
        let r = q("UPDATE invocations SET lease_expires_ms = 0 WHERE lease_owner = ?1 \
                AND state IN ('admitted', 'dispatching', 'retrying')"
            .to_string())
        .bind(worker.to_string())
        .execute(&self.writer)
        .await
        .map_err(db)?;
        Ok(r.rows_affected())
    }

    async fn now(&self) -> Result<Millis, Error> {
        q(format!("SELECT {NOW}")).fetch_one(&self.readers).await.map_err(db)?.try_get(0).map_err(db)
    }
}

async fn insert_events(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    id: InvocationId,
    events: &[(Event, String)],
) -> Result<(), Error> {
    for (e, data) in events {
        q("INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            .to_string())
        .bind(id_text(id))
        .bind(i64::try_from(e.seq).map_err(|_| Error::internal("seq overflow"))?)
        .bind(e.id.to_string())
        .bind(e.kind.name())
        .bind(data.clone())
        .bind(e.at_ms)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    }
    Ok(())
}
