//! [`TaskStore`] on both databases: A2A task rows, their event logs and push configurations. A
//! task row changes only at the version its writer read (optimistic concurrency); its events and
//! the push deliveries they queue ([`crate::outbox`]) commit with it. JSON documents are stored as
//! text in both databases; every time is the database's.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use switchyard_contract::{
    AttemptId, Error, InvocationId, NewDelivery, RunCursor, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStateName,
    TaskStore,
};

use crate::dialect::{self as sql, Arg, Cells, Dialect, On, Pools, Stmt};
use crate::group::GroupCommit;
use crate::row::parse_json;

const COLUMNS: &str = "id, scope, agent, context_id, state, status_ms, version, run_cursor, body, owner";

/// The task store on one database.
#[derive(Debug, Clone)]
pub struct SqlTasks<D: Dialect> {
    pools: Pools<D>,
    /// SQLite's group commit, shared with the invocations (`None`: a transaction per write).
    group: Option<Arc<GroupCommit<D>>>,
}

impl<D: Dialect> SqlTasks<D> {
    /// A task store whose writes share the invocations' group commit (`None`: each in a
    /// transaction of its own).
    pub(crate) fn sharing(pools: Pools<D>, group: Option<Arc<GroupCommit<D>>>) -> Self {
        Self { pools, group }
    }
}

fn decode_task(row: &impl Cells) -> Result<TaskRecord, Error> {
    let state = row.text(4)?;
    Ok(TaskRecord {
        id: TaskId::from(row.text(0)?),
        scope: TaskScope::stored(&row.text(1)?, &row.text(9)?)?,
        agent: row.text(2)?,
        context_id: row.text(3)?.into(),
        state: TaskStateName::parse(&state)
            .ok_or_else(|| crate::row::corrupt(format!("stored task state `{state}` is unknown")))?,
        status_ms: row.int(5)?,
        version: row.int(6)?,
        run_cursor: RunCursor::parse(&row.text(7)?),
        body: parse_json(&row.text(8)?, "task")?,
    })
}

/// Binds the six columns a task's writes set, in order: context id, state, status time,
/// version, run cursor, body.
fn bind_status(stmt: Stmt, task: &TaskRecord) -> Stmt {
    stmt.text(task.context_id.as_str())
        .text(task.state.as_str())
        .int(task.status_ms)
        .int(task.version)
        .text(task.run_cursor.map(|c| c.to_string()).unwrap_or_default())
        .text(task.body.to_string())
}

/// One write of a task: its creation (nothing if the id is taken) or an update at the version
/// its writer read (nothing if it moved). Applied inside a transaction ([`write_in`]) or, on
/// SQLite, in the group commit's shared one ([`crate::group`]).
#[derive(Debug, Clone)]
pub(crate) enum TaskWrite {
    /// With a `fence`: only while that attempt is its invocation's current one, lease live.
    Create {
        task: TaskRecord,
        events: Vec<Value>,
        fence: Option<(InvocationId, AttemptId)>,
    },
    Update {
        task: TaskRecord,
        expected: i64,
        events: Vec<Value>,
        deliveries: Vec<NewDelivery>,
    },
}

impl TaskWrite {
    pub(crate) fn id(&self) -> &TaskId {
        match self {
            TaskWrite::Create { task, .. } | TaskWrite::Update { task, .. } => &task.id,
        }
    }

    /// Whether the write applies to a task at `current` (its version, `None`: no such task),
    /// and the version it leaves.
    pub(crate) fn applies(&self, current: Option<i64>) -> Option<i64> {
        match (self, current) {
            (TaskWrite::Create { task, .. }, None) => Some(task.version),
            (TaskWrite::Update { task, expected, .. }, Some(v)) if v == *expected => Some(task.version),
            _ => None,
        }
    }

    /// The row's write (whose count of changed rows says whether it applied), then the
    /// statements that follow it when it did: the new events, numbered on from the version it
    /// replaced, and the push deliveries they queue.
    pub(crate) fn statements<D: Dialect>(&self) -> (Stmt, Vec<Stmt>) {
        let (row, after, events, deliveries) = match self {
            TaskWrite::Create { task, events, fence } => {
                // Fenced: inserted only while the attempt is the invocation's current one and
                // its lease is live, judged in the same statement on the database's clock.
                let guard = if fence.is_some() {
                    format!(
                        " WHERE EXISTS (SELECT 1 FROM invocations WHERE id = $11 AND state = 'dispatching' \
                         AND lease_expires_ms > {now} AND CAST(state_data AS TEXT) LIKE $12)",
                        now = D::NOW
                    )
                } else {
                    String::new()
                };
                let insert = Stmt::new(format!(
                    "INSERT INTO a2a_tasks (id, scope, agent, context_id, state, status_ms, version, run_cursor, \
                     body, owner, created_ms) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {}{guard} \
                     ON CONFLICT (id) DO NOTHING",
                    D::NOW
                ))
                .text(task.id.as_str())
                .text(task.scope.key())
                .text(task.agent.as_str());
                let mut insert = bind_status(insert, task).text(task.scope.owner());
                if let Some((run, attempt)) = fence {
                    insert = insert.text(run.to_string()).text(format!("%{attempt}%"));
                }
                (insert, 0, events, &[][..])
            }
            TaskWrite::Update { task, expected, events, deliveries } => {
                let update = Stmt::new(
                    "UPDATE a2a_tasks SET context_id = $3, state = $4, status_ms = $5, version = $6, \
                     run_cursor = $7, body = $8 WHERE id = $1 AND version = $2",
                )
                .text(task.id.as_str())
                .int(*expected);
                (bind_status(update, task), *expected, events, &deliveries[..])
            }
        };
        let id = self.id();
        let numbered: Vec<(i64, &Value)> = (after + 1..).zip(events).collect();
        let mut rest = Vec::new();
        for chunk in numbered.chunks(500) {
            let values: Vec<String> = (0..chunk.len())
                .map(|r| format!("(${}, ${}, ${}, {})", 3 * r + 1, 3 * r + 2, 3 * r + 3, D::NOW))
                .collect();
            let mut stmt = Stmt::new(format!(
                "INSERT INTO a2a_task_events (task_id, seq, event, created_ms) VALUES {}",
                values.join(", ")
            ));
            for (seq, e) in chunk {
                stmt = stmt.text(id.as_str()).int(*seq).text(e.to_string());
            }
            rest.push(stmt);
        }
        rest.extend(deliveries.iter().map(|d| crate::outbox::queue::<D>(id, d)));
        (row, rest)
    }
}

/// Applies `write` inside an open transaction: `false` (and nothing written) if it does not
/// apply.
pub(crate) async fn write_in<D: Dialect>(
    tx: &mut sqlx::Transaction<'static, D::Db>,
    write: &TaskWrite,
) -> Result<bool, Error> {
    let (row, rest) = write.statements::<D>();
    if sql::affected::<D>(On::Tx(tx), row).await? == 0 {
        return Ok(false);
    }
    for stmt in rest {
        sql::affected::<D>(On::Tx(tx), stmt).await?;
    }
    Ok(true)
}

impl<D: Dialect> SqlTasks<D> {
    /// Commits `write`: in the group commit's next shared commit where there is one, else in a
    /// transaction of its own.
    async fn write(&self, write: TaskWrite) -> Result<bool, Error> {
        if let Some(group) = &self.group {
            return group.write_task(write).await;
        }
        let mut tx = self.pools.begin().await?;
        if !write_in::<D>(&mut tx, &write).await? {
            return Ok(false);
        }
        tx.commit().await.map_err(crate::error::db)?;
        Ok(true)
    }
}

#[async_trait]
impl<D: Dialect> TaskStore for SqlTasks<D> {
    async fn create(&self, task: &TaskRecord, events: &[Value]) -> Result<bool, Error> {
        self.write(TaskWrite::Create { task: task.clone(), events: events.to_vec(), fence: None }).await
    }

    /// In a transaction of its own, never in the group commit: its outcome depends on the
    /// invocation's row at the moment it runs, which the group does not read.
    async fn create_fenced(
        &self,
        task: &TaskRecord,
        events: &[Value],
        run: InvocationId,
        attempt: AttemptId,
    ) -> Result<bool, Error> {
        let write = TaskWrite::Create { task: task.clone(), events: events.to_vec(), fence: Some((run, attempt)) };
        let mut tx = self.pools.begin().await?;
        if !write_in::<D>(&mut tx, &write).await? {
            return Ok(false);
        }
        tx.commit().await.map_err(crate::error::db)?;
        Ok(true)
    }

    async fn get(&self, scope: &TaskScope, id: &TaskId) -> Result<Option<TaskRecord>, Error> {
        let mut stmt =
            Stmt::new(format!("SELECT {COLUMNS} FROM a2a_tasks WHERE scope = $1 AND id = $2{}", owned(scope, 3)))
                .text(scope.key())
                .text(id.as_str());
        if !scope.is_tenant_wide() {
            stmt = stmt.text(scope.owner());
        }
        sql::optional::<D>(self.pools.read(), stmt).await?.as_ref().map(decode_task).transpose()
    }

    async fn update(
        &self,
        task: &TaskRecord,
        expected_version: i64,
        events: &[Value],
        deliveries: &[NewDelivery],
    ) -> Result<bool, Error> {
        let (task, events, deliveries) = (task.clone(), events.to_vec(), deliveries.to_vec());
        self.write(TaskWrite::Update { task, expected: expected_version, events, deliveries }).await
    }

    async fn versions(&self, ids: &[TaskId]) -> Result<Vec<(TaskId, i64)>, Error> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let stmt = Stmt::new(format!("SELECT id, version FROM a2a_tasks WHERE {}", D::any("id", 1)))
                .texts(chunk.iter().map(ToString::to_string).collect());
            for row in sql::all::<D>(self.pools.read(), stmt).await? {
                out.push((TaskId::from(row.text(0)?), row.int(1)?));
            }
        }
        Ok(out)
    }

    async fn events_after(&self, id: &TaskId, after: i64, limit: u32) -> Result<Vec<(i64, Value)>, Error> {
        let stmt =
            Stmt::new("SELECT seq, event FROM a2a_task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
                .text(id.as_str())
                .int(after)
                .int(i64::from(limit));
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        rows.iter().map(|r| Ok((r.int(0)?, parse_json(&r.text(1)?, "task event")?))).collect()
    }

    async fn list(&self, query: &TaskQuery) -> Result<(Vec<TaskRecord>, i64), Error> {
        let rows = sql::all::<D>(self.pools.read(), list_stmt(query, false)).await?;
        let tasks = rows.iter().map(decode_task).collect::<Result<Vec<_>, _>>()?;
        let total = sql::one::<D>(self.pools.read(), list_stmt(query, true)).await?.int(0)?;
        Ok((tasks, total))
    }

    async fn put_push_config(&self, task_id: &TaskId, id: &str, config: &Value) -> Result<(), Error> {
        let stmt = Stmt::new(format!(
            "INSERT INTO a2a_push_configs (task_id, id, config, created_ms) VALUES ($1, $2, $3, {}) \
             ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config",
            D::NOW
        ))
        .text(task_id.as_str())
        .text(id)
        .text(config.to_string());
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn push_configs(&self, task_id: &TaskId) -> Result<Vec<(String, Value)>, Error> {
        let stmt = Stmt::new("SELECT id, config FROM a2a_push_configs WHERE task_id = $1 ORDER BY created_ms, id")
            .text(task_id.as_str());
        let rows = sql::all::<D>(self.pools.read(), stmt).await?;
        rows.iter().map(|r| Ok((r.text(0)?, parse_json(&r.text(1)?, "push config")?))).collect()
    }

    async fn delete_push_config(&self, task_id: &TaskId, id: &str) -> Result<bool, Error> {
        let stmt =
            Stmt::new("DELETE FROM a2a_push_configs WHERE task_id = $1 AND id = $2").text(task_id.as_str()).text(id);
        Ok(sql::affected::<D>(self.pools.write(), stmt).await? > 0)
    }
}

/// The owner condition of a read in `scope`, on parameter `$n` (the owner), or none when the
/// scope reads tenant-wide.
fn owned(scope: &TaskScope, n: usize) -> String {
    if scope.is_tenant_wide() { String::new() } else { format!(" AND owner = ${n}") }
}

/// `SELECT … WHERE <filter>` for a list query (or its count). Values are always bound, never
/// spliced.
fn list_stmt(q: &TaskQuery, count: bool) -> Stmt {
    let mut args = vec![Arg::Text(q.scope.key()), Arg::Text(q.agent.clone())];
    let mut filter = format!("scope = $1 AND agent = $2{}", owned(&q.scope, 3));
    if !q.scope.is_tenant_wide() {
        args.push(Arg::Text(q.scope.owner().to_string()));
    }
    if let Some(c) = &q.context_id {
        args.push(Arg::Text(c.to_string()));
        filter.push_str(&format!(" AND context_id = ${}", args.len()));
    }
    if let Some(s) = &q.state {
        args.push(Arg::Text(s.as_str().to_string()));
        filter.push_str(&format!(" AND state = ${}", args.len()));
    }
    if let Some(t) = q.status_after_ms {
        args.push(Arg::Int(t));
        filter.push_str(&format!(" AND status_ms >= ${}", args.len()));
    }
    if count {
        return Stmt::with_args(format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filter}"), args);
    }
    if let Some((ms, id)) = &q.after {
        args.push(Arg::Int(*ms));
        let a = args.len();
        args.push(Arg::Text(id.to_string()));
        let b = args.len();
        filter.push_str(&format!(" AND (status_ms < ${a} OR (status_ms = ${a} AND id < ${b}))"));
    }
    args.push(Arg::Int(i64::from(q.limit)));
    let sql = format!(
        "SELECT {COLUMNS} FROM a2a_tasks WHERE {filter} ORDER BY status_ms DESC, id DESC LIMIT ${}",
        args.len()
    );
    Stmt::with_args(sql, args)
}
