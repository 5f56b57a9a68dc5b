//! The audit log's rows and checkpoints ([`AuditStore`]) on both databases. A batch of rows is
//! one multi-row `INSERT`: all of it commits or none; a sequence number already taken in the
//! partition (two writers on one chain) is a `Conflict`, never an overwrite.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use switchyard_contract::audit::chain;
use switchyard_contract::{AuditEntry, AuditLog, AuditRow, AuditStore, ChainHead, Error, Millis, StoredCheckpoint};

use crate::dialect::{self as sql, Arg, Cells, Dialect, On, Pools, Stmt};
use crate::error::db;
use crate::group::GroupCommit;
use crate::row::{i64_of, parse_json, to_json, u64_of};

/// Rows per insert statement (10 values each; SQLite allows 32,766 per statement).
const ROWS_PER_STATEMENT: usize = 500;

const COLUMNS: &str = "part, seq, at_ms, kind, tenant, actor, invocation, detail, prev, hash";

/// The audit store on one database.
#[derive(Debug, Clone)]
pub struct SqlAudit<D: Dialect> {
    pools: Pools<D>,
    /// SQLite: the invocation store's group commit, whose shared commits chain and insert
    /// entries ([`AuditStore::log_in_commits`]).
    group: Option<Arc<GroupCommit<D>>>,
}

impl<D: Dialect> SqlAudit<D> {
    /// Appends through `group`'s shared commits (one `fsync` with the calls they record).
    pub(crate) fn sharing(pools: Pools<D>, group: Option<Arc<GroupCommit<D>>>) -> Self {
        Self { pools, group }
    }
}

/// A partition's log on the single writer (SQLite): entries are chained and inserted inside the
/// group commit's shared transactions, which hold the database's write lock, so reading the
/// head there is race-free; a decision rides its admission's commit.
#[derive(Debug)]
struct GroupAudit<D: Dialect> {
    group: Arc<GroupCommit<D>>,
    partition: String,
}

#[async_trait]
impl<D: Dialect> AuditLog for GroupAudit<D> {
    async fn append(&self, entry: AuditEntry) -> Result<(), Error> {
        self.group.append_audit(self.partition.clone(), vec![entry]).await
    }

    fn admission_partition(&self) -> Option<&str> {
        Some(&self.partition)
    }
}

/// Audit chains' heads: `(seq, hash)` by partition.
pub(crate) type Heads = HashMap<String, (u64, String)>;

/// Chains `entries` (in order, each onto its partition) after each partition's head as read
/// inside `tx`, written at `at_ms`, and inserts them there (the split path of the group commit,
/// whose remembered heads may be stale).
pub(crate) async fn extend_in<D: Dialect>(
    tx: &mut sqlx::Transaction<'static, D::Db>,
    entries: &[(&str, &AuditEntry)],
    at_ms: Millis,
) -> Result<(), Error> {
    let mut heads = Heads::new();
    for partition in partitions(entries) {
        if let Some(row) = sql::optional::<D>(On::Tx(&mut *tx), head_stmt(partition)).await? {
            let (partition, h) = head_of(&row)?;
            heads.insert(partition, h);
        }
    }
    for stmt in chained(entries, at_ms, &heads)?.0 {
        sql::affected_or::<D>(On::Tx(&mut *tx), stmt, insert_error).await?;
    }
    Ok(())
}

/// The partitions `entries` name, each once, in order of first appearance.
pub(crate) fn partitions<'a>(entries: &[(&'a str, &AuditEntry)]) -> Vec<&'a str> {
    let mut partitions: Vec<&str> = Vec::new();
    for (p, _) in entries {
        if !partitions.contains(p) {
            partitions.push(p);
        }
    }
    partitions
}

/// Reads `partition`'s head: one row `(part, seq, hash)` ([`head_of`]), none while it is empty.
pub(crate) fn head_stmt(partition: &str) -> Stmt {
    Stmt::new("SELECT part, seq, hash FROM audit_log WHERE part = $1 ORDER BY seq DESC LIMIT 1").text(partition)
}

/// The `(partition, (seq, hash))` of a row of [`head_stmt`].
pub(crate) fn head_of(row: &impl Cells) -> Result<(String, (u64, String)), Error> {
    head(row).map(|h| (h.partition, (h.seq, h.hash)))
}

/// `entries` chained after `heads` (a partition absent there has no entry yet), at `at_ms`:
/// their inserts (run with [`insert_error`]) and the partitions' new heads.
pub(crate) fn chained(
    entries: &[(&str, &AuditEntry)],
    at_ms: Millis,
    heads: &Heads,
) -> Result<(Vec<Stmt>, Heads), Error> {
    let mut stmts = Vec::new();
    let mut moved = HashMap::new();
    for partition in partitions(entries) {
        let mine: Vec<&AuditEntry> = entries.iter().filter(|(p, _)| *p == partition).map(|(_, e)| *e).collect();
        let rows = chain(partition, heads.get(partition).cloned(), &mine, at_ms)?;
        stmts.extend(inserts(&rows)?);
        moved.extend(rows.last().map(|r| (partition.to_string(), (r.seq, r.hash.clone()))));
    }
    Ok((stmts, moved))
}

/// The inserts of `rows`, one statement per chunk. Run with [`insert_error`]: a taken
/// `(part, seq)` is `Conflict`.
pub(crate) fn inserts(rows: &[AuditRow]) -> Result<Vec<Stmt>, Error> {
    let mut stmts = Vec::new();
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut values = Vec::with_capacity(chunk.len());
        let mut args = Vec::with_capacity(chunk.len() * 10);
        for (i, r) in chunk.iter().enumerate() {
            let cells: Vec<String> = (1..=10).map(|k| format!("${}", i * 10 + k)).collect();
            values.push(format!("({})", cells.join(", ")));
            args.extend([
                Arg::Text(r.partition.clone()),
                Arg::Int(i64_of(r.seq)?),
                Arg::Int(r.at_ms),
                Arg::Text(r.kind.clone()),
                Arg::Text(r.tenant.clone()),
                Arg::Text(r.actor.clone()),
                Arg::OptText(r.invocation.clone()),
                Arg::Text(to_json(&r.detail)?),
                Arg::Text(r.prev.clone()),
                Arg::Text(r.hash.clone()),
            ]);
        }
        stmts.push(Stmt::with_args(format!("INSERT INTO audit_log ({COLUMNS}) VALUES {}", values.join(", ")), args));
    }
    Ok(stmts)
}

fn decode(row: &impl Cells) -> Result<AuditRow, Error> {
    Ok(AuditRow {
        partition: row.text(0)?,
        seq: u64_of(row.int(1)?, "audit seq")?,
        at_ms: row.int(2)?,
        kind: row.text(3)?,
        tenant: row.text(4)?,
        actor: row.text(5)?,
        invocation: row.opt_text(6)?,
        detail: parse_json(&row.text(7)?, "audit detail")?,
        prev: row.text(8)?,
        hash: row.text(9)?,
    })
}

fn head(row: &impl Cells) -> Result<ChainHead, Error> {
    Ok(ChainHead { partition: row.text(0)?, seq: u64_of(row.int(1)?, "audit seq")?, hash: row.text(2)? })
}

/// A taken `(part, seq)` is another writer on the same chain: the caller reloads its head.
pub(crate) fn insert_error(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Error::conflict("another writer appended to this audit partition first")
        }
        _ => db(e),
    }
}

#[async_trait]
impl<D: Dialect> AuditStore for SqlAudit<D> {
    async fn head(&self, partition: &str) -> Result<Option<ChainHead>, Error> {
        sql::optional::<D>(self.pools.read(), head_stmt(partition)).await?.as_ref().map(head).transpose()
    }

    async fn append(&self, rows: &[AuditRow]) -> Result<(), Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.pools.begin().await?;
        for stmt in inserts(rows)? {
            sql::affected_or::<D>(On::Tx(&mut tx), stmt, insert_error).await?;
        }
        tx.commit().await.map_err(db)
    }

    async fn heads(&self) -> Result<Vec<ChainHead>, Error> {
        let stmt = Stmt::new(
            "SELECT a.part, a.seq, a.hash FROM audit_log a \
             JOIN (SELECT part, MAX(seq) AS seq FROM audit_log GROUP BY part) m ON a.part = m.part AND a.seq = m.seq \
             ORDER BY a.part",
        );
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(head).collect()
    }

    async fn partitions(&self) -> Result<Vec<String>, Error> {
        let stmt = Stmt::new("SELECT DISTINCT part FROM audit_log ORDER BY part");
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(|r| r.text(0)).collect()
    }

    async fn rows(&self, partition: &str, after: u64, limit: u32) -> Result<Vec<AuditRow>, Error> {
        let stmt =
            Stmt::new(format!("SELECT {COLUMNS} FROM audit_log WHERE part = $1 AND seq > $2 ORDER BY seq LIMIT $3"))
                .text(partition)
                .int(i64_of(after)?)
                .int(i64::from(limit));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode).collect()
    }

    async fn since(
        &self,
        since_ms: Millis,
        after: Option<(Millis, String, u64)>,
        limit: u32,
    ) -> Result<Vec<AuditRow>, Error> {
        let (at, part, seq) = match after {
            Some((at, part, seq)) => (Some(at), Some(part), Some(i64_of(seq)?)),
            None => (None, None, None),
        };
        let stmt = Stmt::new(format!(
            "SELECT {COLUMNS} FROM audit_log WHERE at_ms >= $1 AND ($2 IS NULL \
             OR at_ms > $2 OR (at_ms = $2 AND (part > $3 OR (part = $3 AND seq > $4)))) \
             ORDER BY at_ms, part, seq LIMIT $5"
        ))
        .int(since_ms)
        .opt_int(at)
        .opt_text(part)
        .opt_int(seq)
        .int(i64::from(limit));
        sql::all::<D>(self.pools.read(), stmt).await?.iter().map(decode).collect()
    }

    async fn put_checkpoint(&self, checkpoint: &StoredCheckpoint) -> Result<(), Error> {
        let stmt = Stmt::new("INSERT INTO audit_checkpoints (id, at_ms, token) VALUES ($1, $2, $3)")
            .text(checkpoint.id.clone())
            .int(checkpoint.at_ms)
            .text(checkpoint.token.clone());
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    fn log_in_commits(&self, partition: &str) -> Option<Arc<dyn AuditLog>> {
        let group = self.group.clone()?;
        Some(Arc::new(GroupAudit { group, partition: partition.to_string() }))
    }

    async fn checkpoints(&self) -> Result<Vec<StoredCheckpoint>, Error> {
        let stmt = Stmt::new("SELECT id, at_ms, token FROM audit_checkpoints ORDER BY at_ms, id");
        sql::all::<D>(self.pools.read(), stmt)
            .await?
            .iter()
            .map(|r| Ok(StoredCheckpoint { id: r.text(0)?, at_ms: r.int(1)?, token: r.text(2)? }))
            .collect()
    }
}
