//! The in-memory A2A task rows and push outbox.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::lock;
use crate::Millis;
use crate::error::Error;
use crate::tasks::{Delivery, NewDelivery, PushOutbox, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStore};

/// In-memory task rows ([`TaskStore`] and [`PushOutbox`]) with the stores' rules: compare-and-set on `version`,
/// reads scoped by tenant, events numbered with the version, and an outbox whose deliveries of
/// one (task, configuration) go out one at a time, oldest first, on the port's clock.
#[derive(Debug, Default)]
pub struct MemoryTasks(Mutex<TaskRows>);

#[derive(Debug, Default)]
struct TaskRows {
    tasks: HashMap<TaskId, TaskRecord>,
    events: HashMap<TaskId, Vec<(i64, serde_json::Value)>>,
    /// Per task: configuration id → configuration, in creation order.
    configs: HashMap<TaskId, Vec<(String, serde_json::Value)>>,
    outbox: Vec<Outgoing>,
}

#[derive(Debug)]
struct Outgoing {
    delivery: Delivery,
    due_ms: Millis,
    done: bool,
}

impl MemoryTasks {
    fn rows(&self) -> MutexGuard<'_, TaskRows> {
        lock(&self.0)
    }
}

impl TaskRows {
    fn journal(&mut self, id: &TaskId, from: i64, events: &[serde_json::Value]) {
        let log = self.events.entry(id.clone()).or_default();
        log.extend(events.iter().enumerate().map(|(i, e)| (from + i as i64, e.clone())));
    }
}

#[async_trait]
impl TaskStore for MemoryTasks {
    async fn create(&self, task: &TaskRecord, events: &[serde_json::Value]) -> Result<bool, Error> {
        let mut rows = self.rows();
        if rows.tasks.contains_key(&task.id) {
            return Ok(false);
        }
        rows.tasks.insert(task.id.clone(), task.clone());
        rows.journal(&task.id, 1, events);
        Ok(true)
    }

    /// The in-memory store keeps no invocations to fence on: it creates as `create` does.
    async fn create_fenced(
        &self,
        task: &TaskRecord,
        events: &[serde_json::Value],
        _run: crate::id::InvocationId,
        _attempt: crate::id::AttemptId,
    ) -> Result<bool, Error> {
        self.create(task, events).await
    }

    async fn get(&self, scope: &TaskScope, id: &TaskId) -> Result<Option<TaskRecord>, Error> {
        Ok(self.rows().tasks.get(id).filter(|t| scope.covers(&t.scope)).cloned())
    }

    async fn update(
        &self,
        task: &TaskRecord,
        expected_version: i64,
        events: &[serde_json::Value],
        deliveries: &[NewDelivery],
    ) -> Result<bool, Error> {
        let mut rows = self.rows();
        if rows.tasks.get(&task.id).is_none_or(|t| t.version != expected_version) {
            return Ok(false);
        }
        rows.tasks.insert(task.id.clone(), task.clone());
        rows.journal(&task.id, expected_version + 1, events);
        let now = crate::wall_clock_ms();
        for d in deliveries {
            let id = i64::try_from(rows.outbox.len()).unwrap_or(i64::MAX) + 1;
            let delivery = Delivery {
                id,
                task_id: task.id.clone(),
                config_id: d.config_id.clone(),
                config: d.config.clone(),
                payload: d.payload.clone(),
                attempts: 0,
            };
            rows.outbox.push(Outgoing { delivery, due_ms: now, done: false });
        }
        Ok(true)
    }

    async fn versions(&self, ids: &[TaskId]) -> Result<Vec<(TaskId, i64)>, Error> {
        let rows = self.rows();
        Ok(ids.iter().filter_map(|id| rows.tasks.get(id).map(|t| (id.clone(), t.version))).collect())
    }

    async fn events_after(&self, id: &TaskId, after: i64, limit: u32) -> Result<Vec<(i64, serde_json::Value)>, Error> {
        let rows = self.rows();
        let log = rows.events.get(id).map(Vec::as_slice).unwrap_or_default();
        Ok(log.iter().filter(|(seq, _)| *seq > after).take(limit as usize).cloned().collect())
    }

    async fn list(&self, q: &TaskQuery) -> Result<(Vec<TaskRecord>, i64), Error> {
        let rows = self.rows();
        let matching: Vec<&TaskRecord> = rows
            .tasks
            .values()
            .filter(|t| q.scope.covers(&t.scope) && t.agent == q.agent)
            .filter(|t| q.context_id.as_ref().is_none_or(|c| &t.context_id == c))
            .filter(|t| q.state.as_ref().is_none_or(|s| &t.state == s))
            .filter(|t| q.status_after_ms.is_none_or(|ms| t.status_ms >= ms))
            .collect();
        let total = i64::try_from(matching.len()).unwrap_or(i64::MAX);
        let mut page: Vec<TaskRecord> = matching
            .into_iter()
            .filter(|t| q.after.as_ref().is_none_or(|(ms, id)| (t.status_ms, &t.id) < (*ms, id)))
            .cloned()
            .collect();
        page.sort_by(|a, b| (b.status_ms, &b.id).cmp(&(a.status_ms, &a.id)));
        page.truncate(q.limit as usize);
        Ok((page, total))
    }

    async fn put_push_config(&self, task_id: &TaskId, id: &str, config: &serde_json::Value) -> Result<(), Error> {
        let mut rows = self.rows();
        let configs = rows.configs.entry(task_id.clone()).or_default();
        match configs.iter_mut().find(|(c, _)| c == id) {
            Some(slot) => slot.1 = config.clone(),
            None => configs.push((id.to_string(), config.clone())),
        }
        Ok(())
    }

    async fn push_configs(&self, task_id: &TaskId) -> Result<Vec<(String, serde_json::Value)>, Error> {
        Ok(self.rows().configs.get(task_id).cloned().unwrap_or_default())
    }

    async fn delete_push_config(&self, task_id: &TaskId, id: &str) -> Result<bool, Error> {
        let mut rows = self.rows();
        let Some(configs) = rows.configs.get_mut(task_id) else { return Ok(false) };
        let before = configs.len();
        configs.retain(|(c, _)| c != id);
        Ok(configs.len() < before)
    }
}

#[async_trait]
impl PushOutbox for MemoryTasks {
    async fn claim_deliveries(&self, lease_ms: i64, limit: u32) -> Result<Vec<Delivery>, Error> {
        let now = crate::wall_clock_ms();
        let mut rows = self.rows();
        let mut heads = std::collections::HashSet::new();
        let mut claimed = Vec::new();
        for o in rows.outbox.iter_mut().filter(|o| !o.done) {
            // Only the oldest pending delivery of each (task, configuration), due or not.
            if !heads.insert((o.delivery.task_id.clone(), o.delivery.config_id.clone())) {
                continue;
            }
            if o.due_ms <= now && claimed.len() < limit as usize {
                o.due_ms = now + lease_ms;
                claimed.push(o.delivery.clone());
            }
        }
        Ok(claimed)
    }

    async fn finish_delivery(&self, id: i64, _error: Option<&str>) -> Result<(), Error> {
        if let Some(o) = self.rows().outbox.iter_mut().find(|o| o.delivery.id == id) {
            o.done = true;
            o.delivery.attempts += 1;
        }
        Ok(())
    }

    async fn retry_delivery(&self, id: i64, backoff_ms: i64, _error: &str) -> Result<(), Error> {
        if let Some(o) = self.rows().outbox.iter_mut().find(|o| o.delivery.id == id) {
            o.due_ms = crate::wall_clock_ms() + backoff_ms;
            o.delivery.attempts += 1;
        }
        Ok(())
    }

    async fn pending_deliveries(&self) -> Result<u64, Error> {
        Ok(self.rows().outbox.iter().filter(|o| !o.done).count() as u64)
    }
}
