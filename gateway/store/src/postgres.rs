//! PostgreSQL: the production store. Many gateway replicas share one database; transitions lock
//! the invocation row (`FOR UPDATE`), recovery takes expired leases with `SKIP LOCKED`, and every
//! lease time is read from the database clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use switchyard_contract::{
    Admission, Error, Event, Invocation, InvocationId, InvocationStore, ListQuery, Millis, NewInvocation, Page,
    TenantId, Transition, WorkerId,
};

use crate::StoreOptions;
use crate::error::{StoreError, db};
use crate::migrate::{Embedded, POSTGRES};
use crate::row::{Mutable, append, decode_event, decode_invocation, id_text, mutable, page, to_json};

/// The invocation columns, in the order `row::decode_invocation` reads them.
const COLUMNS: &str = "id, tenant, subject, upstream, operation, effect, request::text, digest, ingress_key, \
    state_data::text, attempts::bigint, cancel_data::text, lease_owner, fence, lease_expires_ms, last_seq, \
    created_ms, updated_ms";
const NOW: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
/// The fast path is taken only while the lease has at least this long left on the estimate.
const FAST_PATH_MARGIN_MS: i64 = 1_000;

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// The database clock minus the local clock, as last observed (for the held-lease fast path's
    /// estimate of "now"; the database still decides every lease check).
    clock_offset_ms: Arc<AtomicI64>,
}

fn local_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

impl PgStore {
    pub async fn connect(url: &str, opts: &StoreOptions) -> Result<Self, StoreError> {
        let connect: PgConnectOptions = url.parse()?;
        let pool = PgPoolOptions::new()
            .max_connections(opts.max_connections)
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect)
            .await?;
        let store = Self { pool, clock_offset_ms: Arc::new(AtomicI64::new(0)) };
        if opts.migrate {
            store.migrate().await?;
        }
        Ok(store)
    }

    /// Applies pending migrations (takes an advisory lock: concurrent starts are safe).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        sqlx::migrate::Migrator::new(Embedded(POSTGRES)).await?.run(&self.pool).await?;
        Ok(())
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn observe_clock(&self, db_now: i64) {
        self.clock_offset_ms.store(db_now - local_ms(), Ordering::Relaxed);
    }

    fn estimate_now(&self) -> i64 {
        local_ms() + self.clock_offset_ms.load(Ordering::Relaxed)
    }

    /// Tests only: shifts this store's estimate of the database clock by `ms` (a local clock
    /// that runs ahead or behind), to show the estimate never judges a lease.
    #[doc(hidden)]
    pub fn skew_estimate_for_tests(&self, ms: i64) {
        self.clock_offset_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// The held-lease fast path: one statement that applies the change only if the row is still
    /// exactly `expected` and the lease is live on the database clock. `None`: not applied.
    async fn try_held(&self, expected: &Invocation, f: &Transition) -> Result<Option<(Invocation, Vec<Event>)>, Error> {
        let (Some(owner), Some(expires)) = (expected.lease.owner, expected.lease.expires_at_ms) else {
            return Ok(None);
        };
        let estimate = self.estimate_now();
        // The estimate only chooses the path; it never judges a lease. If it says the lease has
        // run out (or nearly), or the change it computes is a late outcome, the locked path
        // decides on the database's clock.
        if !expected.holds_lease(owner, expected.lease.fence, estimate + FAST_PATH_MARGIN_MS) {
            return Ok(None);
        }
        let mut current = expected.clone();
        let Ok(kinds) = f(&mut current, estimate) else { return Ok(None) };
        if kinds.iter().any(|k| matches!(k, switchyard_contract::EventKind::LateOutcome { .. })) {
            return Ok(None);
        }
        if kinds.is_empty() && current == *expected {
            return Ok(Some((current, Vec::new())));
        }
        let mut events = append(&mut current, kinds, estimate)?;
        let m = mutable(&current)?;
        let (seqs, ids, names, datas) = event_columns(&events)?;
        // Times come from the database clock: the lease runs for the same span the transition
        // asked for, counted from the database's now.
        let sql = format!(
            "WITH u AS (UPDATE invocations SET state = $2, state_data = $3::jsonb, attempts = $4, \
                cancel_data = $5::jsonb, lease_owner = $6, fence = $7, lease_expires_ms = {NOW} + $8, last_seq = $9, \
                updated_ms = {NOW} \
              WHERE id = $1 AND last_seq = $10 AND fence = $11 AND lease_owner = $12 AND lease_expires_ms = $13 \
                AND lease_expires_ms > {NOW} \
              RETURNING id, lease_expires_ms, updated_ms), \
             ev AS (INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
              SELECT u.id, e.seq, e.event_id, e.kind, e.data::jsonb, u.updated_ms FROM u, \
                unnest($14::bigint[], $15::text[], $16::text[], $17::text[]) AS e(seq, event_id, kind, data)) \
             SELECT lease_expires_ms, updated_ms FROM u"
        );
        let row = bind_mutable(q(sql), current.id, &m, m.lease_expires_ms.map(|t| t - estimate))
            .bind(i64::try_from(expected.last_seq).map_err(|_| Error::internal("seq overflow"))?)
            .bind(i64::try_from(expected.lease.fence.0).map_err(|_| Error::internal("fence overflow"))?)
            .bind(owner.to_string())
            .bind(expires)
            .bind(seqs)
            .bind(ids)
            .bind(names)
            .bind(datas)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let at: i64 = row.try_get(1).map_err(db)?;
        self.observe_clock(at);
        current.lease.expires_at_ms = row.try_get(0).map_err(db)?;
        current.updated_at_ms = at;
        for (e, _) in &mut events {
            e.at_ms = at;
        }
        Ok(Some((current, events.into_iter().map(|(e, _)| e).collect())))
    }
}

type PgQuery = sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Binds `$1` = the id and `$2..=$9` = the mutable columns (state, state data, attempts,
/// cancel data, lease owner, fence, `lease_expires`, last sequence), as both update paths use them.
fn bind_mutable(query: PgQuery, id: InvocationId, m: &Mutable, lease_expires: Option<i64>) -> PgQuery {
    query
        .bind(id_text(id))
        .bind(m.state)
        .bind(m.state_data.clone())
        .bind(m.attempts)
        .bind(m.cancel_data.clone())
        .bind(m.lease_owner.clone())
        .bind(m.fence)
        .bind(lease_expires)
        .bind(m.last_seq)
}

/// Events as column arrays for `unnest`: sequence numbers, ids, kinds, JSON data.
type EventColumns = (Vec<i64>, Vec<String>, Vec<String>, Vec<String>);

fn event_columns(events: &[(Event, String)]) -> Result<EventColumns, Error> {
    let mut cols = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (e, data) in events {
        cols.0.push(i64::try_from(e.seq).map_err(|_| Error::internal("seq overflow"))?);
        cols.1.push(e.id.to_string());
        cols.2.push(e.kind.name().to_string());
        cols.3.push(data.clone());
    }
    Ok(cols)
}

fn q(sql: String) -> PgQuery {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

fn inv(row: &PgRow) -> Result<Invocation, Error> {
    decode_invocation(row)
}

#[async_trait]
impl InvocationStore for PgStore {
    async fn admit(&self, draft: NewInvocation) -> Result<Admission, Error> {
        let (tenant, key) = (draft.principal.tenant.clone(), draft.ingress_key.clone());
        let ttl = draft.lease_ttl_ms;
        let (mut new, first) = Invocation::admit(draft, 0);
        let mut evs = append(&mut new, vec![first], 0)?;
        let (event, event_data) = evs.pop().ok_or_else(|| Error::internal("no admission event"))?;
        let m = mutable(&new)?;
        // One statement: insert the invocation and its first event atomically, on the
        // database clock, unless the tenant already used the ingress key.
        let sql = format!(
            "WITH clock AS (SELECT {NOW} AS ms), \
             ins AS (INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest, \
                 ingress_key, state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms) \
               SELECT $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11::jsonb, 0, $12, $13, clock.ms + $14, $15, clock.ms, clock.ms FROM clock \
               ON CONFLICT (tenant, ingress_key) WHERE ingress_key IS NOT NULL DO NOTHING RETURNING id, created_ms), \
             ev AS (INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
               SELECT ins.id, 1, $16, $17, $18::jsonb, ins.created_ms FROM ins RETURNING seq) \
             SELECT ins.created_ms FROM ins, ev"
        );
        let row = q(sql)
            .bind(id_text(new.id))
            .bind(tenant.as_str())
            .bind(&new.principal.subject)
            .bind(&new.target.upstream)
            .bind(&new.target.operation)
            .bind(new.target.effect.as_str())
            .bind(to_json(&new.request)?)
            .bind(new.digest.as_str())
            .bind(key.as_ref().map(|k| k.as_str().to_string()))
            .bind(m.state)
            .bind(&m.state_data)
            .bind(&m.lease_owner)
            .bind(m.fence)
            .bind(ttl)
            .bind(m.last_seq)
            .bind(event.id.to_string())
            .bind(event.kind.name())
            .bind(&event_data)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        if let Some(row) = row {
            let now: i64 = row.try_get(0).map_err(db)?;
            new.created_at_ms = now;
            new.updated_at_ms = now;
            new.lease.expires_at_ms = Some(now + ttl);
            return Ok(Admission::Created(new));
        }
        let Some(key) = key else {
            return Err(Error::internal("admission inserted nothing without an ingress key"));
        };
        let sql = format!("SELECT {COLUMNS} FROM invocations WHERE tenant = $1 AND ingress_key = $2");
        let row = q(sql).bind(tenant.as_str()).bind(key.as_str()).fetch_one(&self.pool).await.map_err(db)?;
        Ok(Admission::Existing(inv(&row)?))
    }

    async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        let mut tx = self.pool.begin().await.map_err(db)?;
        let sql = format!("SELECT {COLUMNS}, {NOW} FROM invocations WHERE id = $1 FOR UPDATE");
        let row = q(sql)
            .bind(id_text(id))
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found(format!("invocation {id} not found")))?;
        let now: i64 = row.try_get(18).map_err(db)?;
        self.observe_clock(now);
        let mut current = inv(&row)?;
        let before = current.clone();
        let kinds = f(&mut current, now)?;
        if kinds.is_empty() && current == before {
            return Ok((current, Vec::new()));
        }
        let events = append(&mut current, kinds, now)?;
        let m = mutable(&current)?;
        let (seqs, ids, names, datas) = event_columns(&events)?;
        let sql = "WITH u AS (UPDATE invocations SET state = $2, state_data = $3::jsonb, attempts = $4, \
                cancel_data = $5::jsonb, lease_owner = $6, fence = $7, lease_expires_ms = $8, last_seq = $9, \
                updated_ms = $10 WHERE id = $1 RETURNING id) \
            INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
            SELECT u.id, e.seq, e.event_id, e.kind, e.data::jsonb, $10 FROM u, \
                unnest($11::bigint[], $12::text[], $13::text[], $14::text[]) AS e(seq, event_id, kind, data)";
        bind_mutable(q(sql.to_string()), id, &m, m.lease_expires_ms)
            .bind(m.updated_ms)
            .bind(seqs)
            .bind(ids)
            .bind(names)
            .bind(datas)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok((current, events.into_iter().map(|(e, _)| e).collect()))
    }

    async fn transition_held(&self, expected: &Invocation, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        match self.try_held(expected, &f).await? {
            Some(done) => Ok(done),
            None => self.transition(expected.id, f).await,
        }
    }

    async fn get(&self, tenant: Option<&TenantId>, id: InvocationId) -> Result<Option<Invocation>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM invocations WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)");
        let row = q(sql)
            .bind(id_text(id))
            .bind(tenant.map(|t| t.as_str().to_string()))
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(inv).transpose()
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, Error> {
        let limit = query.page_size()?;
        let after = query.after()?;
        let sql = format!(
            "SELECT {COLUMNS} FROM invocations WHERE tenant = $1 AND ($2::text IS NULL OR state = $2) \
             AND ($3::bigint IS NULL OR (created_ms, id) < ($3, $4)) ORDER BY created_ms DESC, id DESC LIMIT $5"
        );
        let rows = q(sql)
            .bind(tenant.as_str())
            .bind(query.state.map(|s| s.as_str()))
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1.to_string()))
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.pool)
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
            "SELECT {COLUMNS} FROM invocations WHERE upstream = $1 AND state = 'unknown' \
             AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3"
        );
        let rows = q(sql)
            .bind(upstream.to_string())
            .bind(after.map(id_text))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter().map(inv).collect()
    }

    async fn events(&self, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        let rows = q("SELECT invocation_id, seq, event_id, data::text, at_ms FROM invocation_events \
                WHERE invocation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
            .to_string())
        .bind(id_text(id))
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter().map(decode_event).collect()
    }

    async fn acquire_expired(&self, worker: WorkerId, ttl_ms: Millis, limit: u32) -> Result<Vec<Invocation>, Error> {
        let sql = format!(
            "WITH expired AS (SELECT id FROM invocations \
                 WHERE state IN ('admitted', 'dispatching', 'retrying') AND lease_expires_ms < {NOW} \
                 ORDER BY lease_expires_ms LIMIT $3 FOR UPDATE SKIP LOCKED) \
             UPDATE invocations i SET lease_owner = $1, fence = i.fence + 1, lease_expires_ms = {NOW} + $2 \
             FROM expired WHERE i.id = expired.id RETURNING {}",
            COLUMNS.split(", ").map(|c| format!("i.{c}")).collect::<Vec<_>>().join(", ")
        );
        let rows = q(sql)
            .bind(worker.to_string())
            .bind(ttl_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        rows.iter().map(inv).collect()
    }

    async fn release_leases(&self, worker: WorkerId) -> Result<u64, Error> {
        let r = q("UPDATE invocations SET lease_expires_ms = 0 WHERE lease_owner = $1 \
                AND state IN ('admitted', 'dispatching', 'retrying')"
            .to_string())
        .bind(worker.to_string())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(r.rows_affected())
    }

    async fn now(&self) -> Result<Millis, Error> {
        let row = q(format!("SELECT {NOW}")).fetch_one(&self.pool).await.map_err(db)?;
        row.try_get(0).map_err(db)
    }
}
