//! Test support shared by the crate's unit tests.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use switchyard_contract::memory::MemoryTasks;
use switchyard_contract::{Error, NewDelivery, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStore};

/// The memory task store, counting each task's event reads and every commit (create, update).
#[derive(Default)]
pub(crate) struct Counting {
    inner: MemoryTasks,
    reads: Mutex<HashMap<String, usize>>,
    commits: AtomicUsize,
}

impl Counting {
    pub(crate) fn reads(&self, id: &str) -> usize {
        self.reads.lock().map(|r| r.get(id).copied().unwrap_or(0)).unwrap_or(0)
    }

    pub(crate) fn commits(&self) -> usize {
        self.commits.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl TaskStore for Counting {
    async fn create(&self, task: &TaskRecord, events: &[Value]) -> Result<bool, Error> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.create(task, events).await
    }
    async fn create_fenced(
        &self,
        task: &TaskRecord,
        events: &[Value],
        run: switchyard_contract::InvocationId,
        attempt: switchyard_contract::AttemptId,
    ) -> Result<bool, Error> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.create_fenced(task, events, run, attempt).await
    }
    async fn get(&self, scope: &TaskScope, id: &TaskId) -> Result<Option<TaskRecord>, Error> {
        self.inner.get(scope, id).await
    }
    async fn update(&self, t: &TaskRecord, v: i64, e: &[Value], d: &[NewDelivery]) -> Result<bool, Error> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.inner.update(t, v, e, d).await
    }
    async fn versions(&self, ids: &[TaskId]) -> Result<Vec<(TaskId, i64)>, Error> {
        self.inner.versions(ids).await
    }
    async fn events_after(&self, id: &TaskId, after: i64, limit: u32) -> Result<Vec<(i64, Value)>, Error> {
        if let Ok(mut reads) = self.reads.lock() {
            *reads.entry(id.to_string()).or_default() += 1;
        }
        self.inner.events_after(id, after, limit).await
    }
    async fn list(&self, query: &TaskQuery) -> Result<(Vec<TaskRecord>, i64), Error> {
        self.inner.list(query).await
    }
    async fn put_push_config(&self, task_id: &TaskId, id: &str, config: &Value) -> Result<(), Error> {
        self.inner.put_push_config(task_id, id, config).await
    }
    async fn push_configs(&self, task_id: &TaskId) -> Result<Vec<(String, Value)>, Error> {
        self.inner.push_configs(task_id).await
    }
    async fn delete_push_config(&self, task_id: &TaskId, id: &str) -> Result<bool, Error> {
        self.inner.delete_push_config(task_id, id).await
    }
}
