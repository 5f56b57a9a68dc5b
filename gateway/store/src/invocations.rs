//! [`InvocationStore`] on both databases. Transitions run in a write transaction that reads the
//! row (locked with `FOR UPDATE` on PostgreSQL, where replicas write concurrently; SQLite's
//! `BEGIN IMMEDIATE` already serializes writers), applies the contract's transition and appends
//! its events; recovery takes expired leases (`SKIP LOCKED` on PostgreSQL). Every time comes
//! from the database clock. On PostgreSQL, admission and the held-lease path take the
//! one-statement fast paths of [`crate::invocations_fast`].

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use async_trait::async_trait;
use sqlx::Transaction;
use switchyard_contract::state::CancelRequest;
use switchyard_contract::{
    Admission, EffectClass, Error, Event, EventId, EventKind, Fence, IngressKey, Invocation, InvocationId,
    InvocationStore, Lease, ListQuery, Millis, NewInvocation, Page, Principal, RequestDigest, Target, TenantId,
    TraceParent, Transition, WorkerId,
};

use crate::batch::Batcher;
use crate::dialect::{self as sql, Cells, Dialect, On, Pg, Pools, Stmt};
use crate::error::StoreError;
use crate::group::GroupCommit;
use crate::row::{corrupt, i64_of, parse_json, to_json, u64_of};

/// The invocation columns, in the order [`decode_invocation`] reads them.
pub(crate) const COLUMNS: &str = "id, tenant, subject, upstream, operation, effect, CAST(request AS TEXT), digest, \
    ingress_key, CAST(state_data AS TEXT), CAST(attempts AS BIGINT), CAST(cancel_data AS TEXT), lease_owner, fence, \
    lease_expires_ms, last_seq, created_ms, updated_ms, parent_id, trace_context";
/// How many columns [`COLUMNS`] names (a statement's next column is at this index).
pub(crate) const COLUMN_COUNT: usize = 20;
const ACTIVE: &str = "state IN ('admitted', 'dispatching', 'retrying')";

/// The invocation store on one database.
#[derive(Debug, Clone)]
pub struct SqlInvocations<D: Dialect> {
    pub(crate) pools: Pools<D>,
    /// PostgreSQL's fast path: the database clock minus the local clock, as last observed (an
    /// estimate that only chooses the path; the database still decides every lease check).
    pub(crate) clock_offset_ms: Arc<AtomicI64>,
    /// The single writer's group commit ([`Dialect::GROUP_COMMIT`]; `None`: one commit per change).
    pub(crate) group: Option<Arc<GroupCommit<D>>>,
    /// The fast paths' batched writer ([`Dialect::FAST_PATHS`]).
    pub(crate) batch: Option<Arc<Batcher<D>>>,
}

/// The production store: many gateway replicas on one PostgreSQL database.
pub type PgStore = SqlInvocations<Pg>;
/// The embedded default: one gateway process on one SQLite file.
pub type SqliteStore = SqlInvocations<crate::dialect::Sqlite>;

impl<D: Dialect> SqlInvocations<D> {
    pub fn new(pools: Pools<D>) -> Self {
        let group = D::GROUP_COMMIT.then(|| Arc::new(GroupCommit::new(pools.clone())));
        let batch = D::FAST_PATHS.then(|| Arc::new(Batcher::new(pools.clone())));
        Self { group, batch, pools, clock_offset_ms: Arc::new(AtomicI64::new(0)) }
    }

    /// The writer pool (PostgreSQL: the one pool).
    pub fn pool(&self) -> &sqlx::Pool<D::Db> {
        self.pools.pool()
    }

    /// The portable admission inside the open write transaction `tx`: insert the invocation and
    /// its first event, unless the tenant already used the ingress key. The caller commits.
    pub(crate) async fn admit_in(
        tx: &mut Transaction<'static, D::Db>,
        draft: NewInvocation,
    ) -> Result<Admission, Error> {
        let now = sql::now::<D>(On::Tx(tx)).await?;
        let (mut new, first) = Invocation::admit_started(draft, now);
        let events = append(&mut new, first, now)?;
        let m = mutable(&new)?;
        let insert = Stmt::new(format!(
            "INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest, ingress_key, \
             state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms, \
             parent_id, trace_context) \
             VALUES ($1, $2, $3, $4, $5, $6, {}, $8, $9, $10, {}, $18, $12, $13, $14, $15, $16, $16, $17, $19) \
             ON CONFLICT (tenant, ingress_key) WHERE ingress_key IS NOT NULL DO NOTHING",
            D::json(7),
            D::json(11)
        ));
        let insert = bind_identity(insert, &new)?
            .text(m.state)
            .text(m.state_data)
            .opt_text(m.lease_owner)
            .int(m.fence)
            .opt_int(m.lease_expires_ms)
            .int(m.last_seq)
            .int(now)
            .opt_text(new.parent.map(|p| p.to_string()))
            .int(m.attempts)
            .opt_text(new.trace.as_ref().map(TraceParent::to_stored));
        if sql::affected::<D>(On::Tx(tx), insert).await? == 0 {
            let existing = by_key::<D>(On::Tx(tx), &new.principal.tenant, new.ingress_key.as_ref()).await?;
            return Ok(Admission::Existing(existing));
        }
        insert_events::<D>(On::Tx(tx), new.id, &events).await?;
        Ok(Admission::Created(new))
    }

    /// The portable transition inside the open write transaction `tx`: read the row (locked on
    /// PostgreSQL), apply `f` on the database clock, write the row and append its events. The
    /// caller commits.
    pub(crate) async fn transition_in(
        tx: &mut Transaction<'static, D::Db>,
        id: InvocationId,
        f: &Transition,
    ) -> Result<Transitioned, Error> {
        let read = Stmt::new(format!("SELECT {COLUMNS}, {} FROM invocations WHERE id = $1{}", D::NOW, D::FOR_UPDATE))
            .text(id.to_string());
        let row = sql::optional::<D>(On::Tx(tx), read)
            .await?
            .ok_or_else(|| Error::not_found(format!("invocation {id} not found")))?;
        let now = row.int(COLUMN_COUNT)?;
        let mut current = decode_invocation(&row)?;
        let before = current.clone();
        let kinds = f(&mut current, now)?;
        if kinds.is_empty() && current == before {
            return Ok(Transitioned { now, invocation: current, events: Vec::new() });
        }
        let events = append(&mut current, kinds, now)?;
        let m = mutable(&current)?;
        let update = Stmt::new(format!(
            "UPDATE invocations SET state = $2, state_data = {}, attempts = $4, cancel_data = {}, lease_owner = $6, \
             fence = $7, lease_expires_ms = $8, last_seq = $9, updated_ms = $10 WHERE id = $1",
            D::json(3),
            D::json(5)
        ));
        let update = bind_mutable(update, id, &m, m.lease_expires_ms).int(m.updated_ms);
        sql::affected::<D>(On::Tx(tx), update).await?;
        insert_events::<D>(On::Tx(tx), id, &events).await?;
        Ok(Transitioned { now, invocation: current, events: events.into_iter().map(|(e, _)| e).collect() })
    }
}

impl SqlInvocations<Pg> {
    /// Connects to PostgreSQL (see [`Pools::connect`](crate::dialect::Pools)).
    pub async fn connect(url: &str, opts: &crate::StoreOptions) -> Result<Self, StoreError> {
        Ok(Self::new(Pools::<Pg>::connect(url, opts).await?))
    }
}

impl SqlInvocations<crate::dialect::Sqlite> {
    /// Opens the SQLite file named by `url` (see [`Pools::connect`](crate::dialect::Pools)).
    pub async fn connect(url: &str, opts: &crate::StoreOptions) -> Result<Self, StoreError> {
        Ok(Self::new(Pools::<crate::dialect::Sqlite>::connect(url, opts).await?))
    }
}

/// The invocation admitted under `key` (after an admission found the key taken).
pub(crate) async fn by_key<D: Dialect>(
    on: On<'_, D::Db>,
    tenant: &TenantId,
    key: Option<&IngressKey>,
) -> Result<Invocation, Error> {
    let key = key.ok_or_else(|| Error::internal("admission inserted nothing without an ingress key"))?;
    let stmt = Stmt::new(format!("SELECT {COLUMNS} FROM invocations WHERE tenant = $1 AND ingress_key = $2"))
        .text(tenant.as_str())
        .text(key.as_str());
    decode_invocation(&sql::one::<D>(on, stmt).await?)
}

/// What a portable transition did, and the database's clock when it did it.
pub(crate) struct Transitioned {
    pub now: Millis,
    pub invocation: Invocation,
    pub events: Vec<Event>,
}

/// Binds `$1..=$9`: id, tenant, subject, upstream, operation, effect, request, digest, ingress key.
pub(crate) fn bind_identity(stmt: Stmt, new: &Invocation) -> Result<Stmt, Error> {
    Ok(stmt
        .text(new.id.to_string())
        .text(new.principal.tenant.as_str())
        .text(new.principal.subject.as_str())
        .text(new.target.upstream.as_str())
        .text(new.target.operation.as_str())
        .text(new.target.effect.as_str())
        .text(to_json(&new.request)?)
        .text(new.digest.as_str())
        .opt_text(new.ingress_key.as_ref().map(|k| k.as_str().to_string())))
}

/// Appends `events` to the invocation's log in one statement.
async fn insert_events<D: Dialect>(
    on: On<'_, D::Db>,
    id: InvocationId,
    events: &[(Event, String)],
) -> Result<(), Error> {
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<String> = (0..events.len())
        .map(|i| {
            let p = 2 + i * 5;
            format!("($1, ${p}, ${}, ${}, {}, ${})", p + 1, p + 2, D::json(p + 3), p + 4)
        })
        .collect();
    let mut stmt = Stmt::new(format!(
        "INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) VALUES {}",
        rows.join(", ")
    ))
    .text(id.to_string());
    for (e, data) in events {
        stmt = stmt.int(i64_of(e.seq)?).text(e.id.to_string()).text(e.kind.name()).text(data.clone()).int(e.at_ms);
    }
    sql::affected::<D>(on, stmt).await?;
    Ok(())
}

impl<D: Dialect> SqlInvocations<D> {
    /// One admission, on whichever path this database takes.
    async fn admit_once(&self, draft: NewInvocation) -> Result<Admission, Error> {
        if let Some(group) = &self.group {
            return group.admit(draft).await;
        }
        if draft.audit.is_some() {
            // Only the group commit records a decision in its admission's commit.
            return Err(Error::internal("this store cannot record an audit entry with an admission"));
        }
        if D::FAST_PATHS {
            return self.admit_fast(draft).await;
        }
        let mut tx = self.pools.begin().await?;
        let admitted = Self::admit_in(&mut tx, draft).await?;
        tx.commit().await.map_err(crate::error::db)?;
        Ok(admitted)
    }

    /// After an admission's answer was lost: the invocation as the writer has it (admitted), or
    /// the earlier call its key names; else an error that is not retry-safe and names the
    /// invocation (its commit may still land: a retry could run the call twice).
    async fn read_back(
        &self,
        id: InvocationId,
        tenant: &TenantId,
        key: Option<&IngressKey>,
        worker: switchyard_contract::WorkerId,
    ) -> Result<Admission, Error> {
        let stmt = Stmt::new(format!("SELECT {COLUMNS} FROM invocations WHERE id = $1 AND tenant = $2"))
            .text(id.to_string())
            .text(tenant.as_str());
        let unknown = |why: &str| {
            Error::new(
                switchyard_contract::ErrorKind::Unavailable,
                switchyard_contract::ErrorSource::Gateway,
                false,
                format!(
                    "the store's answer to this call's admission was lost and {why}: invocation {id} may still be \
                     admitted and run; look it up (GET /admin/v1/invocations/{id}) before sending the call again"
                ),
            )
        };
        for _ in 0..3 {
            match sql::optional::<D>(self.pools.write(), stmt.clone()).await {
                Ok(Some(row)) => {
                    tracing::warn!(invocation.id = %id, "an admission's answer was lost; it was committed");
                    // Created, to be driven here, only while the lease it was admitted with is
                    // still this worker's. Meanwhile it may have moved on elsewhere (a held call
                    // approved and dispatched by another replica, a lease taken over): then the
                    // caller follows it, as a retry would, and nothing here sends it again.
                    let inv = decode_invocation(&row)?;
                    return Ok(if inv.lease.owner == Some(worker) {
                        Admission::Created(inv)
                    } else {
                        Admission::Existing(inv)
                    });
                }
                Ok(None) if key.is_some() => {
                    if let Ok(existing) = by_key::<D>(self.pools.write(), tenant, key).await {
                        return Ok(Admission::Existing(existing));
                    }
                    return Err(unknown("it is not (yet) in the store"));
                }
                Ok(None) => return Err(unknown("it is not (yet) in the store")),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            }
        }
        Err(unknown("the store cannot be read back now"))
    }
}

#[async_trait]
impl<D: Dialect> InvocationStore for SqlInvocations<D> {
    /// An admission whose answer was lost is read back: found, it was admitted (and is answered
    /// so); not found, it may still commit, and the caller hears that, naming the invocation —
    /// never "nothing was changed, retry".
    async fn admit(&self, draft: NewInvocation) -> Result<Admission, Error> {
        let (id, tenant, key, worker) =
            (draft.id, draft.principal.tenant.clone(), draft.ingress_key.clone(), draft.worker);
        match self.admit_once(draft).await {
            Err(e) if crate::error::answer_lost(&e) => self.read_back(id, &tenant, key.as_ref(), worker).await,
            done => done,
        }
    }

    async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        if let Some(group) = &self.group {
            return group.transition(id, f).await;
        }
        let mut tx = self.pools.begin().await?;
        let done = Self::transition_in(&mut tx, id, &f).await?;
        tx.commit().await.map_err(crate::error::db)?;
        if D::FAST_PATHS {
            self.observe_clock(done.now); // the held-lease fast path's estimate
        }
        Ok((done.invocation, done.events))
    }

    async fn transition_held(&self, expected: &Invocation, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        if D::FAST_PATHS
            && let Some(done) = self.try_held(expected, &f).await?
        {
            return Ok(done);
        }
        self.transition(expected.id, f).await
    }

    async fn get(&self, tenant: Option<&TenantId>, id: InvocationId) -> Result<Option<Invocation>, Error> {
        let stmt =
            Stmt::new(format!("SELECT {COLUMNS} FROM invocations WHERE id = $1 AND ($2 IS NULL OR tenant = $2)"))
                .text(id.to_string())
                .opt_text(tenant.map(TenantId::as_str));
        sql::optional::<D>(self.pools.read(), stmt).await?.as_ref().map(decode_invocation).transpose()
    }

    async fn by_key(&self, tenant: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error> {
        let stmt = Stmt::new(format!("SELECT {COLUMNS} FROM invocations WHERE tenant = $1 AND ingress_key = $2"))
            .text(tenant.as_str())
            .text(key.as_str());
        sql::optional::<D>(self.pools.read(), stmt).await?.as_ref().map(decode_invocation).transpose()
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, Error> {
        let limit = query.page_size()?;
        let after = query.after()?;
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM invocations WHERE tenant = $1 AND ($2 IS NULL OR state = $2) \
             AND ($3 = 0 OR {}) \
             AND ($5 IS NULL OR (created_ms, id) < ($5, $6)) AND ($8 IS NULL OR subject = $8) \
             ORDER BY created_ms DESC, id DESC LIMIT $7",
            D::any("upstream", 4)
        ))
        .text(tenant.as_str())
        .opt_text(query.state.map(|s| s.as_str()))
        .int(i64::try_from(query.upstreams.len()).unwrap_or(i64::MAX))
        .texts(query.upstreams.clone())
        .opt_int(after.map(|a| a.0))
        .opt_text(after.map(|a| a.1.to_string()))
        .int(i64::from(limit) + 1)
        .opt_text(query.subject.as_deref());
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        page(rows.iter().map(decode_invocation).collect::<Result<_, _>>()?, limit)
    }

    async fn unknown_of(
        &self,
        upstream: &str,
        after: Option<InvocationId>,
        limit: u32,
    ) -> Result<Vec<Invocation>, Error> {
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM invocations WHERE upstream = $1 AND state = 'unknown' \
             AND ($2 IS NULL OR id > $2) ORDER BY id LIMIT $3"
        ))
        .text(upstream)
        .opt_text(after.map(|a| a.to_string()))
        .int(i64::from(limit));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode_invocation).collect()
    }

    async fn events(&self, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        let stmt = Stmt::new(
            "SELECT invocation_id, seq, event_id, CAST(data AS TEXT), at_ms FROM invocation_events \
             WHERE invocation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .text(id.to_string())
        .int(i64::try_from(after).unwrap_or(i64::MAX))
        .int(i64::from(limit));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode_event).collect()
    }

    async fn progress(&self, ids: &[InvocationId]) -> Result<Vec<(InvocationId, u64)>, Error> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let stmt = Stmt::new(format!("SELECT id, last_seq FROM invocations WHERE {}", D::any("id", 1)))
                .texts(chunk.iter().map(ToString::to_string).collect());
            for row in sql::all::<D>(self.pools.read(), stmt).await? {
                out.push((row.text(0)?.parse().map_err(corrupt)?, u64_of(row.int(1)?, "last_seq")?));
            }
        }
        Ok(out)
    }

    async fn acquire_expired(&self, worker: WorkerId, ttl_ms: Millis, limit: u32) -> Result<Vec<Invocation>, Error> {
        let now = D::NOW;
        let stmt = Stmt::new(format!(
            "UPDATE invocations SET lease_owner = $1, fence = fence + 1, lease_expires_ms = {now} + $2 \
             WHERE id IN (SELECT id FROM invocations WHERE {ACTIVE} AND lease_expires_ms < {now} \
                 ORDER BY lease_expires_ms LIMIT $3{}) RETURNING {COLUMNS}",
            D::SKIP_LOCKED
        ))
        .text(worker.to_string())
        .int(ttl_ms)
        .int(i64::from(limit));
        sql::all::<D>(self.pools.write(), stmt).await?.iter().map(decode_invocation).collect()
    }

    async fn held_longer_than(&self, ttl_ms: Millis, limit: u32) -> Result<Vec<InvocationId>, Error> {
        let stmt = Stmt::new(format!(
            "SELECT id FROM invocations WHERE state = 'awaiting_approval' AND created_ms < {} - $1 \
             ORDER BY created_ms LIMIT $2",
            D::NOW
        ))
        .int(ttl_ms)
        .int(i64::from(limit));
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        rows.iter().map(|r| r.text(0)?.parse().map_err(corrupt)).collect()
    }

    async fn unknown_counts(&self) -> Result<Vec<(String, u64)>, Error> {
        // Read off the partial index `invocations_unknown`.
        let stmt = Stmt::new(
            "SELECT upstream, COUNT(*) FROM invocations WHERE state = 'unknown' GROUP BY upstream ORDER BY upstream",
        );
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        rows.iter().map(|r| Ok((r.text(0)?, u64_of(r.int(1)?, "count")?))).collect()
    }

    async fn release_leases(&self, worker: WorkerId) -> Result<u64, Error> {
        let stmt =
            Stmt::new(format!("UPDATE invocations SET lease_expires_ms = 0 WHERE lease_owner = $1 AND {ACTIVE}"))
                .text(worker.to_string());
        sql::affected::<D>(self.pools.write(), stmt).await
    }

    async fn now(&self) -> Result<Millis, Error> {
        sql::now::<D>(self.pools.read()).await
    }
}

/// Decodes an invocation row (columns in [`COLUMNS`] order).
pub(crate) fn decode_invocation(row: &impl Cells) -> Result<Invocation, Error> {
    let effect = row.text(5)?;
    let owner = row.opt_text(12)?;
    Ok(Invocation {
        id: row.text(0)?.parse().map_err(corrupt)?,
        principal: Principal { tenant: TenantId::new(row.text(1)?)?, subject: row.text(2)? },
        target: Target {
            upstream: row.text(3)?,
            operation: row.text(4)?,
            effect: EffectClass::parse(&effect).ok_or_else(|| corrupt(format!("effect `{effect}`")))?,
        },
        request: parse_json(&row.text(6)?, "request")?,
        digest: RequestDigest::from_stored(row.text(7)?),
        ingress_key: row.opt_text(8)?.map(IngressKey::new).transpose()?,
        state: parse_json(&row.text(9)?, "state")?,
        attempts: u32::try_from(row.int(10)?).map_err(corrupt)?,
        cancel: row.opt_text(11)?.map(|c| parse_json::<CancelRequest>(&c, "cancel")).transpose()?,
        lease: Lease {
            owner: owner.map(|o| o.parse()).transpose().map_err(corrupt)?,
            fence: Fence(u64_of(row.int(13)?, "fence")?),
            expires_at_ms: row.opt_int(14)?,
        },
        last_seq: u64_of(row.int(15)?, "last_seq")?,
        created_at_ms: row.int(16)?,
        updated_at_ms: row.int(17)?,
        parent: row.opt_text(18)?.map(|p| p.parse()).transpose().map_err(corrupt)?,
        // A context that no longer reads only loses the trace, never the call.
        trace: row.opt_text(19)?.as_deref().and_then(TraceParent::from_stored),
    })
}

/// Decodes an event row: `invocation_id, seq, event_id, data, at_ms`.
fn decode_event(row: &impl Cells) -> Result<Event, Error> {
    Ok(Event {
        invocation: row.text(0)?.parse().map_err(corrupt)?,
        seq: u64_of(row.int(1)?, "seq")?,
        id: row.text(2)?.parse::<EventId>().map_err(corrupt)?,
        kind: parse_json(&row.text(3)?, "event")?,
        at_ms: row.int(4)?,
    })
}

/// The columns a transition may change, ready to bind.
pub(crate) struct Mutable {
    pub state: &'static str,
    pub state_data: String,
    pub attempts: i64,
    pub cancel_data: Option<String>,
    pub lease_owner: Option<String>,
    pub fence: i64,
    pub lease_expires_ms: Option<i64>,
    pub last_seq: i64,
    pub updated_ms: i64,
}

pub(crate) fn mutable(inv: &Invocation) -> Result<Mutable, Error> {
    Ok(Mutable {
        state: inv.state.name().as_str(),
        state_data: to_json(&inv.state)?,
        attempts: i64::from(inv.attempts),
        cancel_data: inv.cancel.as_ref().map(to_json).transpose()?,
        lease_owner: inv.lease.owner.map(|w| w.to_string()),
        fence: i64_of(inv.lease.fence.0)?,
        lease_expires_ms: inv.lease.expires_at_ms,
        last_seq: i64_of(inv.last_seq)?,
        updated_ms: inv.updated_at_ms,
    })
}

/// Binds `$1` = the id and `$2..=$9` = the mutable columns (state, state data, attempts,
/// cancel data, lease owner, fence, `lease_expires`, last sequence), as both update paths use them.
pub(crate) fn bind_mutable(stmt: Stmt, id: InvocationId, m: &Mutable, lease_expires: Option<i64>) -> Stmt {
    stmt.text(id.to_string())
        .text(m.state)
        .text(m.state_data.clone())
        .int(m.attempts)
        .opt_text(m.cancel_data.clone())
        .opt_text(m.lease_owner.clone())
        .int(m.fence)
        .opt_int(lease_expires)
        .int(m.last_seq)
}

/// New events numbered after `inv.last_seq`, and their encoded data; advances `last_seq` and
/// `updated_at_ms`.
pub(crate) fn append(inv: &mut Invocation, kinds: Vec<EventKind>, now: Millis) -> Result<Vec<(Event, String)>, Error> {
    let mut out = Vec::with_capacity(kinds.len());
    for kind in kinds {
        inv.last_seq += 1;
        let data = to_json(&kind)?;
        out.push((Event { id: EventId::new(), invocation: inv.id, seq: inv.last_seq, at_ms: now, kind }, data));
    }
    inv.updated_at_ms = now;
    Ok(out)
}

/// A page from up to `limit + 1` rows: the extra row only tells that there is a next page.
fn page(mut items: Vec<Invocation>, limit: u32) -> Result<Page, Error> {
    let limit = usize::try_from(limit).map_err(corrupt)?;
    let next_cursor = if items.len() > limit {
        items.truncate(limit);
        items.last().map(ListQuery::cursor_for)
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}
