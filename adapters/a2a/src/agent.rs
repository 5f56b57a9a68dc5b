//! Agents behind the A2A face, as upstreams of the engine: each message to an agent is one
//! invocation whose dispatch runs the agent and writes the task's changes through the hub. A
//! run is a list of steps; the task records the last step applied per run, so a run the engine
//! drives again (after a crash) continues where it stopped instead of repeating its events.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Artifact, Message, Part, TaskState};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchyard_contract::{
    CancelAck, Decision, DispatchCall, Invocation, InvocationId, RunCursor, Upstream, UpstreamError,
};
use tokio_util::sync::CancellationToken;

use crate::hub::{Change, Hub, is_interrupted};
use crate::run::{RunRequest, agent_message, status, submitted};

/// One step of a run.
#[derive(Debug, Clone)]
pub enum Item {
    Change(Change),
    Sleep(Duration),
    /// Call the tool the message selects (kind `tools`); its outcome's changes follow.
    Tool,
}

/// What separates two batches of a run.
#[derive(Debug, Clone, Copy)]
enum Pause {
    Sleep(Duration),
    Tool,
}

/// What an agent does with a message.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Answer with a message; no task.
    Message(Vec<Part>),
    /// Run a task through these steps.
    Task(Vec<Item>),
}

/// The kinds of built-in agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Behaves by `messageId` prefix as the A2A 1.0 TCK requires.
    Tck,
    /// Completes every task with an echo of the message text.
    Echo,
    /// An upstream A2A agent (`card_url`), exposed through the gateway.
    Upstream,
    /// The tools of upstream MCP servers (`upstreams`, `tools`), one skill per tool.
    Tools,
}

/// How long a `tools` run's attempt may wait for its tool call: a backstop beyond the longest
/// approval wait the policy allows (7 days); the call settles within it.
const TOOL_RUN_LIMIT: Duration = Duration::from_secs(8 * 24 * 3600);

/// The TCK's required-extension test URI: declared on the tck agent's card.
pub const TCK_REQUIRED_EXTENSION: &str = "urn:a2a:tck:required-extension";

fn artifact(parts: Vec<Part>, append: bool, last_chunk: bool, id: &str) -> Change {
    Change::Artifact {
        artifact: Artifact {
            artifact_id: id.to_string(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: None,
        },
        append,
        last_chunk,
    }
}

fn file_part() -> Part {
    let mut p = Part::raw(b"tck".to_vec());
    p.filename = Some("output.txt".into());
    p.media_type = Some("text/plain".into());
    p
}

impl AgentKind {
    /// Refuses a message before anything is recorded. The TCK agent declares
    /// [`TCK_REQUIRED_EXTENSION`] as required but enforces it only for the TCK's extension test
    /// (`tck-cap-ext…` ids): the rest of the TCK does not send the extension.
    pub fn admit(self, message: &Message, extensions: &[String]) -> Result<(), crate::error::A2aError> {
        if self == Self::Tck
            && message.message_id.starts_with("tck-cap-ext")
            && !extensions.iter().any(|e| e == TCK_REQUIRED_EXTENSION)
        {
            return Err(crate::error::A2aError::new(
                crate::error::Kind::ExtensionSupportRequired,
                format!("extension {TCK_REQUIRED_EXTENSION} is required: declare it in A2A-Extensions"),
            ));
        }
        Ok(())
    }

    /// The plan for `message` on task `task` in context `ctx`.
    pub fn plan(self, message: &Message, ctx: &str, task: &str) -> Plan {
        use Item::{Change as C, Sleep};
        use TaskState::{Completed, InputRequired, Rejected, Working};
        let done = |text: Option<&str>| C(status(Completed, text, ctx, task));
        let working = || C(status(Working, None, ctx, task));
        let art = |parts: Vec<Part>| C(artifact(parts, false, true, "artifact-1"));
        let text = message.text().unwrap_or_default().to_string();
        if self == Self::Tools {
            return Plan::Task(vec![working(), Item::Tool]);
        }
        if self != Self::Tck {
            return Plan::Task(vec![working(), done(Some(&format!("echo: {text}")))]);
        }
        let id = message.message_id.as_str();
        // Longer prefixes first: `tck-artifact-file-url` before `tck-artifact-file`.
        let p = |prefix: &str| id.starts_with(prefix);
        let items = if p("tck-stream-artifact-chunked") {
            vec![
                working(),
                C(artifact(vec![Part::text("chunk-1 ")], false, false, "artifact-1")),
                C(artifact(vec![Part::text("chunk-2")], true, true, "artifact-1")),
                done(None),
            ]
        } else if p("test-resubscribe-message-id") {
            vec![working(), Sleep(Duration::from_secs(4)), done(None)]
        } else if p("tck-stream-artifact-text") {
            vec![working(), art(vec![Part::text("Streamed text content")]), done(None)]
        } else if p("tck-stream-artifact-file") {
            vec![working(), art(vec![file_part()]), done(None)]
        } else if p("tck-stream-ordering-001") {
            vec![working(), art(vec![Part::text("Ordered output")]), done(None)]
        } else if p("tck-artifact-file-url") {
            let mut part = Part::url("https://example.com/output.txt");
            part.filename = Some("output.txt".into());
            part.media_type = Some("text/plain".into());
            vec![art(vec![part]), done(None)]
        } else if p("tck-message-response") {
            return Plan::Message(vec![Part::text("Direct message response")]);
        } else if p("tck-input-required") {
            vec![C(status(InputRequired, Some("Input required"), ctx, task))]
        } else if p("tck-complete-task") {
            vec![done(Some("Hello from TCK"))]
        } else if p("tck-artifact-text") {
            vec![art(vec![Part::text("Generated text content")]), done(None)]
        } else if p("tck-artifact-file") {
            vec![art(vec![file_part()]), done(None)]
        } else if p("tck-artifact-data") {
            vec![art(vec![Part::data(json!({"key": "value", "count": 42}))]), done(None)]
        } else if p("tck-reject-task") {
            vec![C(status(Rejected, Some("rejected"), ctx, task))]
        } else if p("tck-stream-001") {
            vec![working(), art(vec![Part::text("Stream hello from TCK")]), done(None)]
        } else if p("tck-stream-002") {
            vec![done(None)]
        } else if p("tck-stream-003") {
            vec![working(), art(vec![Part::text("Stream task lifecycle")]), done(None)]
        } else {
            vec![done(Some(&format!("Unhandled messageId prefix: {id}")))]
        };
        Plan::Task(items)
    }
}

/// A built-in agent as an engine upstream.
#[derive(Debug)]
pub struct AgentUpstream {
    /// The agent's configured name: a run request for any other agent is refused.
    name: String,
    kind: AgentKind,
    hub: Hub,
    /// For kind `upstream`: the agent behind the gateway.
    proxy: Option<Arc<crate::proxy::Proxy>>,
    /// For kind `tools`: the tools it exposes.
    tools: Option<Arc<crate::tools::ToolsAgent>>,
    running: Mutex<HashMap<InvocationId, CancellationToken>>,
}

impl AgentUpstream {
    pub fn new(
        name: String,
        kind: AgentKind,
        hub: Hub,
        proxy: Option<Arc<crate::proxy::Proxy>>,
        tools: Option<Arc<crate::tools::ToolsAgent>>,
    ) -> Arc<Self> {
        Arc::new(Self { name, kind, hub, proxy, tools, running: Mutex::new(HashMap::new()) })
    }

    /// Checks a run request against the principal that submitted it, before anything is
    /// written: the scope must be the principal's tenant's, the agent this one, and a follow-up's
    /// task must exist in that scope for this agent. The face builds requests that pass; this
    /// is the check wherever else a request comes from.
    async fn check(&self, call: &DispatchCall, req: &RunRequest) -> Result<(), UpstreamError> {
        let refuse = |message: String| UpstreamError::Rejected {
            code: crate::error::Kind::PermissionDenied.failure_code(),
            message,
            details: None,
        };
        if req.agent != self.name {
            return Err(refuse(format!("this upstream runs agent `{}`, not `{}`", self.name, req.agent)));
        }
        // The run's tasks are its submitter's (a run stored before tasks had owners names none).
        let owner = req.scope.owner();
        let own = req.scope.tenant() == &call.principal.tenant && (owner == call.principal.subject || owner.is_empty());
        if !own {
            return Err(refuse(format!(
                "task scope `{}` of `{owner}` is not `{}` of tenant `{}`'s",
                req.scope, call.principal.subject, call.principal.tenant
            )));
        }
        if !req.new_task {
            let rec = self
                .hub
                .get(&req.scope, &req.task_id)
                .await
                .map_err(|e| UpstreamError::Unavailable { message: e.message })?;
            if rec.is_none_or(|r| r.agent != self.name) {
                return Err(UpstreamError::Rejected {
                    code: crate::error::Kind::TaskNotFound.failure_code(),
                    message: format!("task `{}` not found", req.task_id),
                    details: None,
                });
            }
        }
        Ok(())
    }

    fn track(&self, run: InvocationId) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut m) = self.running.lock() {
            m.insert(run, token.clone());
        }
        token
    }

    fn untrack(&self, run: InvocationId) {
        if let Ok(mut m) = self.running.lock() {
            m.remove(&run);
        }
    }

    async fn run(
        &self,
        call: &DispatchCall,
        req: &RunRequest,
        cancel: &CancellationToken,
    ) -> Result<Value, UpstreamError> {
        let run = call.invocation;
        let fail = |e: crate::error::A2aError| UpstreamError::Unavailable { message: e.message };
        let plan = self.kind.plan(&req.message, &req.context_id, &req.task_id);
        let items = match plan {
            Plan::Message(parts) => {
                let m = agent_message(parts, &req.context_id, None);
                return Ok(json!({ "message": m }));
            }
            Plan::Task(items) => items,
        };
        // Consecutive changes commit together (one transaction, one event each); a pause
        // separates batches. Batch k is step k + 1 of this run, so a run driven again after a
        // crash skips the batches already committed.
        let mut batches: Vec<(Option<Pause>, Vec<Change>)> = vec![(None, Vec::new())];
        for item in items {
            match item {
                Item::Sleep(d) => batches.push((Some(Pause::Sleep(d)), Vec::new())),
                Item::Tool => batches.push((Some(Pause::Tool), Vec::new())),
                Item::Change(c) => {
                    if let Some((_, b)) = batches.last_mut() {
                        b.push(c);
                    }
                }
            }
        }
        let mut batches = batches.into_iter();
        let (_, mut first_batch) = batches.next().unwrap_or_default();
        if req.new_task {
            let task = submitted(req);
            // An inline push configuration must exist before the events it is to receive.
            let with_first = req.push.is_none();
            let initial = if with_first { std::mem::take(&mut first_batch) } else { Vec::new() };
            let step = RunCursor { invocation: run, step: u32::from(with_first) };
            let created = self.hub.create(&req.scope, &req.agent, &task, step, initial.clone()).await.map_err(fail)?;
            if let Some(push) = &req.push {
                crate::push::store_config(&self.hub, &req.task_id, push.clone()).await.map_err(fail)?;
            }
            if !created && with_first {
                first_batch = initial; // driven again: applied below, or skipped as already done
            }
        } else {
            if let Some(push) = &req.push {
                crate::push::store_config(&self.hub, &req.task_id, push.clone()).await.map_err(fail)?;
            }
            let mut m = req.message.clone();
            m.context_id = Some(req.context_id.to_string());
            first_batch.insert(0, Change::UserMessage(m));
        }
        let all = std::iter::once((None, first_batch)).chain(batches);
        for (n, (pause, mut changes)) in (1u32..).zip(all) {
            match pause {
                Some(Pause::Sleep(d)) => tokio::select! {
                    () = tokio::time::sleep(d) => {}
                    () = cancel.cancelled() => return Err(UpstreamError::Canceled),
                },
                Some(Pause::Tool) => {
                    let tools = self.tools.as_ref().ok_or_else(|| UpstreamError::Unavailable {
                        message: format!("agent `{}` has no tools", self.name),
                    })?;
                    changes = tools.call(&self.hub, call, req, cancel).await?;
                }
                None => {}
            }
            if cancel.is_cancelled() {
                return Err(UpstreamError::Canceled);
            }
            if changes.is_empty() {
                continue;
            }
            let applied = self
                .hub
                .apply_all(&req.scope, &req.task_id, Some(RunCursor { invocation: run, step: n }), changes)
                .await
                .map_err(fail)?;
            if applied.is_none() {
                break; // canceled (or otherwise ended) meanwhile
            }
        }
        let rec = self.hub.get(&req.scope, &req.task_id).await.map_err(fail)?;
        let body = rec.map(|r| r.body).unwrap_or(Value::Null);
        Ok(json!({ "task": body }))
    }
}

#[async_trait]
impl Upstream for AgentUpstream {
    async fn dispatch(&self, call: &DispatchCall) -> Result<Value, UpstreamError> {
        let req: RunRequest = serde_json::from_value(call.request.clone()).map_err(|e| UpstreamError::Rejected {
            code: switchyard_contract::FailureCode::InvalidRequest,
            message: format!("not an A2A run request: {e}"),
            details: None,
        })?;
        self.check(call, &req).await?;
        let run = call.invocation;
        let token = self.track(run);
        let out = match &self.proxy {
            Some(p) => p.run(&self.hub, &req, (run, call.attempt), &token).await,
            None => self.run(call, &req, &token).await,
        };
        self.untrack(run);
        out
    }

    /// A proxied first message leaves its sent marker before it is sent, and a lost send without
    /// one is decided `not_applied` ([`crate::proxy`]): its attempt may commit with its admission.
    /// (A follow-up leaves none: its attempt commits on its own.)
    fn proves_unsent(&self, request: &Value) -> bool {
        self.proxy.is_some() && RunRequest::starts_task(request)
    }

    /// A run answered with its task committed that task before it answered (a proxied run
    /// mirrored the agent's; a built-in run wrote its own). Once the task ended (or a new task
    /// waits for input), that task is what the caller reads back with `GetTask` and what recovery
    /// finds: a lost proxied send is decided `applied` with it ([`crate::proxy`]), a built-in run
    /// (`read_only`) driven again ends with it. So the caller need not wait for the outcome's commit.
    fn answer_recorded(&self, call: &DispatchCall, result: &Value) -> bool {
        let Some(state) = result.get("task").and_then(|t| t.pointer("/status/state")) else { return false };
        let Ok(state) = serde_json::from_value::<TaskState>(state.clone()) else { return false };
        state.is_terminal() || (is_interrupted(&state) && RunRequest::starts_task(&call.request))
    }

    /// A built-in run stops at once. A proxied run is confirmed only when the agent confirmed
    /// it (the face asked the agent first): stopping the gateway's own wait proves nothing about
    /// the agent, so otherwise the send goes on and ends with whatever the agent answers.
    async fn cancel(&self, call: &DispatchCall) -> CancelAck {
        let run = call.invocation;
        if let Some(p) = &self.proxy
            && !p.take_confirmed(run)
        {
            return CancelAck::Unsupported;
        }
        if let Some(tools) = &self.tools {
            tools.cancel(call).await;
        }
        let token = self.running.lock().ok().and_then(|m| m.get(&run).cloned());
        match token {
            Some(t) => {
                t.cancel();
                CancelAck::Confirmed
            }
            None => CancelAck::Unsupported,
        }
    }

    /// A held send that will never run: its waiting task ends rejected.
    async fn refused(&self, inv: &switchyard_contract::Invocation) {
        crate::run::reject_held(&self.hub, inv).await;
    }

    /// A `tools` run waits for its tool call, however long the call takes: the call is bounded
    /// by its own attempts, timeouts and approval expiry (and a run driven again attaches to it).
    fn attempt_timeout(&self, default: Duration) -> Duration {
        if self.tools.is_some() { TOOL_RUN_LIMIT } else { default }
    }

    /// A proxied send whose outcome is `unknown` is decided from evidence (see [`crate::proxy`]);
    /// a built-in run's never is `unknown` (it is `read_only`, driven again instead).
    fn resolver(&self) -> Option<&'static str> {
        self.proxy.is_some().then_some("a2a-supervisor")
    }

    async fn resolve(&self, inv: &Invocation) -> Option<Decision> {
        let req = serde_json::from_value::<RunRequest>(inv.request.clone()).ok()?;
        let decision = self.proxy.as_ref()?.decide(&self.hub, &req, inv.id).await?;
        tracing::info!(invocation.id = %inv.id, task.id = %req.task_id, "a lost send decided from evidence");
        Some(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str) -> Message {
        let mut m = Message::new(a2a::Role::User, vec![Part::text("hi")]);
        m.message_id = id.to_string();
        m
    }

    #[test]
    fn tck_prefixes_pick_the_longest_match_first() {
        let Plan::Task(items) = AgentKind::Tck.plan(&msg("tck-artifact-file-url-0001"), "c", "t") else {
            panic!("a task plan")
        };
        let Item::Change(Change::Artifact { artifact, .. }) = &items[0] else { panic!("an artifact first") };
        assert_eq!(artifact.parts[0].content, a2a::PartContent::Url("https://example.com/output.txt".into()));
        assert!(matches!(AgentKind::Tck.plan(&msg("tck-message-response-1"), "c", "t"), Plan::Message(_)));
        let Plan::Task(chunks) = AgentKind::Tck.plan(&msg("tck-stream-artifact-chunked-1"), "c", "t") else {
            panic!("a task plan")
        };
        let flags: Vec<_> = chunks
            .iter()
            .filter_map(|i| match i {
                Item::Change(Change::Artifact { append, last_chunk, .. }) => Some((*append, *last_chunk)),
                _ => None,
            })
            .collect();
        assert_eq!(flags, [(false, false), (true, true)]);
    }
}
