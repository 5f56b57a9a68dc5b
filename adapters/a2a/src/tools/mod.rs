//! `kind = "tools"` agents: the tools of upstream MCP servers (any upstream in the contract's
//! [`Catalog`]) as one A2A agent. The card lists one skill per exposed tool; a message selects a
//! skill and carries its arguments; the call is its own invocation (a child of the message's
//! run, keyed by it, so a run driven again after a crash attaches to the same call instead of
//! making a second one); its result becomes the task's artifact and final status. The mapping
//! tables are in this crate's README.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Artifact, Message, Part, PartContent, TaskState};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use switchyard_contract::{
    CallContext, CallRelay, Catalog, Content, DispatchCall, FailureCode, Ingress, IngressKey, Interim, Invocation,
    InvocationId, InvocationState, Invocations, Operation, Question, RelayError, Submission, TaskId, TaskScope,
    UpstreamError,
};
use tokio_util::sync::CancellationToken;

use crate::error::A2aError;
use crate::hub::{Change, Hub, KEPT_SCHEME};
use crate::run::{RunRequest, status_saying};

mod task;

pub(crate) use task::call_unknown;
use task::{Parked, TaskRelay, call_note, outcome, unknown_changes};

/// Message metadata naming the skill to run.
pub const SKILL_METADATA: &str = "dev.switchyard/skill";
/// Task metadata naming the tool call's invocation (and its state).
pub const CALL_METADATA: &str = "dev.switchyard/call";

/// How long one wait for the tool call lasts before it is renewed (the run's lease and the
/// attempt timeout bound the whole).
const WAIT_SLICE: Duration = Duration::from_secs(30);

/// How long a run waits for its agent's upstreams to be discovered (after a restart).
const DISCOVERY_WAIT: Duration = Duration::from_secs(15);

/// One exposed tool.
#[derive(Debug, Clone)]
pub struct Skill {
    /// The skill id: the tool's name on a single-upstream agent, else `upstream.tool`.
    pub id: String,
    pub operation: Operation,
}

/// The tools an agent exposes and how a message calls one.
/// Which tools an agent exposes: those of `upstreams` whose names match `tools` (names, or
/// prefixes ending in `*`; empty: all).
#[derive(Debug, Clone)]
pub struct Exposed {
    pub upstreams: Vec<String>,
    pub tools: Vec<String>,
}

pub struct ToolsAgent {
    catalog: Arc<dyn Catalog>,
    upstreams: Vec<String>,
    tools: Vec<String>,
    /// The largest result a task takes (`a2a.tool_result_max_bytes`).
    max_result_bytes: usize,
    /// The driving port of the engine that calls this agent.
    engine: Arc<dyn Invocations>,
    /// The tool call each run in this process waits for, by run.
    calls: Mutex<HashMap<InvocationId, InvocationId>>,
}

impl std::fmt::Debug for ToolsAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsAgent").field("upstreams", &self.upstreams).field("tools", &self.tools).finish()
    }
}

/// `pattern` is a name, or a prefix ending in `*`.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

impl ToolsAgent {
    pub fn new(
        catalog: Arc<dyn Catalog>,
        exposed: Exposed,
        max_result_bytes: usize,
        engine: Arc<dyn Invocations>,
    ) -> Self {
        let Exposed { upstreams, tools } = exposed;
        Self { catalog, upstreams, tools, max_result_bytes, engine, calls: Mutex::new(HashMap::new()) }
    }

    /// The skills as of now (tools withheld for a changed definition are absent).
    pub fn skills(&self) -> Vec<Skill> {
        let qualify = self.upstreams.len() > 1;
        self.upstreams
            .iter()
            .flat_map(|u| self.catalog.operations(u))
            .filter(|op| self.tools.is_empty() || self.tools.iter().any(|p| matches(p, &op.name)))
            .map(|op| Skill {
                id: if qualify { format!("{}.{}", op.upstream, op.name) } else { op.name.clone() },
                operation: op,
            })
            .collect()
    }

    /// The card's skills.
    pub fn card_skills(&self) -> Vec<Value> {
        self.skills()
            .iter()
            .map(|s| {
                let op = &s.operation;
                let mut input = vec!["application/json"];
                if op.sole_string_argument().is_some() {
                    input.push("text/plain");
                }
                json!({
                    "id": s.id,
                    "name": op.title.clone().unwrap_or_else(|| op.name.clone()),
                    "description": op.description.clone().unwrap_or_else(|| format!("Tool `{}` of `{}`", op.name, op.upstream)),
                    "tags": ["switchyard", "mcp", op.upstream],
                    "inputModes": input,
                    "outputModes": ["application/json", "text/plain"],
                })
            })
            .collect()
    }

    /// The skill a message selects and its arguments, checked against the tool's input schema.
    /// A message selects a skill by `metadata["dev.switchyard/skill"]` (arguments: its first
    /// data part, or its text for a tool with one required string argument) or by a data part
    /// `{"skill": …, "arguments": {…}}`; on an agent with one skill, a data part is its
    /// arguments and a text part the sole string argument.
    pub fn select(&self, message: &Message) -> Result<(Skill, Map<String, Value>), A2aError> {
        let skills = self.skills();
        let data = message.parts.iter().find_map(|p| match &p.content {
            PartContent::Data(Value::Object(m)) => Some(m.clone()),
            _ => None,
        });
        let text = message.text().map(str::to_string);
        let by_metadata =
            message.metadata.as_ref().and_then(|m| m.get(SKILL_METADATA)).and_then(Value::as_str).map(str::to_string);
        let by_part = data.as_ref().and_then(|d| d.get("skill")).and_then(Value::as_str).map(str::to_string);
        let (skill, arguments) = match (by_metadata, by_part) {
            (Some(id), _) => {
                let skill = find(&skills, &id)?;
                let args = match &data {
                    Some(d) if d.contains_key("skill") => nested_arguments(d)?,
                    Some(d) => d.clone(),
                    None => text_arguments(&skill, text.as_deref()).unwrap_or_default(),
                };
                (skill, args)
            }
            (None, Some(id)) => {
                let d = data.unwrap_or_default();
                (find(&skills, &id)?, nested_arguments(&d)?)
            }
            (None, None) => match skills.as_slice() {
                [only] => {
                    let args = match data {
                        Some(d) => d,
                        None => text_arguments(only, text.as_deref()).ok_or_else(|| unselected(&skills))?,
                    };
                    (only.clone(), args)
                }
                _ => return Err(unselected(&skills)),
            },
        };
        Ok((skill, whole_numbers(arguments)))
    }

    /// Checks a message before anything is recorded, as the owning face would: a first message
    /// selects a tool that is offered and approved with arguments that match its schema; a
    /// follow-up (`task`: the task before it) answers the tool's question with a value that
    /// matches the requested schema.
    pub async fn check(
        &self,
        who: &switchyard_contract::Principal,
        message: &Message,
        task: Option<&a2a::Task>,
    ) -> Result<(), A2aError> {
        match task {
            None => self.first_round(who, message).await.map(|_| ()),
            Some(t) => {
                let call = t.metadata.as_ref().and_then(|m| m.get(CALL_METADATA));
                self.next_round(who, message, call).await.map(|_| ())
            }
        }
    }

    /// A first message's tool call.
    async fn first_round(
        &self,
        who: &switchyard_contract::Principal,
        message: &Message,
    ) -> Result<(Operation, Submission), A2aError> {
        let (skill, arguments) = self.select(message)?;
        let op = skill.operation;
        let submission = self
            .catalog
            .prepare(who, &op.upstream, &op.name, arguments, None)
            .await
            .map_err(|e| A2aError::invalid_params(e.message.to_string()))?;
        Ok((op, submission))
    }

    /// A follow-up's tool call: the next round of the call the task's metadata names (`call`),
    /// which asked for input, with the message as the answer (a data part; or a text part when
    /// the requested schema has one property).
    async fn next_round(
        &self,
        who: &switchyard_contract::Principal,
        message: &Message,
        call: Option<&Value>,
    ) -> Result<(Operation, Submission), A2aError> {
        let not_asked = || A2aError::invalid_params("this task's tool call did not ask for input");
        let engine = &self.engine;
        let id: InvocationId = call
            .and_then(|c| c.get("invocation"))
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or_else(not_asked)?;
        let previous = engine.get(&who.tenant, id).await.map_err(A2aError::from)?;
        let InvocationState::Succeeded { result, .. } = &previous.state else { return Err(not_asked()) };
        let content = self
            .catalog
            .content(&previous.target.upstream, result)
            .map_err(|e| A2aError::internal(e.message.to_string()))?;
        let asked = content.needs_input.ok_or_else(not_asked)?;
        let answer = answer_of(message, asked.schema.as_ref())?;
        let submission = self
            .catalog
            .prepare_answer(who, &previous, answer)
            .await
            .map_err(|e| A2aError::invalid_params(e.message.to_string()))?;
        let op = self
            .catalog
            .operations(&previous.target.upstream)
            .into_iter()
            .find(|o| o.name == previous.target.operation)
            .ok_or_else(|| {
                A2aError::invalid_params(format!("tool `{}` is no longer offered", previous.target.operation))
            })?;
        Ok((op, submission))
    }

    /// Runs the tool the message selects as a child invocation of `call` (the message's run)
    /// and returns the task changes its outcome means.
    pub async fn call(
        &self,
        hub: &Hub,
        call: &DispatchCall,
        req: &RunRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Change>, UpstreamError> {
        let (ctx, task) = (req.context_id.as_str(), req.task_id.as_str());
        let engine = &self.engine;
        let rejected = |message: String| Ok(vec![status_saying(TaskState::Rejected, &message, ctx, task)]);
        // A run driven again right after a restart may start before the upstreams are
        // discovered: wait for them a while rather than refuse a message checked on arrival.
        let discovering = tokio::time::Instant::now() + DISCOVERY_WAIT;
        while self.skills().is_empty() && tokio::time::Instant::now() < discovering && !cancel.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let round = if req.new_task {
            self.first_round(&call.principal, &req.message).await
        } else {
            let rec = hub
                .get(&req.scope, &req.task_id)
                .await
                .map_err(|e| UpstreamError::Unavailable { message: e.message })?;
            let meta = rec.as_ref().and_then(|r| r.body.get("metadata")).and_then(|m| m.get(CALL_METADATA));
            self.next_round(&call.principal, &req.message, meta).await
        };
        let (op, mut submission) = match round {
            Ok(r) => r,
            Err(e) => return rejected(e.message),
        };
        let op = &op;
        // The run's own invocation keys the call: driven again, the run attaches to it.
        submission.ingress_key = Some(
            IngressKey::new(format!("a2a-tool/{}", call.invocation))
                .map_err(|e| UpstreamError::Unavailable { message: e.message.to_string() })?,
        );
        let relay = TaskRelay {
            hub: hub.clone(),
            scope: req.scope.clone(),
            task: req.task_id.clone(),
            ctx: req.context_id.to_string(),
            sent: AtomicU32::new(0),
        };
        submission.context = Some(CallContext::new(Arc::new(relay)));
        submission.parent = Some(call.invocation);
        // An A2A caller's tool call: counted as A2A, though it passed the MCP face's checks.
        submission.caller = Some(Ingress::A2a);
        let submitted = match engine.submit(submission).await {
            Ok(s) => s,
            Err(e) if e.source == switchyard_contract::ErrorSource::Policy => {
                return rejected(format!("the policy refused the call: {}", e.message));
            }
            Err(e) => return Err(UpstreamError::Unavailable { message: e.message.to_string() }),
        };
        let mut child = submitted.invocation;
        if let Ok(mut m) = self.calls.lock() {
            m.insert(call.invocation, child.id);
        }
        let waited = async {
            // What the task says of a call parked until someone acts: held for approval, or its
            // outcome unknown until an operator reconciles it (A2A has no "unknown": the task
            // stays open, never FAILED for a call that may have run).
            let mut shown = None;
            loop {
                let parked = Parked::of(&child.state);
                if parked.is_none() && child.state.is_settled() {
                    break;
                }
                if parked != shown {
                    let changes = match &child.state {
                        InvocationState::AwaitingApproval => {
                            let reason = engine.hold_reason(&child).await;
                            self.held_changes(&child, op, reason, ctx, task)
                        }
                        InvocationState::Unknown { reason, .. } => unknown_changes(&child, op, reason, ctx, task),
                        _ => {
                            let text = format!("approved: the tool call `{}` runs (invocation {})", op.name, child.id);
                            vec![call_note(&child, op, "approved"), status_saying(TaskState::Working, &text, ctx, task)]
                        }
                    };
                    hub.apply_all(&req.scope, &req.task_id, None, changes)
                        .await
                        .map_err(|e| UpstreamError::Unavailable { message: e.message.to_string() })?;
                    shown = parked;
                }
                if parked.is_some() {
                    // `wait` answers a parked call at once: wait for its next event (approved,
                    // denied, reconciled, canceled) instead of asking again and again.
                    let mut next = engine.watch(call.principal.tenant.clone(), child.id, child.last_seq);
                    if let Some(Err(e)) = next.next().await {
                        return Err(UpstreamError::Unavailable { message: e.message.to_string() });
                    }
                }
                child = engine
                    .wait(&call.principal.tenant, child.id, WAIT_SLICE)
                    .await
                    .map_err(|e| UpstreamError::Unavailable { message: e.message.to_string() })?;
            }
            Ok(self.changes(&child, op, ctx, task))
        };
        let out = tokio::select! {
            r = waited => r,
            () = cancel.cancelled() => Err(UpstreamError::Canceled),
        };
        if let Ok(mut m) = self.calls.lock() {
            m.remove(&call.invocation);
        }
        out
    }

    /// Cancels the tool call of run `call`, if this process runs it: the call's own rule
    /// applies (a write in flight becomes `unknown`).
    pub async fn cancel(&self, call: &DispatchCall) {
        let child = self.calls.lock().ok().and_then(|m| m.get(&call.invocation).copied());
        if let Some(child) = child
            && let Err(e) = self.engine.cancel(&call.principal, child).await
        {
            tracing::warn!(invocation.id = %child, error = %e, "cannot cancel the tool call of a canceled run");
        }
    }

    /// A held tool call's task: `TASK_STATE_AUTH_REQUIRED` (the A2A state for an action that
    /// needs someone's approval, granted out of band), its status naming the held invocation.
    fn held_changes(
        &self,
        child: &Invocation,
        op: &Operation,
        reason: Option<String>,
        ctx: &str,
        task: &str,
    ) -> Vec<Change> {
        let text = format!(
            "the tool call `{}` waits for approval{} (invocation {}): it runs once an operator approves it, and the \
             task is rejected if it is denied or not decided in time",
            op.name,
            reason.map(|r| format!(": {r}")).unwrap_or_default(),
            child.id
        );
        vec![call_note(child, op, "awaiting_approval"), status_saying(TaskState::AuthRequired, &text, ctx, task)]
    }

    /// What the tool call's outcome means for the task.
    fn changes(&self, child: &Invocation, op: &Operation, ctx: &str, task: &str) -> Vec<Change> {
        let note = |state: &str| call_note(child, op, state);
        match &child.state {
            InvocationState::Succeeded { result, .. } => match self.catalog.content(&op.upstream, result) {
                Ok(content) if content.size() > self.max_result_bytes => {
                    let text = format!(
                        "the tool's result is {} bytes, more than this gateway passes on (a2a.tool_result_max_bytes = \
                         {}); the call itself succeeded and is recorded as invocation {}",
                        content.size(),
                        self.max_result_bytes,
                        child.id
                    );
                    vec![note("succeeded"), status_saying(TaskState::Failed, &text, ctx, task)]
                }
                Ok(content) => outcome(content, op, ctx, task, note("succeeded")),
                Err(e) => vec![
                    note("succeeded"),
                    status_saying(
                        TaskState::Failed,
                        &format!("the tool's result cannot be read: {}", e.message),
                        ctx,
                        task,
                    ),
                ],
            },
            InvocationState::Failed { error, .. } => {
                let refused = matches!(error.code, FailureCode::ApprovalDenied | FailureCode::ApprovalExpired);
                let state = if refused { TaskState::Rejected } else { TaskState::Failed };
                let text = format!("the tool call failed ({}): {}", error.code, error.message);
                vec![note("failed"), status_saying(state, &text, ctx, task)]
            }
            InvocationState::Canceled { .. } => {
                vec![note("canceled"), status_saying(TaskState::Canceled, "the tool call was canceled", ctx, task)]
            }
            other => {
                let text = format!("the tool call ended in state {}", other.name().as_str());
                vec![note(other.name().as_str()), status_saying(TaskState::Failed, &text, ctx, task)]
            }
        }
    }
}

/// Arguments with every whole number as an integer: protobuf's `Struct` carries all numbers as
/// doubles (the gRPC binding, and clients such as the Python SDK that build data parts from it
/// on any binding), and a tool that wants an integer may refuse `20.0`. JSON does not tell the
/// two apart, so nothing else changes.
fn whole_numbers(arguments: Map<String, Value>) -> Map<String, Value> {
    arguments.into_iter().map(|(k, v)| (k, whole(v))).collect()
}

/// `v` with every whole number as an integer (see [`whole_numbers`]).
pub(crate) fn whole(v: Value) -> Value {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)]
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(whole).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, whole(v))).collect()),
        other => other,
    }
}

/// A follow-up message as the answer to a request for input: its first data part, or its text
/// as the one property of the requested schema.
fn answer_of(message: &Message, schema: Option<&Value>) -> Result<Map<String, Value>, A2aError> {
    if let Some(m) = message.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(Value::Object(m)) => Some(m.clone()),
        _ => None,
    }) {
        return Ok(whole_numbers(m));
    }
    let props = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
    match (props.map(|p| p.keys().collect::<Vec<_>>()).as_deref(), message.text()) {
        (Some([only]), Some(text)) => {
            let mut m = Map::new();
            m.insert((*only).clone(), Value::String(text.to_string()));
            Ok(m)
        }
        _ => Err(A2aError::invalid_params(
            "answer the tool's question with a data part matching the requested schema (a text part answers a \
             schema with one property)",
        )),
    }
}

fn find(skills: &[Skill], id: &str) -> Result<Skill, A2aError> {
    skills.iter().find(|s| s.id == id).cloned().ok_or_else(|| {
        let mut e = unselected(skills);
        e.message = format!("no skill `{id}`: {}", e.message);
        e
    })
}

fn nested_arguments(data: &Map<String, Value>) -> Result<Map<String, Value>, A2aError> {
    match data.get("arguments") {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(A2aError::invalid_params("`arguments` must be an object")),
    }
}

/// A text-only message's arguments: the text as the tool's sole required string argument.
fn text_arguments(skill: &Skill, text: Option<&str>) -> Option<Map<String, Value>> {
    let name = skill.operation.sole_string_argument()?;
    let mut m = Map::new();
    m.insert(name.to_string(), Value::String(text?.to_string()));
    Some(m)
}

fn unselected(skills: &[Skill]) -> A2aError {
    let ids: Vec<&str> = skills.iter().map(|s| s.id.as_str()).collect();
    A2aError::invalid_params(format!(
        "select a skill with metadata[\"{SKILL_METADATA}\"] or a data part {{\"skill\": …, \"arguments\": {{…}}}}; \
         skills: {}",
        if ids.is_empty() { "(none offered now)".to_string() } else { ids.join(", ") }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog whose every result is `n` bytes of text (`{"n": n}`).
    #[derive(Debug)]
    struct Sized;

    #[async_trait::async_trait]
    impl Catalog for Sized {
        fn operations(&self, _: &str) -> Vec<Operation> {
            Vec::new()
        }
        async fn prepare(
            &self,
            _: &switchyard_contract::Principal,
            _: &str,
            _: &str,
            _: Map<String, Value>,
            _: Option<&switchyard_contract::IngressKey>,
        ) -> Result<Submission, switchyard_contract::Error> {
            Err(switchyard_contract::Error::internal("unused"))
        }
        async fn prepare_answer(
            &self,
            _: &switchyard_contract::Principal,
            _: &Invocation,
            _: Map<String, Value>,
        ) -> Result<Submission, switchyard_contract::Error> {
            Err(switchyard_contract::Error::internal("unused"))
        }
        fn content(&self, _: &str, result: &Value) -> Result<Content, switchyard_contract::Error> {
            let n = result["n"].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
            Ok(Content { parts: vec![switchyard_contract::Part::Text { text: "x".repeat(n) }], ..Content::default() })
        }
    }

    fn succeeded(n: usize) -> Invocation {
        let tenant = switchyard_contract::TenantId::new("t").unwrap();
        let draft = switchyard_contract::NewInvocation {
            id: InvocationId::new(),
            principal: switchyard_contract::Principal::new(tenant, "s"),
            target: switchyard_contract::Target {
                upstream: "fx".into(),
                operation: "t".into(),
                effect: switchyard_contract::EffectClass::ReadOnly,
            },
            request: json!({}),
            digest: switchyard_contract::RequestDigest::compute("fx", "t", &json!({})).unwrap(),
            ingress_key: None,
            parent: None,
            trace: None,
            worker: switchyard_contract::WorkerId::new(),
            lease_ttl_ms: 1000,
            hold: None,
            first_attempt: None,
            proves_unsent: false,
            audit: None,
        };
        let (mut inv, _) = Invocation::admit(draft, 0);
        inv.state = InvocationState::Succeeded {
            result: json!({"n": n}),
            resolution: switchyard_contract::Resolution::Upstream,
        };
        inv
    }

    /// A read-only operation `t` of upstream `fx`.
    fn read_op() -> Operation {
        Operation {
            upstream: "fx".into(),
            name: "t".into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            effect: switchyard_contract::EffectClass::ReadOnly,
        }
    }

    #[test]
    fn a_result_above_the_limit_fails_the_task_saying_so() {
        let agent = ToolsAgent::new(
            Arc::new(Sized),
            Exposed { upstreams: vec!["fx".into()], tools: Vec::new() },
            100,
            switchyard_contract::memory::MemoryInvocations::new(|_| {
                switchyard_contract::memory::Reply::Refuse(switchyard_contract::Error::internal("nothing is submitted"))
            }),
        );
        let op = read_op();
        let last_state = |changes: Vec<Change>| match changes.last() {
            Some(Change::Status(s)) => {
                (s.state.clone(), s.message.as_ref().and_then(|m| m.text()).unwrap_or_default().to_string())
            }
            other => panic!("{other:?}"),
        };
        let (state, _) = last_state(agent.changes(&succeeded(100), &op, "c", "t"));
        assert_eq!(state, TaskState::Completed, "at the limit");
        let (state, text) = last_state(agent.changes(&succeeded(101), &op, "c", "t"));
        assert_eq!(state, TaskState::Failed);
        assert!(text.contains("101 bytes") && text.contains("tool_result_max_bytes"), "{text}");
    }

    /// A tool result's link in the gateway's kept-artifact scheme becomes text: it used to be
    /// stored as a reference, and every read of the task (and the tenant's `ListTasks` with
    /// artifacts) then failed, or would have inlined an artifact the upstream chose.
    #[test]
    fn a_link_in_the_kept_artifact_scheme_is_the_tools_text() {
        let op = read_op();
        let link = |uri: &str| switchyard_contract::Part::Link {
            uri: uri.into(),
            media_type: None,
            name: None,
            description: None,
        };
        let forged = format!("{KEPT_SCHEME}{}", switchyard_contract::ArtifactId::new());
        let content = Content { parts: vec![link(&forged), link("https://example.com/a.txt")], ..Content::default() };
        let note = Change::Status(a2a::TaskStatus { state: TaskState::Working, message: None, timestamp: None });
        let changes = outcome(content, &op, "c", "t", note);
        let parts = changes
            .iter()
            .find_map(|c| match c {
                Change::Artifact { artifact, .. } => Some(artifact.parts.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no artifact: {changes:?}"));
        assert_eq!(parts[0].content, a2a::PartContent::Text(forged));
        assert_eq!(parts[1].content, a2a::PartContent::Url("https://example.com/a.txt".into()));
    }

    #[test]
    fn whole_doubles_become_integers_and_nothing_else_changes() {
        let args = json!({"steps": 20.0, "ratio": 0.5, "big": 1.0e20, "nested": [{"n": 3.0}], "s": "20.0", "i": 7});
        let Value::Object(m) = args else { panic!() };
        let fixed = Value::Object(whole_numbers(m));
        assert_eq!(fixed, json!({"steps": 20, "ratio": 0.5, "big": 1.0e20, "nested": [{"n": 3}], "s": "20.0", "i": 7}));
        assert!(fixed["steps"].is_i64());
    }
}
