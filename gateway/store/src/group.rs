//! Group commit: one writer task gathers the admissions and transitions of many invocations (and
//! the audit rows recording their decisions, and the A2A tasks' writes) and commits them in one
//! write transaction, answering each caller only after that shared commit.
//!
//! SQLite has one writer and pays one `fsync` per commit, so three commits per call capped the
//! embedded store at about 650 calls/s whatever the concurrency. Here a commit carries every
//! change that arrived while the previous one was being made: the window is the length of one
//! commit (nothing waits for company when the writer is idle, so a lone call pays no added
//! latency) and a batch holds at most [`MAX_BATCH`] changes.
//!
//! A batch is written with multi-row statements ([`write_together`]) in two calls to SQLite's
//! worker thread (each call is a hand-off between threads, which is what bounded the writer):
//! `BEGIN IMMEDIATE` and one read of all the batch depends on, then one write of it all and the
//! `COMMIT`. The writer keeps its connection between batches until another writer asks for the
//! pool's one connection ([`crate::dialect::Wanted`]): sqlx pings a connection returned to the
//! pool, one more hand-off before the next batch could take it again.
//!
//! The guarantees stay per change. A transition the contract refuses (or of an invocation that
//! does not exist) fails alone, before anything is written. If the database refuses a statement
//! (a trigger protecting a terminal row, a constraint), the transaction is rolled back and the
//! batch is split: every change runs again under its own savepoint ([`one_by_one`]), so the bad
//! one is undone alone and answered with its own error while its neighbours commit. A caller is
//! answered `Ok` only after the commit that holds its change succeeded; if that commit fails, every
//! change in it is answered with the failure, and none of them happened. Changes of one invocation
//! are applied in the order they were asked for, each seeing the one before.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use sqlx::pool::PoolConnection;
use switchyard_contract::{
    Admission, AuditEntry, Error, Event, IngressKey, Invocation, InvocationId, Millis, NewInvocation, Transition,
};
use tokio::sync::{mpsc, oneshot};

use crate::audit::Heads;
use crate::batch::Encoded;
use crate::dialect::{self as sql, Cells, Dialect, On, Pools, Stmt};
use crate::error::db;
use crate::invocations::{COLUMN_COUNT, COLUMNS, SqlInvocations, append, bind_identity, decode_invocation, mutable};
use crate::row::i64_of;
use crate::tasks::TaskWrite;

/// The most changes one commit carries.
pub const MAX_BATCH: usize = 256;
/// Changes waiting for the writer beyond this make their callers wait to enqueue (back-pressure).
const QUEUE: usize = 4 * MAX_BATCH;

type Reply<T> = oneshot::Sender<Result<T, Error>>;

enum Change {
    Admit(Box<NewInvocation>, Reply<Admission>),
    Transition(InvocationId, Transition, Reply<(Invocation, Vec<Event>)>),
    /// Audit entries for a partition's chain, chained and inserted with the batch's other
    /// changes (an admission may carry its decision's entry too: [`NewInvocation::audit`]).
    Audit(String, Vec<AuditEntry>, Reply<()>),
    /// An A2A task's creation or versioned update, with its events and push deliveries
    /// (answered `false`, writing nothing, when the id is taken or the version moved).
    Task(Box<TaskWrite>, Reply<bool>),
}

/// The writer of one database's invocations: a queue, and a task that drains it in batches
/// (started on first use, on the caller's runtime; it ends when the store is dropped).
pub(crate) struct GroupCommit<D: Dialect> {
    pools: Pools<D>,
    queue: OnceLock<mpsc::Sender<Change>>,
    /// Crash tests: stop before the first commit of at least [`PAUSE_AT_CHANGES`] changes once
    /// [`PAUSE_AFTER_CHANGES`] have been committed.
    pause: bool,
}

/// The smallest batch the crash tests' pause stops before.
pub const PAUSE_AT_CHANGES: usize = 8;
/// How many changes the crash tests' pause lets commit first.
pub const PAUSE_AFTER_CHANGES: usize = 300;

impl<D: Dialect> std::fmt::Debug for GroupCommit<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").field("started", &self.queue.get().is_some()).finish()
    }
}

pub(crate) fn writer_gone() -> Error {
    Error::unavailable("the gateway's store writer has stopped; nothing was changed, retry later")
}

impl<D: Dialect> GroupCommit<D> {
    pub(crate) fn new(pools: Pools<D>) -> Self {
        Self { pools, queue: OnceLock::new(), pause: false }
    }

    /// A writer that stops forever before the first commit of many changes (crash tests).
    pub(crate) fn pausing(pools: Pools<D>) -> Self {
        Self { pools, queue: OnceLock::new(), pause: true }
    }

    fn queue(&self) -> &mpsc::Sender<Change> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(write_batches(self.pools.clone(), rx, self.pause));
            tx
        })
    }

    async fn submit<T>(&self, change: impl FnOnce(Reply<T>) -> Change) -> Result<T, Error> {
        let (reply, answer) = oneshot::channel();
        self.queue().send(change(reply)).await.map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }

    pub(crate) async fn admit(&self, draft: NewInvocation) -> Result<Admission, Error> {
        self.submit(|reply| Change::Admit(Box::new(draft), reply)).await
    }

    pub(crate) async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        self.submit(|reply| Change::Transition(id, f, reply)).await
    }

    /// Commits a task's write in the next shared commit: `false` if it does not apply.
    pub(crate) async fn write_task(&self, write: TaskWrite) -> Result<bool, Error> {
        self.submit(|reply| Change::Task(Box::new(write), reply)).await
    }

    /// Chains `entries` onto `partition` in the next shared commit.
    pub(crate) async fn append_audit(&self, partition: String, entries: Vec<AuditEntry>) -> Result<(), Error> {
        self.submit(|reply| Change::Audit(partition, entries, reply)).await
    }
}

async fn write_batches<D: Dialect>(pools: Pools<D>, mut queue: mpsc::Receiver<Change>, pause: bool) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut written = 0;
    // The audit chains' heads as this writer last committed them, so a batch need not read
    // them. Forgotten whenever a commit fails; one that another process moved meanwhile makes
    // the batch's insert collide (the split path then reads it afresh).
    let mut heads = Heads::new();
    // The writer connection, kept between batches until another writer asks for it.
    let mut held: Option<Held<D::Db>> = None;
    loop {
        let n = if held.is_some() {
            tokio::select! {
                n = queue.recv_many(&mut batch, MAX_BATCH) => n,
                () = pools.wanted().asked() => {
                    if pools.wanted().any() {
                        held = None;
                    }
                    continue;
                }
            }
        } else {
            queue.recv_many(&mut batch, MAX_BATCH).await
        };
        if n == 0 {
            return;
        }
        if pools.wanted().any() {
            held = None;
        }
        let pause = pause && written >= PAUSE_AFTER_CHANGES;
        commit_batch(&pools, &mut held, std::mem::take(&mut batch), pause, &mut heads).await;
        written += n;
    }
}

/// The writer connection the group commit holds between batches. Dropped inside a transaction
/// (a batch cancelled half-way, or one whose rollback failed), it is closed, never returned to
/// the pool with the transaction open.
struct Held<DB: sqlx::Database> {
    conn: PoolConnection<DB>,
    open: bool,
}

impl<DB: sqlx::Database> Drop for Held<DB> {
    fn drop(&mut self) {
        if self.open {
            self.conn.close_on_drop();
        }
    }
}

impl<DB: sqlx::Database> Held<DB> {
    fn on(&mut self) -> On<'_, DB> {
        On::Conn(&mut self.conn)
    }
}

/// Commits `changes` together and answers every caller: written with multi-row statements, or,
/// if the database refused one of them, split into one savepoint per change.
async fn commit_batch<D: Dialect>(
    pools: &Pools<D>,
    held: &mut Option<Held<D::Db>>,
    changes: Vec<Change>,
    pause: bool,
    heads: &mut Heads,
) {
    let conn = match held {
        Some(conn) => conn,
        None => match pools.hold_writer().await {
            Ok(conn) => held.insert(Held { conn, open: false }),
            Err(e) => return changes.into_iter().for_each(|c| c.refuse(e.clone())),
        },
    };
    let refused = match write_together::<D>(conn, &changes, heads, pause).await {
        Ok((outcomes, moved)) => {
            heads.extend(moved);
            for (change, outcome) in changes.into_iter().zip(outcomes) {
                change.answer(outcome, &Ok(()));
            }
            return;
        }
        Err(refused) => refused,
    };
    // Nothing of the batch was written: rolled back (or, if even that failed, the connection is
    // closed with it). The split path takes the writer through the pool.
    if conn.open && sql::affected::<D>(conn.on(), Stmt::new("ROLLBACK")).await.is_ok() {
        conn.open = false;
    }
    *held = None;
    // A remembered audit head may be stale (another process appended): the split path
    // reads every head afresh, so even a lone change is tried once more there.
    let stale = !heads.is_empty();
    heads.clear();
    tracing::warn!(changes = changes.len(), error = %refused, "the database refused a statement of a shared commit; splitting it");
    if changes.len() == 1 && !stale {
        return changes.into_iter().for_each(|c| c.refuse(refused.clone()));
    }
    match pools.begin().await {
        Ok(tx) => one_by_one::<D>(tx, changes).await,
        Err(e) => changes.into_iter().for_each(|c| c.refuse(e.clone())),
    }
}

/// What one change did inside the shared transaction (its own error if it failed alone).
enum Outcome {
    Admitted(Result<Admission, Error>),
    Transitioned(Result<(Invocation, Vec<Event>), Error>),
    Appended(Result<(), Error>),
    Wrote(Result<bool, Error>),
}

/// The whole batch as one transaction in two round trips where the database allows
/// ([`sql::joined`]): the write transaction's start and one read of what the batch depends on
/// (the clock, the rows its transitions change, any row already holding one of its admissions'
/// ingress keys, the heads of audit partitions not remembered, the versions of the tasks it
/// writes); then, with every change applied in memory in arrival order, one write of it all (the
/// admissions, the changed rows, all events, the audit entries, the task writes that apply) and
/// the commit. `Err`: nothing was committed; the transaction may still be open (`conn.open`).
async fn write_together<D: Dialect>(
    conn: &mut Held<D::Db>,
    changes: &[Change],
    heads: &Heads,
    pause: bool,
) -> Result<(Vec<Outcome>, Heads), Error> {
    let wanted: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Transition(id, ..) => Some(id.to_string()),
            Change::Admit(..) | Change::Audit(..) | Change::Task(..) => None,
        })
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let keys: HashSet<(String, String)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Admit(draft, _) => draft.ingress_key.as_ref().map(|k| key_of(draft.principal.tenant.as_str(), k)),
            Change::Transition(..) | Change::Audit(..) | Change::Task(..) => None,
        })
        .collect();
    let tasks: Vec<String> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Task(write, _) => Some(write.id().to_string()),
            Change::Admit(..) | Change::Transition(..) | Change::Audit(..) => None,
        })
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut partitions: Vec<&str> = Vec::new();
    for change in changes {
        let named = match change {
            Change::Audit(partition, ..) => Some(partition.as_str()),
            Change::Admit(draft, _) => draft.audit.as_ref().map(|(p, _)| p.as_str()),
            Change::Transition(..) | Change::Task(..) => None,
        };
        if let Some(p) = named.filter(|p| !heads.contains_key(*p) && !partitions.contains(p)) {
            partitions.push(p);
        }
    }
    let mut reads = vec![Stmt::new(D::BEGIN_WRITE), Stmt::new(format!("SELECT {}", D::NOW))];
    if !wanted.is_empty() {
        reads.push(Stmt::new(format!("SELECT {COLUMNS} FROM invocations WHERE {}", D::any("id", 1))).texts(wanted));
    }
    for (tenant, key) in &keys {
        // One cell more than a row read by id: the rows of the joined read are told apart by width.
        let by_key = format!("SELECT {COLUMNS}, 1 FROM invocations WHERE tenant = $1 AND ingress_key = $2");
        reads.push(Stmt::new(by_key).text(tenant.as_str()).text(key.as_str()));
    }
    reads.extend(partitions.iter().map(|p| crate::audit::head_stmt(p)));
    if !tasks.is_empty() {
        reads.push(Stmt::new(format!("SELECT id, version FROM a2a_tasks WHERE {}", D::any("id", 1))).texts(tasks));
    }
    let mut now = None;
    let mut rows: HashMap<InvocationId, Invocation> = HashMap::new();
    let mut keyed: HashMap<(String, String), Invocation> = HashMap::new();
    let mut versions: HashMap<String, i64> = HashMap::new();
    let mut heads = heads.clone();
    conn.open = true;
    for stmt in sql::joined::<D>(reads) {
        for row in sql::all::<D>(conn.on(), stmt).await? {
            match row.width() {
                1 => now = Some(row.int(0)?),
                2 => drop(versions.insert(row.text(0)?, row.int(1)?)),
                3 => {
                    let (partition, head) = crate::audit::head_of(&row)?;
                    heads.insert(partition, head);
                }
                COLUMN_COUNT => {
                    let inv = decode_invocation(&row)?;
                    rows.insert(inv.id, inv);
                }
                w if w == COLUMN_COUNT + 1 => {
                    let inv = decode_invocation(&row)?;
                    if let Some(key) = &inv.ingress_key {
                        keyed.insert(key_of(inv.principal.tenant.as_str(), key), inv);
                    }
                }
                _ => return Err(Error::internal("store: a batch's read answered a row of an unknown shape")),
            }
        }
    }
    let now = now.ok_or_else(|| Error::internal("store: a batch's read did not answer the database clock"))?;
    let mut events: Encoded = Vec::new();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(changes.len());
    let mut admitted: Vec<InvocationId> = Vec::new();
    let mut dirty: Vec<InvocationId> = Vec::new();
    let mut task_writes: Vec<Stmt> = Vec::new();
    for change in changes {
        outcomes.push(match change {
            Change::Admit(draft, _) => Outcome::Admitted(admit(draft, now, &mut keyed).map(|(admission, first)| {
                if let Admission::Created(new) = &admission {
                    events.extend(first);
                    admitted.push(new.id);
                    rows.insert(new.id, new.clone());
                }
                admission
            })),
            Change::Transition(id, f, _) => Outcome::Transitioned(match rows.get(id) {
                None => Err(Error::not_found(format!("invocation {id} not found"))),
                Some(current) => apply_in_memory(current, f, now).map(|(next, new_events, changed)| {
                    if changed {
                        if !dirty.contains(id) && !admitted.contains(id) {
                            dirty.push(*id);
                        }
                        rows.insert(*id, next.clone());
                    }
                    let answer = new_events.iter().map(|(e, _)| e.clone()).collect();
                    events.extend(new_events);
                    (next, answer)
                }),
            }),
            Change::Audit(..) => Outcome::Appended(Ok(())),
            Change::Task(write, _) => {
                let id = write.id().to_string();
                let applied = write.applies(versions.get(&id).copied());
                if let Some(version) = applied {
                    let (row, rest) = write.statements::<D>();
                    task_writes.push(row);
                    task_writes.extend(rest);
                    versions.insert(id, version);
                }
                Outcome::Wrote(Ok(applied.is_some()))
            }
        });
    }
    // The audit entries of the batch, in arrival order: appended entries, and the decisions of
    // the admissions that went through (committed with them, all or nothing).
    let mut audited: Vec<(&str, &AuditEntry)> = Vec::new();
    for (change, outcome) in changes.iter().zip(&outcomes) {
        match (change, outcome) {
            (Change::Audit(partition, entries, _), _) => {
                audited.extend(entries.iter().map(|e| (partition.as_str(), e)))
            }
            (Change::Admit(draft, _), Outcome::Admitted(Ok(_))) => {
                audited.extend(draft.audit.as_ref().map(|(p, e)| (p.as_str(), e)));
            }
            _ => {}
        }
    }
    let (chained, moved) = crate::audit::chained(&audited, now, &heads)?;
    let mut writes = insert_admissions::<D>(admitted.iter().filter_map(|id| rows.get(id)), now)?;
    writes.extend(update_rows(dirty.iter().filter_map(|id| rows.get(id)))?);
    writes.extend(insert_all_events::<D>(&events)?);
    writes.extend(chained);
    writes.extend(task_writes);
    writes.push(Stmt::new("COMMIT"));
    if pause && changes.len() >= PAUSE_AT_CHANGES {
        tracing::warn!(changes = changes.len(), "fault injection: pausing before a shared commit, forever");
        std::future::pending::<()>().await;
    }
    for stmt in sql::joined::<D>(writes) {
        sql::affected::<D>(conn.on(), stmt).await?;
    }
    conn.open = false;
    Ok((outcomes, moved))
}

/// A tenant's ingress key, as the batch looks it up.
fn key_of(tenant: &str, key: &IngressKey) -> (String, String) {
    (tenant.to_string(), key.as_str().to_string())
}

/// An admission applied in memory: the invocation that already holds its tenant's ingress key
/// (in the database, or admitted earlier in this batch), else the new row and its first events.
fn admit(
    draft: &NewInvocation,
    now: Millis,
    keyed: &mut HashMap<(String, String), Invocation>,
) -> Result<(Admission, Encoded), Error> {
    let key = draft.ingress_key.as_ref().map(|k| key_of(draft.principal.tenant.as_str(), k));
    if let Some(existing) = key.as_ref().and_then(|k| keyed.get(k)) {
        return Ok((Admission::Existing(existing.clone()), Vec::new()));
    }
    let (mut new, first) = Invocation::admit_started(draft.clone(), now);
    let first = append(&mut new, first, now)?;
    if let Some(key) = key {
        keyed.insert(key, new.clone());
    }
    Ok((Admission::Created(new), first))
}

/// A transition applied to a copy of the row: the row after it, its new events, and whether it
/// changed anything (a change that changes nothing writes nothing).
fn apply_in_memory(current: &Invocation, f: &Transition, now: Millis) -> Result<(Invocation, Encoded, bool), Error> {
    let mut next = current.clone();
    let kinds = f(&mut next, now)?;
    if kinds.is_empty() && next == *current {
        return Ok((next, Vec::new(), false));
    }
    let events = append(&mut next, kinds, now)?;
    Ok((next, events, true))
}

/// Most rows one multi-row statement carries (SQLite allows 32,766 bound values per statement).
const ROWS_PER_STATEMENT: usize = 500;

/// The inserts of the admitted invocations, one statement per chunk. (A taken ingress key was
/// looked up first; should one collide anyway, the database refuses and the batch is split.)
fn insert_admissions<'a, D: Dialect>(
    admitted: impl Iterator<Item = &'a Invocation>,
    now: Millis,
) -> Result<Vec<Stmt>, Error> {
    let admitted: Vec<&Invocation> = admitted.collect();
    let mut stmts = Vec::new();
    for chunk in admitted.chunks(ROWS_PER_STATEMENT) {
        // `$1` is the batch's clock; each row binds 18 values after it, in column order.
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let cell =
                    |k: usize| if k == 7 || k == 11 { D::json(1 + r * 18 + k) } else { format!("${}", 1 + r * 18 + k) };
                let cells: Vec<String> = (1..=16).map(cell).collect();
                format!("({}, $1, $1, {}, {})", cells.join(", "), cell(17), cell(18))
            })
            .collect();
        let mut stmt = Stmt::new(format!(
            "INSERT INTO invocations (id, tenant, subject, upstream, operation, effect, request, digest, ingress_key, \
             state, state_data, attempts, lease_owner, fence, lease_expires_ms, last_seq, created_ms, updated_ms, \
             parent_id, trace_context) VALUES {}",
            values.join(", ")
        ))
        .int(now);
        for new in chunk {
            let m = mutable(new)?;
            stmt = bind_identity(stmt, new)?
                .text(m.state)
                .text(m.state_data)
                .int(m.attempts)
                .opt_text(m.lease_owner)
                .int(m.fence)
                .opt_int(m.lease_expires_ms)
                .int(m.last_seq)
                .opt_text(new.parent.map(|p| p.to_string()))
                .opt_text(new.trace.as_ref().map(switchyard_contract::TraceParent::to_stored));
        }
        stmts.push(stmt);
    }
    Ok(stmts)
}

/// The writes of the mutable columns of every changed row, one statement per chunk.
fn update_rows<'a>(rows: impl Iterator<Item = &'a Invocation>) -> Result<Vec<Stmt>, Error> {
    let rows: Vec<&Invocation> = rows.collect();
    let mut stmts = Vec::new();
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let ps: Vec<String> = (1..=10).map(|k| format!("${}", r * 10 + k)).collect();
                format!("({})", ps.join(", "))
            })
            .collect();
        let mut stmt = Stmt::new(format!(
            "WITH v (id, state, state_data, attempts, cancel_data, lease_owner, fence, lease_expires_ms, last_seq, \
               updated_ms) AS (VALUES {}) \
             UPDATE invocations SET state = v.state, state_data = v.state_data, attempts = v.attempts, \
               cancel_data = v.cancel_data, lease_owner = v.lease_owner, fence = v.fence, \
               lease_expires_ms = v.lease_expires_ms, last_seq = v.last_seq, updated_ms = v.updated_ms \
             FROM v WHERE invocations.id = v.id",
            values.join(", ")
        ));
        for inv in chunk {
            let m = mutable(inv)?;
            stmt = crate::invocations::bind_mutable(stmt, inv.id, &m, m.lease_expires_ms).int(m.updated_ms);
        }
        stmts.push(stmt);
    }
    Ok(stmts)
}

/// The inserts of every event of the batch, one statement per chunk.
fn insert_all_events<D: Dialect>(events: &[(Event, String)]) -> Result<Vec<Stmt>, Error> {
    let mut stmts = Vec::new();
    for chunk in events.chunks(ROWS_PER_STATEMENT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let p = r * 6;
                format!("(${}, ${}, ${}, ${}, {}, ${})", p + 1, p + 2, p + 3, p + 4, D::json(p + 5), p + 6)
            })
            .collect();
        let mut stmt = Stmt::new(format!(
            "INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) VALUES {}",
            values.join(", ")
        ));
        for (e, data) in chunk {
            stmt = stmt
                .text(e.invocation.to_string())
                .int(i64_of(e.seq)?)
                .text(e.id.to_string())
                .text(e.kind.name())
                .text(data.clone())
                .int(e.at_ms);
        }
        stmts.push(stmt);
    }
    Ok(stmts)
}

/// The split: every change under its own savepoint in one transaction, so a change the
/// database refuses is undone alone; one commit for the rest.
async fn one_by_one<D: Dialect>(mut tx: sqlx::Transaction<'static, D::Db>, changes: Vec<Change>) {
    let mut applied = Vec::with_capacity(changes.len());
    let mut broken: Option<Error> = None;
    for change in changes {
        if let Some(e) = &broken {
            change.refuse(e.clone());
            continue;
        }
        if let Err(e) = run::<D>(&mut tx, "SAVEPOINT change").await {
            change.refuse(e.clone());
            broken = Some(e);
            continue;
        }
        let outcome = change.apply::<D>(&mut tx).await;
        let mut step = Ok(());
        if outcome.failed() {
            step = run::<D>(&mut tx, "ROLLBACK TO SAVEPOINT change").await;
        }
        if step.is_ok() {
            step = run::<D>(&mut tx, "RELEASE SAVEPOINT change").await;
        }
        broken = step.err();
        applied.push((change, outcome));
    }
    let commit = match broken {
        Some(e) => Err(e), // dropping the transaction rolls it back
        None => tx.commit().await.map_err(db),
    };
    for (change, outcome) in applied {
        change.answer(outcome, &commit);
    }
}

async fn run<D: Dialect>(tx: &mut sqlx::Transaction<'static, D::Db>, stmt: &str) -> Result<(), Error> {
    sql::affected::<D>(On::Tx(tx), Stmt::new(stmt)).await.map(drop)
}

impl Outcome {
    fn failed(&self) -> bool {
        match self {
            Outcome::Admitted(r) => r.is_err(),
            Outcome::Transitioned(r) => r.is_err(),
            Outcome::Appended(r) => r.is_err(),
            Outcome::Wrote(r) => r.is_err(),
        }
    }
}

impl Change {
    /// Applies the change alone (the split path), inside its savepoint.
    async fn apply<D: Dialect>(&self, tx: &mut sqlx::Transaction<'static, D::Db>) -> Outcome {
        match self {
            Change::Admit(draft, _) => Outcome::Admitted(
                async {
                    let admitted = SqlInvocations::<D>::admit_in(tx, NewInvocation::clone(draft)).await?;
                    if let Some((partition, entry)) = &draft.audit {
                        let now = sql::now::<D>(On::Tx(&mut *tx)).await?;
                        crate::audit::extend_in::<D>(tx, &[(partition.as_str(), entry)], now).await?;
                    }
                    Ok(admitted)
                }
                .await,
            ),
            Change::Transition(id, f, _) => Outcome::Transitioned(
                SqlInvocations::<D>::transition_in(tx, *id, f).await.map(|t| (t.invocation, t.events)),
            ),
            Change::Audit(partition, entries, _) => Outcome::Appended(
                async {
                    let now = sql::now::<D>(On::Tx(&mut *tx)).await?;
                    let audited: Vec<(&str, &AuditEntry)> = entries.iter().map(|e| (partition.as_str(), e)).collect();
                    crate::audit::extend_in::<D>(tx, &audited, now).await
                }
                .await,
            ),
            Change::Task(write, _) => Outcome::Wrote(crate::tasks::write_in::<D>(tx, write).await),
        }
    }

    /// Answers the caller: its own outcome if the commit held, else the commit's failure (a
    /// change that failed on its own keeps its own error). A caller that stopped waiting is
    /// gone; its change stands or falls with the batch.
    fn answer(self, outcome: Outcome, commit: &Result<(), Error>) {
        fn settle<T>(r: Result<T, Error>, commit: &Result<(), Error>) -> Result<T, Error> {
            match (r, commit) {
                (Ok(_), Err(e)) => Err(e.clone()),
                (r, _) => r,
            }
        }
        match (self, outcome) {
            (Change::Admit(_, reply), Outcome::Admitted(r)) => drop(reply.send(settle(r, commit))),
            (Change::Transition(_, _, reply), Outcome::Transitioned(r)) => drop(reply.send(settle(r, commit))),
            (Change::Audit(_, _, reply), Outcome::Appended(r)) => drop(reply.send(settle(r, commit))),
            (Change::Task(_, reply), Outcome::Wrote(r)) => drop(reply.send(settle(r, commit))),
            (change, _) => change.refuse(Error::internal("a batch answered a change with another's outcome")),
        }
    }

    /// Answers a change that was never applied (its batch broke first): nothing of it happened.
    fn refuse(self, e: Error) {
        match self {
            Change::Admit(_, reply) => drop(reply.send(Err(e))),
            Change::Transition(_, _, reply) => drop(reply.send(Err(e))),
            Change::Audit(_, _, reply) => drop(reply.send(Err(e))),
            Change::Task(_, reply) => drop(reply.send(Err(e))),
        }
    }
}
