//! The push outbox ([`PushOutbox`]) on both databases: deliveries queued with their task's
//! update, claimed by lease, retried with backoff. It is timed by the database's clock alone, so
//! replicas with skewed clocks keep each webhook's order.

use async_trait::async_trait;
use switchyard_contract::{Delivery, Error, NewDelivery, PushOutbox, TaskId};

use crate::dialect::{self as sql, Cells, Dialect, Pools, Stmt};
use crate::row::parse_json;

/// The push outbox on one database.
#[derive(Debug, Clone)]
pub struct SqlOutbox<D: Dialect> {
    pools: Pools<D>,
}

impl<D: Dialect> SqlOutbox<D> {
    pub fn new(pools: Pools<D>) -> Self {
        Self { pools }
    }
}

/// The insert queueing one delivery, due now (it runs in the task update's transaction).
pub(crate) fn queue<D: Dialect>(task: &TaskId, d: &NewDelivery) -> Stmt {
    Stmt::new(format!(
        "INSERT INTO a2a_push_outbox (task_id, config_id, config, payload, due_ms) VALUES ($1, $2, $3, $4, {})",
        D::NOW
    ))
    .text(task.as_str())
    .text(d.config_id.as_str())
    .text(d.config.to_string())
    .text(d.payload.to_string())
}

fn decode_delivery(row: &impl Cells) -> Result<Delivery, Error> {
    Ok(Delivery {
        id: row.int(0)?,
        task_id: TaskId::from(row.text(1)?),
        config_id: row.text(2)?,
        config: parse_json(&row.text(3)?, "push config")?,
        payload: parse_json(&row.text(4)?, "push payload")?,
        attempts: i32::try_from(row.int(5)?).map_err(crate::row::corrupt)?,
    })
}

#[async_trait]
impl<D: Dialect> PushOutbox for SqlOutbox<D> {
    /// Claims the oldest pending delivery of each (task, config) that is due on the database's
    /// clock: one webhook gets its task's events in order, a failing one does not hold up others.
    /// Moving `due_ms` to the end of the lease (`$1` ms from now) is the claim; the outer due
    /// check is re-evaluated on a row another replica claimed meanwhile (PostgreSQL re-checks it
    /// after the row lock), so it is skipped.
    async fn claim_deliveries(&self, lease_ms: i64, limit: u32) -> Result<Vec<Delivery>, Error> {
        let now = D::NOW;
        let stmt = Stmt::new(format!(
            "UPDATE a2a_push_outbox SET due_ms = {now} + $1 WHERE delivered_ms IS NULL AND due_ms <= {now} \
             AND id IN (SELECT o.id FROM a2a_push_outbox o JOIN (SELECT MIN(id) AS id FROM a2a_push_outbox \
             WHERE delivered_ms IS NULL GROUP BY task_id, config_id) h ON o.id = h.id WHERE o.due_ms <= {now} \
             ORDER BY o.id LIMIT $2) RETURNING id, task_id, config_id, config, payload, CAST(attempts AS BIGINT)"
        ))
        .int(lease_ms)
        .int(i64::from(limit));
        let rows = sql::all::<D>(self.pools.write(), stmt).await?;
        let mut claimed = rows.iter().map(decode_delivery).collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|d| d.id);
        Ok(claimed)
    }

    async fn finish_delivery(&self, id: i64, error: Option<&str>) -> Result<(), Error> {
        let stmt = Stmt::new(format!(
            "UPDATE a2a_push_outbox SET delivered_ms = {}, last_error = $2, attempts = attempts + 1 WHERE id = $1",
            D::NOW
        ))
        .int(id)
        .opt_text(error);
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn retry_delivery(&self, id: i64, backoff_ms: i64, error: &str) -> Result<(), Error> {
        let stmt = Stmt::new(format!(
            "UPDATE a2a_push_outbox SET due_ms = {} + $2, last_error = $3, attempts = attempts + 1 WHERE id = $1",
            D::NOW
        ))
        .int(id)
        .int(backoff_ms)
        .text(error);
        sql::affected::<D>(self.pools.write(), stmt).await?;
        Ok(())
    }

    async fn pending_deliveries(&self) -> Result<u64, Error> {
        // Read off the partial index `a2a_push_outbox_due`.
        let stmt = Stmt::new("SELECT COUNT(*) FROM a2a_push_outbox WHERE delivered_ms IS NULL");
        let row = sql::one::<D>(self.pools.read(), stmt).await?;
        u64::try_from(row.int(0)?).map_err(|_| Error::internal("a negative count"))
    }
}
