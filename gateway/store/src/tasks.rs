//! [`TaskStore`] on both databases. The SQL is shared: written with `$n` placeholders and
//! rewritten to `?n` for SQLite, and `{NOW}` for each database's own clock (the push outbox is
//! timed by it alone, so replicas with skewed clocks keep each webhook's order). JSON documents
//! are stored as text in both.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::Row;
use switchyard_contract::{
    Delivery, Error, NewDelivery, PushOutbox, RunCursor, TaskQuery, TaskRecord, TaskScope, TaskStateName, TaskStore,
    wall_clock_ms,
};

use crate::error::db;

const COLUMNS: &str = "id, scope, agent, context_id, state, status_ms, version, run_cursor, body";

const INSERT_TASK: &str = "INSERT INTO a2a_tasks \
    (id, scope, agent, context_id, state, status_ms, version, run_cursor, body, created_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING";
const UPDATE_TASK: &str = "UPDATE a2a_tasks SET context_id = $3, state = $4, status_ms = $5, version = $6, \
    run_cursor = $7, body = $8 WHERE id = $1 AND version = $2";
const INSERT_EVENT: &str = "INSERT INTO a2a_task_events (task_id, seq, event, created_ms) VALUES ($1, $2, $3, $4)";
const INSERT_DELIVERY: &str =
    "INSERT INTO a2a_push_outbox (task_id, config_id, config, payload, due_ms) VALUES ($1, $2, $3, $4, {NOW})";
const GET_TASK: &str = "SELECT id, scope, agent, context_id, state, status_ms, version, run_cursor, body \
    FROM a2a_tasks WHERE scope = $1 AND id = $2";
const EVENTS_AFTER: &str =
    "SELECT seq, event FROM a2a_task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
const PUT_CONFIG: &str = "INSERT INTO a2a_push_configs (task_id, id, config, created_ms) VALUES ($1, $2, $3, $4) \
    ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config";
const LIST_CONFIGS: &str = "SELECT id, config FROM a2a_push_configs WHERE task_id = $1 ORDER BY created_ms, id";
const DELETE_CONFIG: &str = "DELETE FROM a2a_push_configs WHERE task_id = $1 AND id = $2";
/// Claims the oldest pending delivery of each (task, config) that is due on the database's
/// clock: one webhook gets its task's events in order, a failing one does not hold up others.
/// Moving `due_ms` to the end of the lease (`$1` ms from now) is the claim; the outer due check
/// is re-evaluated on a row another replica claimed meanwhile (PostgreSQL re-checks it after the
/// row lock), so it is skipped.
const CLAIM: &str = "UPDATE a2a_push_outbox SET due_ms = {NOW} + $1 WHERE delivered_ms IS NULL AND due_ms <= {NOW} \
    AND id IN (SELECT o.id FROM a2a_push_outbox o JOIN (SELECT MIN(id) AS id FROM a2a_push_outbox \
    WHERE delivered_ms IS NULL GROUP BY task_id, config_id) h ON o.id = h.id WHERE o.due_ms <= {NOW} \
    ORDER BY o.id LIMIT $2) RETURNING id, task_id, config_id, config, payload, attempts";
const FINISH: &str =
    "UPDATE a2a_push_outbox SET delivered_ms = {NOW}, last_error = $2, attempts = attempts + 1 WHERE id = $1";
const RETRY: &str =
    "UPDATE a2a_push_outbox SET due_ms = {NOW} + $2, last_error = $3, attempts = attempts + 1 WHERE id = $1";

fn json(text: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))
}

fn text(value: &Value) -> String {
    value.to_string()
}

fn decode_task<R: Row>(row: &R) -> Result<TaskRecord, Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let body: String = row.try_get(8).map_err(db)?;
    Ok(TaskRecord {
        id: row.try_get(0).map_err(db)?,
        scope: TaskScope::from_key(&row.try_get::<String, _>(1).map_err(db)?)?,
        agent: row.try_get(2).map_err(db)?,
        context_id: row.try_get(3).map_err(db)?,
        state: {
            let s: String = row.try_get(4).map_err(db)?;
            TaskStateName::parse(&s).ok_or_else(|| Error::internal(format!("stored task state `{s}` is unknown")))?
        },
        status_ms: row.try_get(5).map_err(db)?,
        version: row.try_get(6).map_err(db)?,
        run_cursor: RunCursor::parse(&row.try_get::<String, _>(7).map_err(db)?),
        body: json(&body)?,
    })
}

fn decode_delivery<R: Row>(row: &R) -> Result<Delivery, Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let config: String = row.try_get(3).map_err(db)?;
    let payload: String = row.try_get(4).map_err(db)?;
    Ok(Delivery {
        id: row.try_get(0).map_err(db)?,
        task_id: row.try_get(1).map_err(db)?,
        config_id: row.try_get(2).map_err(db)?,
        config: json(&config)?,
        payload: json(&payload)?,
        attempts: row.try_get(5).map_err(db)?,
    })
}

/// `SELECT … WHERE <filter>` for a list query, with its bind values in order. Values are
/// always bound, never spliced.
fn list_sql(q: &TaskQuery, count: bool) -> (String, Vec<ListArg>) {
    let mut args = vec![ListArg::Text(q.scope.key()), ListArg::Text(q.agent.clone())];
    let mut filter = String::from("scope = $1 AND agent = $2");
    if let Some(c) = &q.context_id {
        args.push(ListArg::Text(c.clone()));
        filter.push_str(&format!(" AND context_id = ${}", args.len()));
    }
    if let Some(s) = &q.state {
        args.push(ListArg::Text(s.as_str().to_string()));
        filter.push_str(&format!(" AND state = ${}", args.len()));
    }
    if let Some(t) = q.status_after_ms {
        args.push(ListArg::Int(t));
        filter.push_str(&format!(" AND status_ms >= ${}", args.len()));
    }
    if count {
        return (format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filter}"), args);
    }
    if let Some((ms, id)) = &q.after {
        args.push(ListArg::Int(*ms));
        let a = args.len();
        args.push(ListArg::Text(id.clone()));
        let b = args.len();
        filter.push_str(&format!(" AND (status_ms < ${a} OR (status_ms = ${a} AND id < ${b}))"));
    }
    args.push(ListArg::Int(i64::from(q.limit)));
    let sql = format!(
        "SELECT {COLUMNS} FROM a2a_tasks WHERE {filter} ORDER BY status_ms DESC, id DESC LIMIT ${}",
        args.len()
    );
    (sql, args)
}

enum ListArg {
    Text(String),
    Int(i64),
}

/// Implements the port on one backend: `$sql` adapts the placeholders, `$writer`/`$reader` name the pools.
macro_rules! task_store_impl {
    ($ty:ty, $sql:expr, $writer:ident, $reader:ident) => {
        #[async_trait]
        impl TaskStore for $ty {
            async fn create(&self, task: &TaskRecord, events: &[Value]) -> Result<bool, Error> {
                let now = wall_clock_ms();
                let mut tx = self.$writer.begin().await.map_err(db)?;
                let done = sqlx::query(sqlx::AssertSqlSafe($sql(INSERT_TASK)))
                    .bind(&task.id)
                    .bind(task.scope.key())
                    .bind(&task.agent)
                    .bind(&task.context_id)
                    .bind(task.state.as_str())
                    .bind(task.status_ms)
                    .bind(task.version)
                    .bind(task.run_cursor.map(|c| c.to_string()).unwrap_or_default())
                    .bind(text(&task.body))
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                for (i, e) in events.iter().enumerate() {
                    let seq = i64::try_from(i).unwrap_or(i64::MAX).saturating_add(1);
                    sqlx::query(sqlx::AssertSqlSafe($sql(INSERT_EVENT)))
                        .bind(&task.id)
                        .bind(seq)
                        .bind(text(e))
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                }
                tx.commit().await.map_err(db)?;
                Ok(true)
            }

            async fn get(&self, scope: &TaskScope, id: &str) -> Result<Option<TaskRecord>, Error> {
                let row = sqlx::query(sqlx::AssertSqlSafe($sql(GET_TASK)))
                    .bind(scope.key())
                    .bind(id)
                    .fetch_optional(&self.$reader)
                    .await
                    .map_err(db)?;
                row.as_ref().map(decode_task).transpose()
            }

            async fn update(
                &self,
                task: &TaskRecord,
                expected_version: i64,
                events: &[Value],
                deliveries: &[NewDelivery],
            ) -> Result<bool, Error> {
                let now = wall_clock_ms();
                let mut tx = self.$writer.begin().await.map_err(db)?;
                let done = sqlx::query(sqlx::AssertSqlSafe($sql(UPDATE_TASK)))
                    .bind(&task.id)
                    .bind(expected_version)
                    .bind(&task.context_id)
                    .bind(task.state.as_str())
                    .bind(task.status_ms)
                    .bind(task.version)
                    .bind(task.run_cursor.map(|c| c.to_string()).unwrap_or_default())
                    .bind(text(&task.body))
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                if done.rows_affected() == 0 {
                    return Ok(false);
                }
                let mut seq = expected_version;
                for e in events {
                    seq += 1;
                    sqlx::query(sqlx::AssertSqlSafe($sql(INSERT_EVENT)))
                        .bind(&task.id)
                        .bind(seq)
                        .bind(text(e))
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                }
                for d in deliveries {
                    sqlx::query(sqlx::AssertSqlSafe($sql(INSERT_DELIVERY)))
                        .bind(&task.id)
                        .bind(&d.config_id)
                        .bind(text(&d.config))
                        .bind(text(&d.payload))
                        .execute(&mut *tx)
                        .await
                        .map_err(db)?;
                }
                tx.commit().await.map_err(db)?;
                Ok(true)
            }

            async fn events_after(&self, id: &str, after: i64, limit: u32) -> Result<Vec<(i64, Value)>, Error> {
                let rows = sqlx::query(sqlx::AssertSqlSafe($sql(EVENTS_AFTER)))
                    .bind(id)
                    .bind(after)
                    .bind(i64::from(limit))
                    .fetch_all(&self.$reader)
                    .await
                    .map_err(db)?;
                rows.iter()
                    .map(|r| {
                        let seq: i64 = r.try_get(0).map_err(db)?;
                        let event: String = r.try_get(1).map_err(db)?;
                        Ok((seq, json(&event)?))
                    })
                    .collect()
            }

            async fn list(&self, query: &TaskQuery) -> Result<(Vec<TaskRecord>, i64), Error> {
                let bound = |count: bool| {
                    let (sql, args) = list_sql(query, count);
                    args.into_iter().fold(sqlx::query(sqlx::AssertSqlSafe($sql(&sql))), |q, a| match a {
                        ListArg::Text(t) => q.bind(t),
                        ListArg::Int(i) => q.bind(i),
                    })
                };
                let rows = bound(false).fetch_all(&self.$reader).await.map_err(db)?;
                let tasks = rows.iter().map(decode_task).collect::<Result<Vec<_>, _>>()?;
                let row = bound(true).fetch_one(&self.$reader).await.map_err(db)?;
                let total: i64 = row.try_get(0).map_err(db)?;
                Ok((tasks, total))
            }

            async fn put_push_config(&self, task_id: &str, id: &str, config: &Value) -> Result<(), Error> {
                sqlx::query(sqlx::AssertSqlSafe($sql(PUT_CONFIG)))
                    .bind(task_id)
                    .bind(id)
                    .bind(text(config))
                    .bind(wall_clock_ms())
                    .execute(&self.$writer)
                    .await
                    .map_err(db)?;
                Ok(())
            }

            async fn push_configs(&self, task_id: &str) -> Result<Vec<(String, Value)>, Error> {
                let rows = sqlx::query(sqlx::AssertSqlSafe($sql(LIST_CONFIGS)))
                    .bind(task_id)
                    .fetch_all(&self.$reader)
                    .await
                    .map_err(db)?;
                rows.iter()
                    .map(|r| {
                        let id: String = r.try_get(0).map_err(db)?;
                        let config: String = r.try_get(1).map_err(db)?;
                        Ok((id, json(&config)?))
                    })
                    .collect()
            }

            async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, Error> {
                let done = sqlx::query(sqlx::AssertSqlSafe($sql(DELETE_CONFIG)))
                    .bind(task_id)
                    .bind(id)
                    .execute(&self.$writer)
                    .await
                    .map_err(db)?;
                Ok(done.rows_affected() > 0)
            }
        }

        #[async_trait]
        impl PushOutbox for $ty {
            async fn claim_deliveries(&self, lease_ms: i64, limit: u32) -> Result<Vec<Delivery>, Error> {
                let rows = sqlx::query(sqlx::AssertSqlSafe($sql(CLAIM)))
                    .bind(lease_ms)
                    .bind(i64::from(limit))
                    .fetch_all(&self.$writer)
                    .await
                    .map_err(db)?;
                let mut claimed = rows.iter().map(decode_delivery).collect::<Result<Vec<_>, _>>()?;
                claimed.sort_by_key(|d| d.id);
                Ok(claimed)
            }

            async fn finish_delivery(&self, id: i64, error: Option<&str>) -> Result<(), Error> {
                sqlx::query(sqlx::AssertSqlSafe($sql(FINISH)))
                    .bind(id)
                    .bind(error)
                    .execute(&self.$writer)
                    .await
                    .map_err(db)?;
                Ok(())
            }

            async fn retry_delivery(&self, id: i64, backoff_ms: i64, error: &str) -> Result<(), Error> {
                sqlx::query(sqlx::AssertSqlSafe($sql(RETRY)))
                    .bind(id)
                    .bind(backoff_ms)
                    .bind(error)
                    .execute(&self.$writer)
                    .await
                    .map_err(db)?;
                Ok(())
            }
        }
    };
}

/// Tasks on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgTasks {
    pool: sqlx::PgPool,
}

impl PgTasks {
    pub(crate) fn from_pool(pool: sqlx::PgPool) -> Self {
        Self { pool }
    }
}

fn pg(sql: &str) -> String {
    sql.replace("{NOW}", "(extract(epoch from clock_timestamp()) * 1000)::bigint")
}

/// Tasks on SQLite: writes (and outbox reads) on the single writer, other reads on the readers.
#[derive(Debug, Clone)]
pub struct SqliteTasks {
    writer: sqlx::SqlitePool,
    readers: sqlx::SqlitePool,
}

impl SqliteTasks {
    pub(crate) fn from_pools(writer: sqlx::SqlitePool, readers: sqlx::SqlitePool) -> Self {
        Self { writer, readers }
    }
}

fn sqlite(sql: &str) -> String {
    sql.replace('$', "?").replace("{NOW}", "CAST(unixepoch('subsec') * 1000 AS INTEGER)")
}

task_store_impl!(PgTasks, pg, pool, pool);
task_store_impl!(SqliteTasks, sqlite, writer, readers);
