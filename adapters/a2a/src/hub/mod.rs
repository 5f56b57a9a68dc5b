//! The task hub: every change to a task goes through [`Hub::apply`], which writes the new task
//! document, its event and any push deliveries in one compare-and-set on the task's version.
//! Followers read the event log from a sequence number, so every stream on every replica sees
//! the same events in the same order. A change wakes its own task's followers (only them), and so
//! do other replicas' changes when a change feed is attached. Nothing polls per stream: one sweep
//! per process reads the version of every followed task in one statement, every 250 ms (10 s
//! with a feed, as a fallback for lost notices), and wakes the followers of those that moved.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use a2a::{
    Artifact, Message, Part, PartContent, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use futures::Stream;
use serde_json::Value;
use switchyard_contract::bells::Bells;
use switchyard_contract::{
    ArtifactKeeper, ChangeFeed, Changed, InvocationId, NewDelivery, RunCursor, TaskId, TaskRecord, TaskScope,
    TaskStateName, TaskStore, TenantId,
};
use tokio::sync::watch;

use crate::error::{A2aError, Kind};

/// How a part whose bytes went to the artifact store is written in the task row: a URL part
/// `switchyard-artifact:<att_…>`, turned back into `raw` bytes for clients.
pub const KEPT_SCHEME: &str = "switchyard-artifact:";

/// How often the sweep looks for events written by other processes.
const POLL: Duration = Duration::from_millis(250);
/// With a change feed attached: the sweep is only a fallback for lost notices.
const FALLBACK_POLL: Duration = Duration::from_secs(10);

/// What the followers of one task (by [`TaskId::bell_key`]) know of it: which task, and its
/// highest version known here. (Two ids with one key would share a slot: their followers wake
/// each other for nothing, and the sweep reads only the first one's version.)
#[derive(Debug, Clone, Default)]
struct Heard {
    id: Option<TaskId>,
    version: i64,
}

impl Heard {
    fn first(id: &TaskId, version: i64) -> impl FnOnce() -> Heard {
        let id = id.clone();
        move || Heard { id: Some(id), version }
    }
}

/// One change to a task.
#[derive(Debug, Clone)]
pub enum Change {
    /// A new status; its message (if any) joins the history.
    Status(TaskStatus),
    /// An artifact, or a chunk of one.
    Artifact { artifact: Artifact, append: bool, last_chunk: bool },
    /// A client message on an existing task.
    UserMessage(Message),
    /// Sets `metadata[key]` (gateway bookkeeping such as the upstream task's ids). Its event is
    /// a task snapshot, which followers skip.
    Annotate { key: String, value: Value },
}

#[derive(Clone)]
pub struct Hub {
    store: Arc<dyn TaskStore>,
    /// Per followed task (by [`TaskId::bell_key`]): what its followers were told.
    bells: Arc<Bells<u64, Heard>>,
    /// Set once the sweep runs.
    sweeping: Arc<std::sync::OnceLock<()>>,
    /// Set at shutdown: open streams end so connections can drain.
    closed: watch::Sender<bool>,
    /// Rung when a push delivery is queued.
    pub(crate) push_bell: Arc<tokio::sync::Notify>,
    /// Where `raw` artifact parts above `inline_max` bytes go; `None`: always inline.
    keeper: Option<Arc<dyn ArtifactKeeper>>,
    inline_max: usize,
    /// Seals webhook credentials before they are stored.
    sealer: crate::sealing::CredentialSealer,
    /// Other replicas' task changes ring the bell; this one's are announced.
    feed: Option<Arc<dyn ChangeFeed>>,
    /// What this process's A2A side did, for the operator's metrics.
    pub(crate) stats: Arc<Stats>,
}

/// Counts of this process's A2A streams and push deliveries (see [`crate::A2aAgents::stats`]).
#[derive(Debug, Default)]
pub struct Stats {
    open_streams: AtomicU64,
    push_delivered: AtomicU64,
    push_failed_attempts: AtomicU64,
    push_given_up: AtomicU64,
}

/// A snapshot of [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsNow {
    /// Streams open now (SendStreamingMessage, SubscribeToTask; every binding).
    pub open_streams: u64,
    /// Push notifications acknowledged by their webhook.
    pub push_delivered: u64,
    /// Push attempts that failed and will be tried again.
    pub push_failed_attempts: u64,
    /// Push notifications given up after their last attempt.
    pub push_given_up: u64,
}

impl Stats {
    pub fn now(&self) -> StatsNow {
        StatsNow {
            open_streams: self.open_streams.load(Relaxed),
            push_delivered: self.push_delivered.load(Relaxed),
            push_failed_attempts: self.push_failed_attempts.load(Relaxed),
            push_given_up: self.push_given_up.load(Relaxed),
        }
    }

    /// Counts a stream open until the returned guard is dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> OpenStream {
        self.open_streams.fetch_add(1, Relaxed);
        OpenStream(self.clone())
    }

    /// One push attempt's end: `Ok` delivered, `Err(true)` given up, `Err(false)` to retry.
    pub(crate) fn pushed(&self, outcome: Result<(), bool>) {
        let counter = match outcome {
            Ok(()) => &self.push_delivered,
            Err(true) => &self.push_given_up,
            Err(false) => &self.push_failed_attempts,
        };
        counter.fetch_add(1, Relaxed);
    }
}

/// An open stream, counted until dropped.
#[derive(Debug)]
pub(crate) struct OpenStream(Arc<Stats>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Relaxed);
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

pub fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The row's state for a task in `state`.
pub fn stored_state(state: &TaskState) -> TaskStateName {
    match state {
        TaskState::Unspecified => TaskStateName::Unspecified,
        TaskState::Submitted => TaskStateName::Submitted,
        TaskState::Working => TaskStateName::Working,
        TaskState::InputRequired => TaskStateName::InputRequired,
        TaskState::AuthRequired => TaskStateName::AuthRequired,
        TaskState::Completed => TaskStateName::Completed,
        TaskState::Canceled => TaskStateName::Canceled,
        TaskState::Failed => TaskStateName::Failed,
        TaskState::Rejected => TaskStateName::Rejected,
    }
}

pub fn is_interrupted(state: &TaskState) -> bool {
    matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

pub fn task_of(rec: &TaskRecord) -> Result<Task, A2aError> {
    serde_json::from_value(rec.body.clone()).map_err(|e| A2aError::internal(format!("stored task is corrupt: {e}")))
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, A2aError> {
    serde_json::to_value(v).map_err(|e| A2aError::internal(e.to_string()))
}

impl Hub {
    pub fn new(
        store: Arc<dyn TaskStore>,
        keeper: Option<Arc<dyn ArtifactKeeper>>,
        inline_max: usize,
        sealer: crate::sealing::CredentialSealer,
    ) -> Self {
        let (closed, _) = watch::channel(false);
        let push_bell = Arc::new(tokio::sync::Notify::new());
        let bells = Arc::default();
        Self {
            store,
            bells,
            sweeping: Arc::default(),
            closed,
            push_bell,
            keeper,
            inline_max,
            sealer,
            feed: None,
            stats: Arc::default(),
        }
    }

    /// The hub, waking the followers of the tasks other replicas changed, heard on `feed`, and
    /// announcing this one's there. Listens at once (so within a Tokio runtime).
    #[must_use]
    pub fn with_feed(mut self, feed: Option<Arc<dyn ChangeFeed>>) -> Self {
        let Some(feed) = feed else { return self };
        self.feed = Some(feed.clone());
        let (bells, mut closed) = (self.bells.clone(), self.closed.subscribe());
        tokio::spawn(async move {
            use futures::StreamExt as _;
            let mut heard = feed.heard();
            loop {
                tokio::select! {
                    next = heard.next() => match next {
                        Some(Changed::Task { key }) => bells.update(&key, |_| true),
                        Some(Changed::Tasks | Changed::Resync) => bells.update_all(|_| {}),
                        Some(_) => {}
                        None => return,
                    },
                    _ = closed.changed() => return,
                }
            }
        });
        self
    }

    /// How often the sweep runs.
    fn poll(&self) -> Duration {
        if self.feed.is_some() { FALLBACK_POLL } else { POLL }
    }

    /// Starts following task `id`, known here up to `version`, and the sweep if it is not
    /// running yet.
    fn follow_task(&self, id: &TaskId, version: i64) -> switchyard_contract::bells::Following<u64, Heard> {
        let following = self.bells.follow_with(id.bell_key(), Heard::first(id, version));
        self.sweeping.get_or_init(|| {
            tokio::spawn(self.clone().sweep());
        });
        following
    }

    /// Until shutdown: reads the version of every followed task (one statement per 500) and
    /// wakes the followers of those that moved.
    async fn sweep(self) {
        let mut closed = self.closed.subscribe();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.poll()) => {}
                _ = closed.changed() => {}
            }
            if *closed.borrow() {
                return;
            }
            let ids: Vec<TaskId> = self.bells.values().into_iter().filter_map(|h| h.id).collect();
            if ids.is_empty() {
                continue;
            }
            match self.store.versions(&ids).await {
                Ok(versions) => {
                    for (id, version) in versions {
                        self.bells.update(&id.bell_key(), |h| {
                            let moved = version > h.version;
                            h.version = h.version.max(version);
                            moved
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the task sweep failed; trying again"),
            }
        }
    }

    pub fn sealer(&self) -> &crate::sealing::CredentialSealer {
        &self.sealer
    }

    /// Moves `raw` parts larger than the inline limit into the artifact store, leaving a
    /// reference part (with the artifact's id, size and SHA-256 in its metadata). `run` is the
    /// invocation the artifact is filed under, `event_no` the sequence its event will get.
    async fn keep_parts(
        &self,
        scope: &TaskScope,
        id: &str,
        run: Option<InvocationId>,
        event_no: i64,
        artifact: &mut Artifact,
    ) -> Result<(), A2aError> {
        let Some(keeper) = &self.keeper else { return Ok(()) };
        let big = |p: &Part| matches!(&p.content, PartContent::Raw(b) if b.len() > self.inline_max);
        if !artifact.parts.iter().any(big) {
            return Ok(());
        }
        let invocation =
            run.ok_or_else(|| A2aError::internal(format!("task `{id}` has no run to file its artifact under")))?;
        let tenant = scope.tenant().clone();
        let name = format!("{id}/{}", artifact.artifact_id);
        // Unique per (invocation, name) and increasing: the event's sequence, then the part.
        let base = u32::try_from(event_no).unwrap_or(u32::MAX / 1024).saturating_mul(1024);
        for (i, part) in artifact.parts.iter_mut().enumerate() {
            if !big(part) {
                continue;
            }
            let PartContent::Raw(bytes) = std::mem::replace(&mut part.content, PartContent::Text(String::new())) else {
                continue;
            };
            let media = part.media_type.clone().unwrap_or_else(|| "application/octet-stream".into());
            let seq = base.saturating_add(u32::try_from(i).unwrap_or(1023));
            let meta = keeper
                .keep(&tenant, invocation, &name, &media, seq, bytes)
                .await
                .map_err(|e| A2aError::new(Kind::Unavailable, format!("artifact store: {e}")))?;
            part.content = PartContent::Url(format!("{KEPT_SCHEME}{}", meta.id));
            part.metadata.get_or_insert_with(Default::default).insert(
                "dev.switchyard/artifact".into(),
                serde_json::json!({"id": meta.id.to_string(), "size": meta.size, "sha256": meta.sha256.to_string()}),
            );
        }
        Ok(())
    }

    /// [`Hub::keep_parts`] for every artifact change of a batch whose first event is `first_no`.
    async fn keep_all(
        &self,
        scope: &TaskScope,
        id: &str,
        run: Option<InvocationId>,
        first_no: i64,
        changes: &mut [Change],
    ) -> Result<(), A2aError> {
        for (i, change) in changes.iter_mut().enumerate() {
            if let Change::Artifact { artifact, .. } = change {
                let no = first_no + i64::try_from(i).unwrap_or(0);
                self.keep_parts(scope, id, run, no, artifact).await?;
            }
        }
        Ok(())
    }

    /// Turns reference parts back into their bytes (read from the artifact store, verified;
    /// only `tenant`'s artifacts, when given). Part by part: a reference that names no artifact
    /// of the caller's stays as it is, marked, and the rest of the task is still served; only a
    /// store that cannot answer fails the read.
    pub async fn hydrate_parts(&self, tenant: Option<&TenantId>, parts: &mut [Part]) -> Result<(), A2aError> {
        for part in parts {
            let PartContent::Url(u) = &part.content else { continue };
            let Some(id) = u.strip_prefix(KEPT_SCHEME) else { continue };
            let Some(keeper) = &self.keeper else {
                return Err(A2aError::internal("a kept artifact part, but no artifact store"));
            };
            let read = match id.parse() {
                Ok(id) => keeper.read(tenant, id).await,
                Err(_) => Err(switchyard_contract::ArtifactError::NotFound),
            };
            match read {
                Ok(bytes) => part.content = PartContent::Raw(bytes),
                Err(
                    e @ (switchyard_contract::ArtifactError::Unavailable(_)
                    | switchyard_contract::ArtifactError::Internal(_)),
                ) => {
                    return Err(A2aError::new(Kind::Unavailable, format!("artifact {u}: {e}")));
                }
                Err(e) => {
                    tracing::warn!(reference = %u, error = %e, "a kept artifact part cannot be read; served as a reference");
                    part.metadata
                        .get_or_insert_with(Default::default)
                        .insert("dev.switchyard/unreadable".into(), serde_json::Value::String(e.to_string()));
                }
            }
        }
        Ok(())
    }

    /// [`Hub::hydrate_parts`] for every artifact of `task`.
    pub async fn hydrate_task(&self, tenant: Option<&TenantId>, task: &mut Task) -> Result<(), A2aError> {
        for a in task.artifacts.iter_mut().flatten() {
            self.hydrate_parts(tenant, &mut a.parts).await?;
        }
        Ok(())
    }

    /// [`Hub::hydrate_parts`] for a stream event.
    pub async fn hydrate_event(&self, tenant: Option<&TenantId>, ev: &mut StreamResponse) -> Result<(), A2aError> {
        match ev {
            StreamResponse::Task(t) => self.hydrate_task(tenant, t).await,
            StreamResponse::ArtifactUpdate(a) => self.hydrate_parts(tenant, &mut a.artifact.parts).await,
            _ => Ok(()),
        }
    }

    /// Ends every open stream (at shutdown): clients resubscribe elsewhere or after restart.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// Wakes the followers of task `id`, now at `version`, here and on the other replicas.
    fn ring(&self, id: &TaskId, version: i64) {
        let key = id.bell_key();
        self.bells.update(&key, |h| {
            h.version = h.version.max(version);
            true
        });
        if let Some(feed) = &self.feed {
            feed.announce(Changed::Task { key });
        }
    }

    /// Creates `task` — first event: the task itself — and applies `changes` in the same
    /// commit (their events follow in order). `Ok(false)` if it exists in `scope` for `agent`:
    /// nothing written. A task id held by another scope or agent is `TaskNotFound` (its
    /// existence does not leak).
    pub async fn create(
        &self,
        scope: &TaskScope,
        agent: &str,
        task: &Task,
        step: RunCursor,
        mut changes: Vec<Change>,
    ) -> Result<bool, A2aError> {
        self.keep_all(scope, &task.id, Some(step.invocation), 2, &mut changes).await?;
        let mut events = vec![to_value(&StreamResponse::Task(task.clone()))?];
        let mut body = task.clone();
        for change in &changes {
            if body.status.state.is_terminal() {
                break;
            }
            events.push(to_value(&change_task(&mut body, change))?);
        }
        let rec = new_record(scope, agent, &body, events.len(), step)?;
        let id = rec.id.clone();
        let created = self.store.create(&rec, &events).await?;
        if created {
            self.ring(&id, rec.version);
        } else if self.store.get(scope, &id).await?.is_none_or(|r| r.agent != agent) {
            return Err(A2aError::task_not_found(&task.id));
        }
        Ok(created)
    }

    /// Creates `task` as [`Hub::create`] does (no changes), only while `attempt` is its run's
    /// current attempt with a live lease (see
    /// [`TaskStore::create_fenced`](switchyard_contract::TaskStore::create_fenced)): a send's
    /// evidence, written before it goes out. `Ok(false)`: do not send.
    pub async fn create_fenced(
        &self,
        scope: &TaskScope,
        agent: &str,
        task: &Task,
        step: RunCursor,
        attempt: switchyard_contract::AttemptId,
    ) -> Result<bool, A2aError> {
        let rec = new_record(scope, agent, task, 1, step)?;
        let events = [to_value(&StreamResponse::Task(task.clone()))?];
        Ok(self.store.create_fenced(&rec, &events, step.invocation, attempt).await?)
    }

    pub async fn get(&self, scope: &TaskScope, id: &TaskId) -> Result<Option<TaskRecord>, A2aError> {
        Ok(self.store.get(scope, id).await?)
    }

    /// Applies `change` to task `id`: [`Hub::apply_all`] of one change.
    pub async fn apply(
        &self,
        scope: &TaskScope,
        id: &TaskId,
        step: Option<RunCursor>,
        change: Change,
    ) -> Result<Option<TaskRecord>, A2aError> {
        self.apply_all(scope, id, step, vec![change]).await
    }

    /// Applies `changes` to task `id` in one commit, one event each, and queues their push
    /// deliveries. With a `step`, a step the task already recorded for the same run is skipped
    /// (the whole batch). A task in a terminal state takes no more changes (`Ok(None)`); a batch
    /// stops at the change that ends the task.
    pub async fn apply_all(
        &self,
        scope: &TaskScope,
        id: &TaskId,
        step: Option<RunCursor>,
        mut changes: Vec<Change>,
    ) -> Result<Option<TaskRecord>, A2aError> {
        if changes.iter().any(|c| matches!(c, Change::Artifact { .. })) {
            let rec = self.store.get(scope, id).await?.ok_or_else(|| A2aError::task_not_found(id))?;
            let run = step.or(rec.run_cursor).map(|c| c.invocation);
            self.keep_all(scope, id, run, rec.version + 1, &mut changes).await?;
        }
        let deliverable = changes.iter().any(|c| matches!(c, Change::Status(_) | Change::Artifact { .. }));
        loop {
            let Some(rec) = self.store.get(scope, id).await? else {
                return Err(A2aError::task_not_found(id));
            };
            if let (Some(s), Some(c)) = (step, rec.run_cursor)
                && c.invocation == s.invocation
                && c.step >= s.step
            {
                return Ok(Some(rec));
            }
            let mut task = task_of(&rec)?;
            if task.status.state.is_terminal() {
                return Ok(None);
            }
            let configs = if deliverable { self.store.push_configs(id).await? } else { Vec::new() };
            let (mut events, mut deliveries, mut status_ms) = (Vec::new(), Vec::new(), rec.status_ms);
            for change in &changes {
                if task.status.state.is_terminal() {
                    break;
                }
                let event = to_value(&change_task(&mut task, change))?;
                if matches!(change, Change::Status(_)) {
                    status_ms = switchyard_contract::wall_clock_ms();
                }
                if matches!(change, Change::Status(_) | Change::Artifact { .. }) {
                    deliveries.extend(configs.iter().map(|(config_id, config)| NewDelivery {
                        config_id: config_id.clone(),
                        config: config.clone(),
                        payload: event.clone(),
                    }));
                }
                events.push(event);
            }
            let next = TaskRecord {
                state: stored_state(&task.status.state),
                status_ms,
                version: rec.version + i64::try_from(events.len()).unwrap_or(0),
                run_cursor: step.or(rec.run_cursor),
                body: to_value(&task)?,
                ..rec.clone()
            };
            if self.store.update(&next, rec.version, &events, &deliveries).await? {
                self.ring(id, next.version);
                if !deliveries.is_empty() {
                    self.push_bell.notify_one();
                }
                return Ok(Some(next));
            }
        }
    }

    /// The stream events of task `id` after sequence `after`, ending after a terminal status
    /// (or an interrupted one when `stop_on_interrupt`). Message events (history only) and task
    /// snapshots (creation, bookkeeping) are not stream events and are skipped. Kept artifact
    /// parts are references here: the face puts their bytes back.
    pub fn follow(
        &self,
        id: TaskId,
        after: i64,
        stop_on_interrupt: bool,
    ) -> impl Stream<Item = Result<StreamResponse, A2aError>> + Send + 'static {
        let hub = self.clone();
        let mut bell = self.follow_task(&id, after);
        let mut closed = self.closed.subscribe();
        async_stream(move |tx| async move {
            let mut seq = after;
            loop {
                if *closed.borrow_and_update() {
                    return;
                }
                let events = match hub.store.events_after(&id, seq, 100).await {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = tx.send(Err(e.into())).await;
                        return;
                    }
                };
                let idle = events.is_empty();
                for (n, raw) in events {
                    seq = n;
                    let event: StreamResponse = match serde_json::from_value(raw) {
                        Ok(e) => e,
                        Err(e) => {
                            let _ = tx.send(Err(A2aError::internal(format!("stored event is corrupt: {e}")))).await;
                            return;
                        }
                    };
                    let end = match &event {
                        StreamResponse::StatusUpdate(s) => {
                            s.status.state.is_terminal() || stop_on_interrupt && is_interrupted(&s.status.state)
                        }
                        StreamResponse::ArtifactUpdate(_) => false,
                        StreamResponse::Task(_) | StreamResponse::Message(_) => continue,
                    };
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                    if end {
                        return;
                    }
                }
                if idle {
                    tokio::select! {
                        _ = bell.changed() => {}
                        _ = closed.changed() => {}
                    }
                }
            }
        })
    }

    /// Waits until task `id` exists (or `limit` passes).
    pub async fn wait_for(
        &self,
        scope: &TaskScope,
        id: &TaskId,
        limit: Duration,
    ) -> Result<Option<TaskRecord>, A2aError> {
        let mut bell = self.follow_task(id, 0);
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(rec) = self.store.get(scope, id).await? {
                return Ok(Some(rec));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let _ = tokio::time::timeout(left, bell.changed()).await;
        }
    }
}

/// Applies `change` to `task` in memory and returns its stream event.
fn change_task(task: &mut Task, change: &Change) -> StreamResponse {
    match change {
        Change::Status(status) => {
            let mut status = status.clone();
            status.timestamp = Some(chrono::Utc::now());
            if let Some(m) = &status.message {
                task.history.get_or_insert_with(Vec::new).push(m.clone());
            }
            task.status = status.clone();
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status,
                metadata: None,
            })
        }
        Change::Artifact { artifact, append, last_chunk } => {
            let list = task.artifacts.get_or_insert_with(Vec::new);
            match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
                Some(existing) if *append => existing.parts.extend(artifact.parts.iter().cloned()),
                Some(existing) => *existing = artifact.clone(),
                None => list.push(artifact.clone()),
            }
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact: artifact.clone(),
                append: Some(*append),
                last_chunk: Some(*last_chunk),
                metadata: None,
            })
        }
        Change::UserMessage(m) => {
            task.history.get_or_insert_with(Vec::new).push(m.clone());
            StreamResponse::Message(m.clone())
        }
        Change::Annotate { key, value } => {
            task.metadata.get_or_insert_with(Default::default).insert(key.clone(), value.clone());
            StreamResponse::Task(task.clone())
        }
    }
}

/// A stream fed by a task writing into a bounded channel; dropping the stream stops the task
/// at its next send.
pub fn async_stream<T, F, Fut>(body: F) -> impl Stream<Item = T> + Send + 'static
where
    T: Send + 'static,
    F: FnOnce(tokio::sync::mpsc::Sender<T>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(body(tx));
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// `task` with at most the `n` newest history messages (`0`: none); `None` keeps all.
pub fn slice_history(mut task: Task, n: Option<i32>) -> Task {
    if let Some(n) = n {
        let n = usize::try_from(n.max(0)).unwrap_or(0);
        if n == 0 {
            task.history = None;
        } else if let Some(h) = task.history.as_mut()
            && h.len() > n
        {
            h.drain(..h.len() - n);
        }
    }
    task
}

/// A terminal task takes no new messages.
pub fn ensure_open(task: &Task) -> Result<(), A2aError> {
    if task.status.state.is_terminal() {
        return Err(A2aError::new(
            Kind::UnsupportedOperation,
            format!("task `{}` is {} and takes no more messages", task.id, state_name(&task.status.state)),
        ));
    }
    Ok(())
}

/// The stored record of a new task whose body is now `body`, after `events` events.
fn new_record(
    scope: &TaskScope,
    agent: &str,
    body: &Task,
    events: usize,
    step: RunCursor,
) -> Result<TaskRecord, A2aError> {
    Ok(TaskRecord {
        id: TaskId::from(body.id.as_str()),
        scope: scope.clone(),
        agent: agent.to_string(),
        context_id: body.context_id.as_str().into(),
        state: stored_state(&body.status.state),
        status_ms: switchyard_contract::wall_clock_ms(),
        version: i64::try_from(events).unwrap_or(i64::MAX),
        run_cursor: Some(step),
        body: to_value(body)?,
    })
}

#[cfg(test)]
mod tests;
