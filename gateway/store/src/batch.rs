//! PostgreSQL: the two writes every call makes on its fast paths — an admission, and a
//! transition under a lease its caller holds — batched across invocations: whatever arrived
//! while the previous batches were being written goes to the database as one statement (one
//! round trip, one commit, one WAL flush) instead of one each.
//!
//! Each row keeps its own guarantee. An admission is inserted unless its tenant already used its
//! ingress key; a held change is applied only if its row is still exactly what its caller saw
//! and the lease is live on the database clock (the same conditions as the one-row statements
//! these replace). A row that was not written is answered `None` and its caller takes the
//! locked path, as before. If the database refuses the statement (a trigger or a constraint on
//! one row), every row of the batch is written again on its own, so one bad row fails alone.
//! A caller is answered only after the statement holding its row has committed.
//!
//! At most [`IN_FLIGHT`] batch is written at a time; while it is, the next one gathers. Two rows
//! of one invocation never share a statement: the later one waits for the next batch.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use switchyard_contract::{Error, Event, Invocation, InvocationId};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::dialect::{Cells, Dialect, Output, Pools, Stmt, Want};
use crate::error::db;
use crate::group::{PAUSE_AFTER_CHANGES, PAUSE_AT_CHANGES, writer_gone};
use crate::invocations::Mutable;
use crate::row::i64_of;

/// The most rows one statement carries.
const MAX_BATCH: usize = 256;
/// Batches written at once. One: the statement's cost is mostly per statement (the executor's
/// set-up of three table writes, the commit), so fewer, larger batches leave PostgreSQL more of
/// the machine. Measured (durable writes through the admin API, alternating in one run): one in
/// flight against two, +15–58 % writes/s at 16 to 64 clients with a lower p50, no worse at 1 to 4
/// clients; three, four and eight did worse than two.
const IN_FLIGHT: usize = 1;
/// Rows waiting beyond this make their callers wait to enqueue (back-pressure).
const QUEUE: usize = 4 * MAX_BATCH;

/// Events with their data encoded for the insert.
pub(crate) type Encoded = Vec<(Event, String)>;

/// A new invocation to insert: its row, how long its lease runs from the database's now
/// (`None`: it takes no lease, as a held call), and its first events.
pub(crate) struct NewRow {
    pub inv: Invocation,
    pub m: Mutable,
    pub ttl: Option<i64>,
    pub events: Encoded,
}

/// A change to a row that must still be exactly as its caller saw it (`was_*`), with the lease
/// live on the database clock: the row's new columns, the lease's new length from the
/// database's now, and the change's events.
pub(crate) struct HeldRow {
    pub id: InvocationId,
    pub m: Mutable,
    pub ttl: Option<i64>,
    pub was_seq: i64,
    pub was_fence: i64,
    pub was_owner: String,
    pub was_expires: i64,
    pub events: Encoded,
}

/// What the database did with a row: `Some((lease_expires_ms, at_ms))` on its clock if it
/// wrote it, `None` if it did not (a held row that changed meanwhile, a taken ingress key).
pub(crate) type Written = Option<(Option<i64>, i64)>;

type Reply = oneshot::Sender<Result<Written, Error>>;

enum Item {
    New(Box<NewRow>, Reply),
    Held(Box<HeldRow>, Reply),
}

impl Item {
    fn id(&self) -> InvocationId {
        match self {
            Item::New(row, _) => row.inv.id,
            Item::Held(row, _) => row.id,
        }
    }

    fn answer(self, written: Result<Written, Error>) {
        match self {
            Item::New(_, reply) | Item::Held(_, reply) => drop(reply.send(written)),
        }
    }
}

/// The batching writer of one database (started on first use, on the caller's runtime; it
/// ends when the store is dropped).
pub(crate) struct Batcher<D: Dialect> {
    pools: Pools<D>,
    queue: OnceLock<mpsc::Sender<Item>>,
    /// Crash tests: stop sending statements before the first of at least
    /// [`PAUSE_AT_CHANGES`] rows once [`PAUSE_AFTER_CHANGES`] have been written.
    pause: bool,
}

impl<D: Dialect> std::fmt::Debug for Batcher<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("started", &self.queue.get().is_some()).finish()
    }
}

impl<D: Dialect> Batcher<D> {
    pub(crate) fn new(pools: Pools<D>) -> Self {
        Self { pools, queue: OnceLock::new(), pause: false }
    }

    /// A writer that stops forever before a statement of many rows (crash tests).
    pub(crate) fn pausing(pools: Pools<D>) -> Self {
        Self { pools, queue: OnceLock::new(), pause: true }
    }

    async fn submit(&self, item: impl FnOnce(Reply) -> Item) -> Result<Written, Error> {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(write_batches(self.pools.clone(), rx, self.pause));
            tx
        });
        let (reply, answer) = oneshot::channel();
        queue.send(item(reply)).await.map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }

    pub(crate) async fn insert(&self, row: NewRow) -> Result<Written, Error> {
        self.submit(|reply| Item::New(Box::new(row), reply)).await
    }

    pub(crate) async fn update_held(&self, row: HeldRow) -> Result<Written, Error> {
        self.submit(|reply| Item::Held(Box::new(row), reply)).await
    }
}

async fn write_batches<D: Dialect>(pools: Pools<D>, mut queue: mpsc::Receiver<Item>, pause: bool) {
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut written = 0;
    // Rows held back because their invocation already had one in the batch.
    let mut waiting: Vec<Item> = Vec::new();
    loop {
        if waiting.is_empty() && queue.recv_many(&mut waiting, MAX_BATCH).await == 0 {
            return; // the store is gone and nothing is left
        }
        let Ok(permit) = permits.clone().acquire_owned().await else { return };
        // What arrived while every permit was taken joins this batch.
        while waiting.len() < MAX_BATCH
            && let Ok(item) = queue.try_recv()
        {
            waiting.push(item);
        }
        let mut seen = HashSet::new();
        let (batch, later): (Vec<Item>, Vec<Item>) = waiting.drain(..).partition(|item| seen.insert(item.id()));
        waiting = later;
        if pause && written >= PAUSE_AFTER_CHANGES && batch.len() >= PAUSE_AT_CHANGES {
            tracing::warn!(rows = batch.len(), "fault injection: pausing before a shared commit, forever");
            std::future::pending::<()>().await;
        }
        written += batch.len();
        let pools = pools.clone();
        tokio::spawn(async move {
            write_batch(&pools, batch).await;
            drop(permit);
        });
    }
}

/// Writes `items` in one statement and answers each; if the database refused the statement,
/// writes each row on its own.
async fn write_batch<D: Dialect>(pools: &Pools<D>, items: Vec<Item>) {
    match write::<D>(pools, &items).await {
        Ok(written) => items.into_iter().for_each(|item| {
            let id = item.id();
            item.answer(Ok(written.get(&id).copied()));
        }),
        Err(Failed::Refused(e)) if items.len() > 1 => {
            tracing::warn!(rows = items.len(), error = %e, "the database refused a batched write; writing its rows one by one");
            for item in items {
                let alone = write::<D>(pools, std::slice::from_ref(&item)).await;
                let id = item.id();
                item.answer(alone.map(|w| w.get(&id).copied()).map_err(Failed::into_error));
            }
        }
        // Not a refusal (the connection, the pool): whether it committed is not known, so no
        // row is written again; each caller hears the error, as from a statement of its own.
        Err(e) => {
            let e = e.into_error();
            items.into_iter().for_each(|item| item.answer(Err(e.clone())));
        }
    }
}

/// Why a statement failed.
enum Failed {
    /// The database refused it (a constraint, a trigger): rolled back, nothing of it written.
    Refused(Error),
    /// Anything else.
    Other(Error),
}

impl Failed {
    fn into_error(self) -> Error {
        match self {
            Failed::Refused(e) | Failed::Other(e) => e,
        }
    }
}

/// One statement: insert the new rows (skipping taken ingress keys), apply the held changes
/// whose rows are unchanged and whose leases are live, and append the events of every row
/// written, all on one reading of the database clock.
async fn write<D: Dialect>(
    pools: &Pools<D>,
    items: &[Item],
) -> Result<HashMap<InvocationId, (Option<i64>, i64)>, Failed> {
    let stmt = statement(items).map_err(Failed::Other)?;
    let rows = match D::run(pools.write(), stmt, Want::All).await {
        Ok(Output::All(rows)) => rows,
        Ok(_) => return Err(Failed::Other(Error::internal("store: a statement answered in the wrong shape"))),
        Err(e @ sqlx::Error::Database(_)) => return Err(Failed::Refused(db(e))),
        Err(e) => return Err(Failed::Other(db(e))),
    };
    let read = |row: &D::Row| -> Result<(InvocationId, Option<i64>, i64), Error> {
        Ok((row.text(0)?.parse().map_err(crate::row::corrupt)?, row.opt_int(1)?, row.int(2)?))
    };
    let mut written = HashMap::with_capacity(rows.len());
    for row in &rows {
        let (id, expires, at) = read(row).map_err(Failed::Other)?;
        written.insert(id, (expires, at));
    }
    Ok(written)
}

fn statement(items: &[Item]) -> Result<Stmt, Error> {
    let mut new = Columns::of("TTTTTTTTTTTITIIITT");
    let mut held = Columns::of("TTTITTIIIIITI");
    let mut events = Columns::of("TITTT");
    for item in items {
        let row_events = match item {
            Item::New(r, _) => {
                let (inv, m) = (&r.inv, &r.m);
                new.push(vec![
                    text(inv.id.to_string()),
                    text(inv.principal.tenant.as_str()),
                    text(inv.principal.subject.as_str()),
                    text(inv.target.upstream.as_str()),
                    text(inv.target.operation.as_str()),
                    text(inv.target.effect.as_str()),
                    text(crate::row::to_json(&inv.request)?),
                    text(inv.digest.as_str()),
                    Cell::T(inv.ingress_key.as_ref().map(|k| k.as_str().to_string())),
                    text(m.state),
                    text(m.state_data.clone()),
                    int(m.attempts),
                    Cell::T(m.lease_owner.clone()),
                    int(m.fence),
                    Cell::I(r.ttl),
                    int(m.last_seq),
                    Cell::T(inv.parent.map(|p| p.to_string())),
                    Cell::T(inv.trace.as_ref().map(switchyard_contract::TraceParent::to_stored)),
                ])?;
                &r.events
            }
            Item::Held(r, _) => {
                let m = &r.m;
                held.push(vec![
                    text(r.id.to_string()),
                    text(m.state),
                    text(m.state_data.clone()),
                    int(m.attempts),
                    Cell::T(m.cancel_data.clone()),
                    Cell::T(m.lease_owner.clone()),
                    int(m.fence),
                    Cell::I(r.ttl),
                    int(m.last_seq),
                    int(r.was_seq),
                    int(r.was_fence),
                    text(r.was_owner.clone()),
                    int(r.was_expires),
                ])?;
                &r.events
            }
        };
        for (e, data) in row_events {
            events.push(vec![
                text(e.invocation.to_string()),
                int(i64_of(e.seq)?),
                text(e.id.to_string()),
                text(e.kind.name()),
                text(data.clone()),
            ])?;
        }
    }
    // The statement lives in a function (migrations `..._batched_writes.sql` and
    // `..._write_batch_generic_plan.sql`), so that each connection plans it once (a generic
    // plan, not one per call's values) and never scans the invocations table whole.
    let args: Vec<String> = (1..=36).map(|n| format!("${n}")).collect();
    let sql =
        format!("SELECT written_id, written_expires, written_at FROM switchyard_write_batch({})", args.join(", "));
    let mut stmt = Stmt::new(sql);
    for cols in [new, held, events] {
        stmt = cols.bind(stmt);
    }
    Ok(stmt)
}

/// One value of a row bound column-wise.
enum Cell {
    T(Option<String>),
    I(Option<i64>),
}

fn text(v: impl Into<String>) -> Cell {
    Cell::T(Some(v.into()))
}

fn int(v: i64) -> Cell {
    Cell::I(Some(v))
}

/// The values of one `unnest`, column by column (each column one array parameter).
struct Columns(Vec<Column>);

enum Column {
    Texts(Vec<Option<String>>),
    Ints(Vec<Option<i64>>),
}

impl Columns {
    /// Columns typed by `layout`: `T` a text column, `I` an integer one.
    fn of(layout: &str) -> Self {
        Self(
            layout
                .chars()
                .map(|c| if c == 'I' { Column::Ints(Vec::new()) } else { Column::Texts(Vec::new()) })
                .collect(),
        )
    }

    fn push(&mut self, row: Vec<Cell>) -> Result<(), Error> {
        if row.len() != self.0.len() {
            return Err(Error::internal("store: a batched row has the wrong number of values"));
        }
        for (col, cell) in self.0.iter_mut().zip(row) {
            match (col, cell) {
                (Column::Texts(c), Cell::T(v)) => c.push(v),
                (Column::Ints(c), Cell::I(v)) => c.push(v),
                _ => return Err(Error::internal("store: a batched row has a value of the wrong type")),
            }
        }
        Ok(())
    }

    fn bind(self, stmt: Stmt) -> Stmt {
        self.0.into_iter().fold(stmt, |stmt, col| match col {
            Column::Texts(v) => stmt.opt_texts(v),
            Column::Ints(v) => stmt.opt_ints(v),
        })
    }
}
