//! Upstream (internal) agents exposed through the gateway. Each message is one `write`
//! invocation, recorded before anything is sent. A first message also leaves a *sent marker*
//! (a row no caller can read: its agent is `sent:<agent>`) before it is sent; the gateway's task
//! is created only when the agent answers with a task, so an agent that answers with a message
//! is seen doing exactly that. The upstream's events are mirrored into the gateway's task under
//! the gateway's own ids, and the upstream's ids are kept in the task's metadata
//! (`dev.switchyard/upstream`).
//!
//! If the gateway dies mid-call, the engine records the send as `unknown` and never resends it.
//! The engine's recovery claims each `unknown` send (a durable claim on the invocation, so one
//! replica at a time works on it, and the next try waits out the claim) and asks the agent's
//! upstream ([`Upstream::resolve`](switchyard_contract::Upstream::resolve)), which decides from
//! evidence:
//! - no sent marker for a first message: the marker is written before anything is sent, so
//!   nothing was sent — `not applied`, and a resend runs again;
//! - the gateway task already ended (or a new task is waiting for input): the agent's answer was
//!   mirrored before the crash — `applied`, with the task;
//! - otherwise the agent is asked: with its task id known, resubscribe (or read the task);
//!   without it, look the message up by `messageId` in the agent's task list. Found: `applied`
//!   once the task ends. Not found proves nothing (the agent may list partially, or drop
//!   history): the outcome stays `unknown` for an operator.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Artifact, Message, PartContent, SendMessageRequest, StreamResponse, Task, TaskState, TaskStatus};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use switchyard_contract::{Decision, FailureCode, InvocationId, RunCursor, TaskId, TaskScope, UpstreamError};
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::client::{A2aClient, ClientError};
use crate::error::{A2aError, Kind};
use crate::hub::{Change, Hub, KEPT_SCHEME, is_interrupted, task_of};
use crate::run::{RunRequest, status_saying};

/// How long an agent's event waits for the next one before it is mirrored: events this close
/// together share one commit (an agent's last progress and its answer usually are), and a
/// subscriber sees an event at most this much later than it arrived.
const LINGER: Duration = Duration::from_millis(2);

/// Where the upstream's ids live in the gateway task's metadata.
pub const UPSTREAM_KEY: &str = "dev.switchyard/upstream";

/// One upstream agent, discovered lazily from its card (retried until it answers).
#[derive(Debug)]
pub struct Proxy {
    card_url: String,
    /// Hosts the card's interfaces may name besides its own.
    interface_hosts: Vec<String>,
    timeout: Duration,
    client: AsyncMutex<Option<A2aClient>>,
    /// Runs whose cancellation the agent confirmed: only those may end `canceled`.
    confirmed: Mutex<HashSet<InvocationId>>,
    /// [`LINGER`] (tests: longer).
    linger: Duration,
}

/// Where one run's upstream events go: the gateway task of `req` (created by the first event
/// that shows the agent answered with a task, when the run is a first message).
struct Mirror<'a> {
    req: &'a RunRequest,
    cursor: RunCursor,
    /// The gateway task exists.
    created: std::sync::atomic::AtomicBool,
}

impl<'a> Mirror<'a> {
    fn new(req: &'a RunRequest, run: InvocationId, created: bool) -> Self {
        Self { req, cursor: RunCursor { invocation: run, step: 0 }, created: created.into() }
    }

    fn created(&self) -> bool {
        self.created.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The id and agent of run `run`'s sent marker for a first message: neither can name a task of a
/// caller (agent names are `[A-Za-z0-9_-]`). One per run: a resend of the message (a run of its
/// own) takes a marker of its own.
fn sent_marker(req: &RunRequest, run: InvocationId) -> (TaskId, String) {
    (TaskId::from(format!("{}.sent.{run}", req.task_id)), format!("sent:{}", req.agent))
}

/// The marker gateways before per-run markers wrote (one per task), still read as evidence.
fn legacy_marker(req: &RunRequest) -> TaskId {
    TaskId::from(format!("{}.sent", req.task_id))
}

/// How mirroring one upstream event ended.
enum Flow {
    More,
    /// Terminal or interrupted: the run is over.
    Done,
    /// The agent answered with a message instead of a task.
    Message(Message),
}

/// The change a status or artifact update makes to the run's gateway task, added to `changes`;
/// whether the run goes on. (Snapshots and messages: [`Proxy::snapshot`], [`Proxy::mirror`].)
fn update(to: &Mirror<'_>, ev: StreamResponse, changes: &mut Vec<Change>) -> Flow {
    let (id, ctx) = (&to.req.task_id, to.req.context_id.as_str());
    match ev {
        StreamResponse::StatusUpdate(s) => {
            let mut status = s.status;
            status.message = status.message.map(|m| local(m, id, ctx));
            let done = status.state.is_terminal() || is_interrupted(&status.state);
            changes.push(Change::Status(status));
            if done { Flow::Done } else { Flow::More }
        }
        StreamResponse::ArtifactUpdate(a) => {
            changes.push(Change::Artifact {
                artifact: foreign(a.artifact),
                append: a.append.unwrap_or(false),
                last_chunk: a.last_chunk.unwrap_or(false),
            });
            Flow::More
        }
        StreamResponse::Task(_) | StreamResponse::Message(_) => Flow::More,
    }
}

fn lost(e: ClientError, sent: bool) -> UpstreamError {
    match e {
        ClientError::NotSent(m) if !sent => UpstreamError::Unavailable { message: m },
        ClientError::NotSent(m) | ClientError::Lost(m) => UpstreamError::Lost { message: m },
        ClientError::Remote { reason, message, details } => {
            UpstreamError::Rejected { code: FailureCode::parse(&reason), message, details: Some(details) }
        }
    }
}

/// A task-store failure before anything was sent: nothing reached the agent.
fn hub_err(e: A2aError) -> UpstreamError {
    UpstreamError::Unavailable { message: format!("task store: {}", e.message) }
}

/// Any failure once the message may have reached the agent is a lost outcome: the agent may
/// have acted on it, whatever the gateway could or could not record afterwards.
fn after_send(e: A2aError) -> UpstreamError {
    UpstreamError::Lost { message: format!("the message may have reached the agent; then: {}", e.message) }
}

/// The upstream ids recorded on a gateway task.
fn upstream_ids(task: &Task) -> Option<(String, String)> {
    let v = task.metadata.as_ref()?.get(UPSTREAM_KEY)?;
    Some((v.get("taskId")?.as_str()?.to_string(), v.get("contextId")?.as_str()?.to_string()))
}

/// An agent's artifact, made safe to store: a part claiming to be a reference into the
/// gateway's artifact store (which only the gateway may write) becomes plain text.
fn foreign(mut a: Artifact) -> Artifact {
    for p in &mut a.parts {
        if let PartContent::Url(u) = &p.content
            && u.starts_with(KEPT_SCHEME)
        {
            p.content = PartContent::Text(u.clone());
        }
    }
    a
}

/// Whether our stored copy `mine` already holds the agent's artifact `theirs` (large parts are
/// kept in the artifact store: they match by size and SHA-256).
fn holds(mine: &Artifact, theirs: &Artifact) -> bool {
    use sha2::Digest as _;
    mine.artifact_id == theirs.artifact_id
        && mine.parts.len() == theirs.parts.len()
        && mine.parts.iter().zip(&theirs.parts).all(|(m, t)| match (&m.content, &t.content) {
            (PartContent::Url(u), PartContent::Raw(bytes)) if u.starts_with(KEPT_SCHEME) => {
                let kept = m.metadata.as_ref().and_then(|md| md.get("dev.switchyard/artifact"));
                let sha = format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)));
                kept.and_then(|k| k.get("sha256")).and_then(Value::as_str) == Some(sha.as_str())
            }
            _ => m == t,
        })
}

/// `m` with the gateway's ids in place of the upstream's.
fn local(mut m: Message, task: &str, ctx: &str) -> Message {
    m.task_id = Some(task.to_string());
    m.context_id = Some(ctx.to_string());
    m
}

impl Proxy {
    /// The agent whose card is at `card_url`, whose interfaces may be on its host or one of
    /// `interface_hosts`.
    pub fn new(card_url: String, timeout: Duration, interface_hosts: Vec<String>) -> Arc<Self> {
        let confirmed = Mutex::new(HashSet::new());
        Arc::new(Self { card_url, interface_hosts, timeout, client: AsyncMutex::new(None), confirmed, linger: LINGER })
    }

    /// Reads the agent's card if it was not read yet, waiting at most `wait` (the read goes on
    /// after the wait gives up, so a slow agent's card is there next time).
    pub async fn discover_within(self: &Arc<Self>, wait: Duration) {
        if self.discovered().is_some() {
            return;
        }
        let me = self.clone();
        let read = tokio::spawn(async move { me.client().await.map(|_| ()) });
        let _ = tokio::time::timeout(wait, read).await;
    }

    /// The agent as last discovered, if it was (never waits).
    pub fn discovered(&self) -> Option<A2aClient> {
        self.client.try_lock().ok().and_then(|slot| slot.clone())
    }

    pub(crate) async fn client(&self) -> Result<A2aClient, ClientError> {
        let mut slot = self.client.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = A2aClient::discover(&self.card_url, &self.interface_hosts, self.timeout).await?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Mirrors one upstream event into the run's gateway task.
    async fn mirror(&self, hub: &Hub, to: &Mirror<'_>, ev: StreamResponse) -> Result<Flow, A2aError> {
        let (id, ctx) = (&to.req.task_id, to.req.context_id.as_str());
        match ev {
            StreamResponse::Task(t) => {
                // The agent's snapshot: record its ids, then whatever differs from ours, in one
                // commit.
                let mut changes = Vec::new();
                let flow = self.snapshot(hub, to, t, &mut changes).await?;
                self.commit(hub, to, changes).await?;
                Ok(flow)
            }
            StreamResponse::StatusUpdate(_) | StreamResponse::ArtifactUpdate(_) => {
                let mut changes = Vec::new();
                let flow = update(to, ev, &mut changes);
                self.commit(hub, to, changes).await?;
                Ok(flow)
            }
            StreamResponse::Message(mut m) if !to.created() => {
                // A message instead of a task: it belongs to no task of the gateway's.
                m.task_id = None;
                m.context_id = Some(ctx.to_string());
                Ok(Flow::Message(m))
            }
            StreamResponse::Message(m) => Ok(Flow::Message(local(m, id, ctx))),
        }
    }

    /// The changes the agent's task snapshot `t` makes to the run's gateway task as stored
    /// (its upstream ids, then whatever differs from ours), added to `changes`; whether the
    /// run goes on.
    async fn snapshot(&self, hub: &Hub, to: &Mirror<'_>, t: Task, changes: &mut Vec<Change>) -> Result<Flow, A2aError> {
        let (scope, id, ctx) = (&to.req.scope, &to.req.task_id, to.req.context_id.as_str());
        let mine = match hub.get(scope, id).await? {
            Some(rec) => task_of(&rec)?,
            None if !to.created() => crate::run::submitted(to.req),
            None => return Err(A2aError::task_not_found(id)),
        };
        if upstream_ids(&mine).is_none() {
            let value = json!({"taskId": t.id, "contextId": t.context_id});
            changes.push(Change::Annotate { key: UPSTREAM_KEY.into(), value });
        }
        for a in t.artifacts.unwrap_or_default().into_iter().map(foreign) {
            if !mine.artifacts.as_ref().is_some_and(|list| list.iter().any(|m| holds(m, &a))) {
                changes.push(Change::Artifact { artifact: a, append: false, last_chunk: true });
            }
        }
        let ends = t.status.state.is_terminal() || is_interrupted(&t.status.state);
        if t.status.state != mine.status.state && t.status.state != TaskState::Submitted {
            let mut status = t.status;
            status.message = status.message.map(|m| local(m, id, ctx));
            changes.push(Change::Status(status));
        }
        Ok(if ends { Flow::Done } else { Flow::More })
    }

    /// Mirrors the agent's stream of events into the run's gateway task until the run is over
    /// (or the stream ends); `opening`: a follow-up's stream, whose first event may be the task
    /// as it was.
    async fn follow(
        &self,
        hub: &Hub,
        to: &Mirror<'_>,
        mut events: BoxStream<'static, Result<StreamResponse, ClientError>>,
        mut opening: bool,
        cancel: &CancellationToken,
    ) -> Result<Flow, UpstreamError> {
        let mut flow = Flow::More;
        // A follow-up's stream may open with the task as it was (still waiting for input,
        // as the JS SDK sends every turn): that is not the agent's answer, unless nothing
        // follows it.
        let mut held: Option<StreamResponse> = None;
        // What the agent sent within [`LINGER`] of a snapshot or an update shares one commit
        // with it: the gathered changes commit before a longer wait, before a snapshot or a
        // message, and before an error is answered.
        let mut gathered: Vec<Change> = Vec::new();
        // When the gathered changes began to wait for company.
        let mut since: Option<tokio::time::Instant> = None;
        loop {
            let next = match events.next().now_or_never() {
                Some(next) => next,
                None => match self.linger(&mut events, &gathered, &mut since, cancel).await {
                    Some(next) => next,
                    None => {
                        self.commit_gathered(hub, to, &mut gathered).await.map_err(after_send)?;
                        tokio::select! {
                            ev = events.next() => ev,
                            () = cancel.cancelled() => return Err(UpstreamError::Canceled),
                        }
                    }
                },
            };
            let Some(ev) = next else { break };
            let ev = match ev {
                Ok(ev) => ev,
                Err(e) => {
                    self.commit_gathered(hub, to, &mut gathered).await.map_err(after_send)?;
                    return Err(lost(e, true));
                }
            };
            if std::mem::take(&mut opening) && matches!(&ev, StreamResponse::Task(t) if is_interrupted(&t.status.state))
            {
                held = Some(ev);
                continue;
            }
            held = None;
            flow = match ev {
                StreamResponse::StatusUpdate(_) | StreamResponse::ArtifactUpdate(_) => update(to, ev, &mut gathered),
                // A snapshot is compared with the task as stored: what was gathered before
                // it commits first.
                StreamResponse::Task(t) => {
                    self.commit_gathered(hub, to, &mut gathered).await.map_err(after_send)?;
                    self.snapshot(hub, to, t, &mut gathered).await.map_err(after_send)?
                }
                message @ StreamResponse::Message(_) => {
                    self.commit_gathered(hub, to, &mut gathered).await.map_err(after_send)?;
                    self.mirror(hub, to, message).await.map_err(after_send)?
                }
            };
            if !matches!(flow, Flow::More) {
                break;
            }
        }
        self.commit_gathered(hub, to, &mut gathered).await.map_err(after_send)?;
        Ok(match held {
            Some(ev) => self.mirror(hub, to, ev).await.map_err(after_send)?,
            None => flow,
        })
    }

    /// The agent's next event, if it arrives within the linger of the `gathered` changes
    /// (`since`: when they began to wait); `None` when nothing is gathered, once the linger
    /// passed, or when the run is canceled (the gathered changes then commit first).
    async fn linger(
        &self,
        events: &mut BoxStream<'static, Result<StreamResponse, ClientError>>,
        gathered: &[Change],
        since: &mut Option<tokio::time::Instant>,
        cancel: &CancellationToken,
    ) -> Option<Option<Result<StreamResponse, ClientError>>> {
        if gathered.is_empty() {
            *since = None;
            return None;
        }
        let until = *since.get_or_insert_with(tokio::time::Instant::now) + self.linger;
        tokio::select! {
            ev = events.next() => Some(ev),
            () = tokio::time::sleep_until(until) => None,
            () = cancel.cancelled() => None,
        }
    }

    /// Commits the updates gathered so far, if any.
    async fn commit_gathered(&self, hub: &Hub, to: &Mirror<'_>, gathered: &mut Vec<Change>) -> Result<(), A2aError> {
        if gathered.is_empty() {
            return Ok(());
        }
        self.commit(hub, to, std::mem::take(gathered)).await
    }

    /// Writes `changes` to the run's gateway task, creating it (with the request's push config)
    /// if this is the first sign that the agent answered with a task.
    async fn commit(&self, hub: &Hub, to: &Mirror<'_>, changes: Vec<Change>) -> Result<(), A2aError> {
        let (scope, id) = (&to.req.scope, &to.req.task_id);
        if !to.created() {
            let task = crate::run::submitted(to.req);
            let created = hub.create(scope, &to.req.agent, &task, to.cursor, changes.clone()).await?;
            if let Some(push) = &to.req.push {
                crate::push::store_config(hub, id, push.clone()).await?;
            }
            to.created.store(true, std::sync::atomic::Ordering::Release);
            if created {
                return Ok(());
            }
        }
        if !changes.is_empty() {
            hub.apply_all(scope, id, None, changes).await?;
        }
        Ok(())
    }

    /// Runs one message through the upstream agent (the engine's dispatch).
    pub async fn run(
        &self,
        hub: &Hub,
        req: &RunRequest,
        (run, attempt): (InvocationId, switchyard_contract::AttemptId),
        cancel: &CancellationToken,
    ) -> Result<Value, UpstreamError> {
        let out = self.forward(hub, req, (run, attempt), cancel).await;
        // A refusal of a new task's first message (or an agent that could not be reached) ends
        // the task; a refused follow-up leaves the task as the agent has it, and a lost answer
        // is resumed by the supervisor from the agent's own record.
        if let Err(e @ (UpstreamError::Rejected { .. } | UpstreamError::Unavailable { .. })) = &out
            && req.new_task
        {
            let failed = status_saying(TaskState::Failed, &e.to_string(), &req.context_id, &req.task_id);
            match hub.apply(&req.scope, &req.task_id, None, failed).await {
                Err(err) if err.kind != Kind::TaskNotFound => {
                    warn!(task.id = %req.task_id, error = %err, "cannot mark the task failed");
                }
                _ => {}
            }
        }
        out
    }

    async fn forward(
        &self,
        hub: &Hub,
        req: &RunRequest,
        (run, attempt): (InvocationId, switchyard_contract::AttemptId),
        cancel: &CancellationToken,
    ) -> Result<Value, UpstreamError> {
        let client = self.client().await.map_err(|e| lost(e, false))?;
        let (scope, id, ctx) = (&req.scope, &req.task_id, req.context_id.as_str());
        let to = Mirror::new(req, run, !req.new_task);
        let mut upstream_msg = req.message.clone();
        if req.new_task {
            // Evidence that this message may have been sent, written before it is — and the
            // fenced mutex of the send: written only while this attempt is the run's current
            // one with a live lease. Not written (a replica paused past its lease, whose call
            // another one took over): nothing is sent.
            let (marker, agent) = sent_marker(req, run);
            let mut task = crate::run::submitted(req);
            task.id = marker.to_string();
            if !hub.create_fenced(scope, &agent, &task, to.cursor, attempt).await.map_err(hub_err)? {
                warn!(invocation.id = %run, "this attempt was taken over before it sent the message: nothing sent");
                // Not `Unavailable`: that would end the task, which the run that took over owns.
                return Err(UpstreamError::Lost {
                    message: "this attempt's lease ran out and the call was taken over before anything was sent".into(),
                });
            }
            upstream_msg.task_id = None;
            upstream_msg.context_id = Some(ctx.to_string());
        } else {
            let rec =
                hub.get(scope, id).await.map_err(hub_err)?.ok_or_else(|| hub_err(A2aError::task_not_found(id)))?;
            let (up_task, up_ctx) =
                upstream_ids(&task_of(&rec).map_err(hub_err)?).ok_or_else(|| UpstreamError::Rejected {
                    code: FailureCode::Upstream("UPSTREAM_TASK_UNKNOWN".into()),
                    message: "the upstream task of this task is not known (it was never started upstream)".into(),
                    details: None,
                })?;
            let step = Some(RunCursor { invocation: run, step: 0 });
            hub.apply(scope, id, step, Change::UserMessage(local(req.message.clone(), id, ctx)))
                .await
                .map_err(hub_err)?;
            upstream_msg.task_id = Some(up_task);
            upstream_msg.context_id = Some(up_ctx);
        }
        // The request's metadata and accepted output modes go on; push and blocking are the
        // gateway's own (it streams or waits, and delivers push itself).
        let configuration = req.accepted_output_modes.clone().map(|modes| a2a::SendMessageConfiguration {
            accepted_output_modes: Some(modes),
            task_push_notification_config: None,
            history_length: None,
            return_immediately: None,
        });
        let send =
            SendMessageRequest { message: upstream_msg, configuration, metadata: req.metadata.clone(), tenant: None };
        let outcome = if client.streaming {
            let events = client.stream(&send).await.map_err(|e| lost(e, false))?;
            self.follow(hub, &to, events, !req.new_task, cancel).await?
        } else {
            let answer = match client.send(&send).await.map_err(|e| lost(e, true))? {
                a2a::SendMessageResponse::Task(t) => StreamResponse::Task(t),
                a2a::SendMessageResponse::Message(m) => StreamResponse::Message(m),
            };
            self.mirror(hub, &to, answer).await.map_err(after_send)?
        };
        match outcome {
            Flow::Message(m) => {
                // A task answered with a message: it is the task's last word.
                if to.created() {
                    let status = TaskStatus { state: TaskState::Completed, message: Some(m.clone()), timestamp: None };
                    hub.apply(scope, id, None, Change::Status(status)).await.map_err(after_send)?;
                }
                Ok(json!({ "message": m }))
            }
            Flow::Done => {
                let rec = hub.get(scope, id).await.map_err(after_send)?;
                Ok(json!({ "task": rec.map(|r| r.body).unwrap_or(Value::Null) }))
            }
            Flow::More => {
                Err(UpstreamError::Lost { message: "the upstream agent's answer ended before its task did".into() })
            }
        }
    }

    /// Asks the agent to cancel the upstream task behind gateway task `id`. `Ok(true)`: the
    /// agent canceled it, and the run `run` may end `canceled`; `Ok(false)`: the agent has not
    /// acknowledged the task yet, so there is nothing it could confirm.
    pub async fn cancel_upstream(
        &self,
        hub: &Hub,
        scope: &TaskScope,
        id: &TaskId,
        run: Option<InvocationId>,
    ) -> Result<bool, A2aError> {
        let Some(rec) = hub.get(scope, id).await? else { return Ok(false) };
        let Some((up_task, _)) = upstream_ids(&task_of(&rec)?) else { return Ok(false) };
        let client = self.client().await.map_err(|e| A2aError::new(Kind::Unavailable, e.to_string()))?;
        match client.cancel_task(&up_task).await {
            Ok(_) => {
                if let (Some(run), Ok(mut c)) = (run, self.confirmed.lock()) {
                    c.insert(run);
                }
                Ok(true)
            }
            Err(ClientError::Remote { reason, message, .. }) if reason == "TASK_NOT_CANCELABLE" => {
                Err(A2aError::new(Kind::TaskNotCancelable, format!("the upstream agent refused: {message}")))
            }
            Err(e) => Err(A2aError::new(Kind::Unavailable, e.to_string())),
        }
    }

    /// Whether the agent confirmed the cancellation of `run` (and forgets it).
    pub fn take_confirmed(&self, run: InvocationId) -> bool {
        self.confirmed.lock().is_ok_and(|mut c| c.remove(&run))
    }

    /// Resumes the lost run `to` (`rec`: its gateway task, if the agent answered with one
    /// before the gateway stopped); returns the decision for its invocation, or `None` when the
    /// upstream cannot tell (the invocation stays `unknown`).
    async fn resume(
        &self,
        hub: &Hub,
        to: &Mirror<'_>,
        rec: Option<&switchyard_contract::TaskRecord>,
    ) -> Option<Decision> {
        let client = self.client().await.ok()?;
        let (scope, id, ctx) = (&to.req.scope, &to.req.task_id, to.req.context_id.as_str());
        let message_id = to.req.message.message_id.as_str();
        let known = match rec {
            Some(rec) => upstream_ids(&task_of(rec).ok()?).map(|(t, _)| t),
            None => None,
        };
        let up_task = match known {
            Some(t) => t,
            None => {
                // Never acknowledged: find the message upstream, by its id, in our context
                // (every page, whole histories). Any doubt leaves the outcome unknown.
                let mut found = None;
                let mut token = String::new();
                for _ in 0..50 {
                    match client.list_tasks(ctx, &token).await {
                        Ok(page) => {
                            found = page.tasks.into_iter().find(|t| {
                                t.history.as_ref().is_some_and(|h| h.iter().any(|m| m.message_id == message_id))
                            });
                            token = page.next_page_token;
                        }
                        Err(e) => {
                            warn!(task.id = %id, error = %e, "cannot look the message up upstream; the outcome stays unknown");
                            return None;
                        }
                    }
                    if found.is_some() || token.is_empty() {
                        break;
                    }
                }
                if found.is_none() && !token.is_empty() {
                    warn!(task.id = %id, "too many upstream tasks to be sure; the outcome stays unknown");
                    return None;
                }
                let Some(t) = found else {
                    // Not listed is no proof of not received: the outcome stays unknown.
                    warn!(
                        task.id = %id,
                        message.id = message_id,
                        "the agent does not list this message; the outcome stays unknown for an operator"
                    );
                    return None;
                };
                let value = json!({"taskId": t.id, "contextId": t.context_id});
                self.commit(hub, to, vec![Change::Annotate { key: UPSTREAM_KEY.into(), value }]).await.ok()?;
                t.id
            }
        };
        let mut flow = Flow::More;
        match client.subscribe(&up_task).await {
            Ok(mut events) => {
                while let Some(Ok(ev)) = events.next().await {
                    flow = self.mirror(hub, to, ev).await.ok()?;
                    if !matches!(flow, Flow::More) {
                        break;
                    }
                }
            }
            Err(e) => info!(task.id = %id, error = %e, "cannot resubscribe upstream; reading the task instead"),
        }
        if matches!(flow, Flow::More) {
            // Poll until the upstream task ends.
            loop {
                let t = client.get_task(&up_task).await.ok()?;
                flow = self.mirror(hub, to, StreamResponse::Task(t)).await.ok()?;
                if !matches!(flow, Flow::More) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        let body = hub.get(scope, id).await.ok()??.body;
        Some(Decision::Applied { result: json!({ "task": body }) })
    }
}

impl Proxy {
    /// The decision for the lost send `run` of `req`, or `None` while the evidence does not tell.
    pub(crate) async fn decide(&self, hub: &Hub, req: &RunRequest, run: InvocationId) -> Option<Decision> {
        let rec = hub.get(&req.scope, &req.task_id).await.ok()?.filter(|r| r.agent == req.agent);
        let Some(rec) = rec else {
            if !req.new_task {
                return None;
            }
            // The gateway writes a first message's sent marker before it sends anything.
            let (marker, agent) = sent_marker(req, run);
            let marked = |m: Option<switchyard_contract::TaskRecord>| m.is_some_and(|m| m.agent == agent);
            let sent = marked(hub.get(&req.scope, &marker).await.ok()?)
                || marked(hub.get(&req.scope, &legacy_marker(req)).await.ok()?);
            if !sent {
                return Some(Decision::NotApplied {
                    message: "the gateway stopped before it sent the message; send the message again".into(),
                });
            }
            return self.resume(hub, &Mirror::new(req, run, false), None).await;
        };
        let task = task_of(&rec).ok()?;
        let state = &task.status.state;
        // A task that ended, or a new task the agent put into an interrupted state, shows the
        // agent's answer: it was mirrored before the outcome could be committed.
        if state.is_terminal() || (req.new_task && is_interrupted(state)) {
            return Some(Decision::Applied { result: json!({ "task": rec.body }) });
        }
        self.resume(hub, &Mirror::new(req, run, true), Some(&rec)).await
    }
}

#[cfg(test)]
mod tests {
    use a2a::{Part, TaskStatusUpdateEvent};
    use switchyard_contract::{ContextId, Principal, TenantId};

    use super::*;
    use crate::testing::Counting;

    fn request(task: &str) -> RunRequest {
        let tenant = TenantId::new("acme").unwrap();
        RunRequest {
            scope: TaskScope::of(&Principal::new(tenant, "alice"), "internal"),
            agent: "internal".into(),
            task_id: TaskId::from(task.to_string()),
            context_id: ContextId::from("ctx".to_string()),
            new_task: true,
            message: crate::run::agent_message(vec![Part::text("hi")], "ctx", None),
            push: None,
            metadata: None,
            accepted_output_modes: None,
            arguments: None,
        }
    }

    /// What an agent streams for a task it completes at once: its snapshot, then two updates.
    fn answered(upstream: &str) -> Vec<StreamResponse> {
        let status = |state| TaskStatus { state, message: None, timestamp: None };
        let update = |state| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: upstream.into(),
                context_id: "up-ctx".into(),
                status: status(state),
                metadata: None,
            })
        };
        vec![
            StreamResponse::Task(Task {
                id: upstream.into(),
                context_id: "up-ctx".into(),
                status: status(TaskState::Submitted),
                artifacts: None,
                history: None,
                metadata: None,
            }),
            update(TaskState::Working),
            update(TaskState::Completed),
        ]
    }

    /// Events the agent had already sent when the first was read, or sent within [`LINGER`] of
    /// it, are mirrored in one commit; events that arrive apart commit apart (each before the
    /// gateway waits longer for the next, so a subscriber sees it then). Either way the gateway
    /// task ends as the agent's did.
    #[tokio::test]
    async fn what_the_agent_already_sent_is_mirrored_in_one_commit() {
        use futures::StreamExt as _;
        let store = Arc::new(Counting::default());
        let sealer = crate::sealing::CredentialSealer::from_hex(&"ab".repeat(32)).unwrap();
        let hub = Hub::new(store.clone(), None, 1 << 20, sealer);
        let proxy = Proxy::new("http://127.0.0.1:9/card".into(), Duration::from_secs(1), Vec::new());
        let cancel = CancellationToken::new();
        let completed = |req: &RunRequest| {
            let rec = futures::executor::block_on(hub.get(&req.scope, &req.task_id)).ok().flatten();
            let task = rec.as_ref().map(task_of).and_then(Result::ok).unwrap_or_else(|| panic!("no task"));
            assert_eq!(task.status.state, TaskState::Completed);
            assert!(upstream_ids(&task).is_some(), "the upstream ids are recorded");
        };

        let together = request("t-1");
        let events = futures::stream::iter(answered("up-1").into_iter().map(Ok)).boxed();
        let to = Mirror::new(&together, InvocationId::new(), false);
        let flow = proxy.follow(&hub, &to, events, false, &cancel).await.unwrap();
        assert!(matches!(flow, Flow::Done));
        assert_eq!(store.commits(), 1, "three events that arrived together: one commit");
        completed(&together);

        let apart = request("t-2");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<StreamResponse, ClientError>>();
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|ev| (ev, rx)) }).boxed();
        let to = Mirror::new(&apart, InvocationId::new(), false);
        let send_apart = async {
            for (n, ev) in answered("up-2").into_iter().enumerate() {
                let _ = tx.send(Ok(ev));
                // The next event goes only once this one is committed.
                for _ in 0..500 {
                    if store.commits() > 1 + n {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        };
        let (flow, ()) = tokio::join!(proxy.follow(&hub, &to, events, false, &cancel), send_apart);
        assert!(matches!(flow, Ok(Flow::Done)));
        assert_eq!(store.commits(), 4, "three events that arrived apart: three commits");
        completed(&apart);

        // Within the linger (a long one here, so that the test does not race the clock).
        let lingering = Proxy {
            card_url: String::new(),
            interface_hosts: Vec::new(),
            timeout: Duration::ZERO,
            client: AsyncMutex::new(None),
            confirmed: Mutex::new(HashSet::new()),
            linger: Duration::from_secs(30),
        };
        let close = request("t-3");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<StreamResponse, ClientError>>();
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|ev| (ev, rx)) }).boxed();
        let to = Mirror::new(&close, InvocationId::new(), false);
        let send_close = async {
            for ev in answered("up-3") {
                let _ = tx.send(Ok(ev));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let (flow, ()) = tokio::join!(lingering.follow(&hub, &to, events, false, &cancel), send_close);
        assert!(matches!(flow, Ok(Flow::Done)));
        assert_eq!(store.commits(), 5, "three events, each within the linger of the one before: one commit");
        completed(&close);
    }
}
