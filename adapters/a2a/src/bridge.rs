//! The A2A side of the bridge: the contract's [`Catalog`] over the configured agents, so that
//! a face of another protocol (the MCP face's `kind = "a2a"` upstreams) can send them
//! messages. Each agent offers `send_message` and one operation per card skill, all taking
//! `{text, data?, context_id?, task_id?}`; a call is a run of the agent (the run the A2A face
//! would submit), so the task it starts is the same durable task an A2A caller of that tenant
//! sees. Its invocation's operation is the one called (the skill, or `send_message`), and its
//! request carries the call's arguments, so that each skill is a policy target of its own.
//! Results are read from the stored task (mapping table in this crate's README).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a::{Message, Part as A2aPart, PartContent, Role, Task, TaskState};
use serde_json::{Map, Value, json};
use switchyard_contract::{
    Catalog, Content, ContextId, EffectClass, Error, Ingress, IngressKey, Invocation, InvocationState, Invocations,
    NeedsInput, Operation, Part, Principal, Submission, TaskId, TaskRun, TaskScope,
};

use crate::agent::AgentKind;
use crate::config::AgentConfig;
use crate::hub::{Hub, KEPT_SCHEME, task_of};
use crate::proxy::Proxy;
use crate::run::{RunRequest, digest_id};
use crate::tools::SKILL_METADATA;

/// The operation every agent offers: a message with no skill named.
pub const SEND_MESSAGE: &str = "send_message";
/// Operation names a face may add beside an agent's own (the MCP face's task tools).
const RESERVED: [&str; 3] = [SEND_MESSAGE, "get_task", "cancel_task"];
/// The longest `text` a bridged message carries.
const MAX_TEXT_BYTES: usize = 1 << 20;
/// How long [`Catalog::refresh`] waits for an agent's card, and how long after a try it tries
/// again (an unreachable agent does not slow every listing down).
const CARD_WAIT: Duration = Duration::from_secs(3);
const CARD_RETRY: Duration = Duration::from_secs(10);

/// The configured agents (all but `tools` agents: a bridge back into MCP would loop), for faces
/// of other protocols.
#[derive(Debug)]
pub struct A2aCatalog {
    agents: HashMap<String, AgentConfig>,
    proxies: Arc<HashMap<String, Arc<Proxy>>>,
    hub: Hub,
    engine: Arc<dyn Invocations>,
    /// When each agent's card was last asked for.
    tried: Mutex<HashMap<String, Instant>>,
}

/// The input schema of every bridged operation.
pub fn message_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The message to the agent."},
            "data": {"type": "object", "description": "Structured data, sent as a data part."},
            "context_id": {"type": "string", "description": "Continue this A2A conversation (contextId)."},
            "task_id": {"type": "string", "description": "Send a follow-up to this open A2A task."}
        },
        "required": ["text"],
        "additionalProperties": false
    })
}

/// A bridged call's arguments, checked.
struct Args {
    text: String,
    data: Option<Map<String, Value>>,
    context_id: Option<String>,
    task_id: Option<String>,
}

fn args(mut a: Map<String, Value>) -> Result<Args, Error> {
    let bad = |m: String| Err(Error::invalid_input(m));
    let text = match a.remove("text") {
        Some(Value::String(t)) if t.len() <= MAX_TEXT_BYTES => t,
        Some(Value::String(_)) => return bad(format!("`text` is longer than {MAX_TEXT_BYTES} bytes")),
        Some(_) => return bad("`text` must be a string".into()),
        None => return bad("`text` is required".into()),
    };
    let data = match a.remove("data") {
        Some(Value::Object(d)) => Some(d),
        None | Some(Value::Null) => None,
        Some(_) => return bad("`data` must be an object".into()),
    };
    let mut id = |k: &str| match a.remove(k) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 256 => Ok(Some(s)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(Error::invalid_input(format!("`{k}` must be a non-empty string of at most 256 bytes"))),
    };
    let (context_id, task_id) = (id("context_id")?, id("task_id")?);
    if let Some(k) = a.keys().next() {
        return bad(format!("unknown argument `{k}`: expected text, data, context_id, task_id"));
    }
    Ok(Args { text, data, context_id, task_id })
}

/// A message id that derives from what identifies the call, so that a retry sends the same
/// message (and the agent, or the gateway's task, recognises it).
fn message_id(parts: &[&str]) -> String {
    format!("sy-{}", digest_id(parts).simple())
}

impl A2aCatalog {
    pub(crate) fn new(
        agents: &[AgentConfig],
        proxies: Arc<HashMap<String, Arc<Proxy>>>,
        hub: Hub,
        engine: Arc<dyn Invocations>,
    ) -> Self {
        let agents =
            agents.iter().filter(|a| a.kind != AgentKind::Tools).map(|a| (a.name.clone(), a.clone())).collect();
        Self { agents, proxies, hub, engine, tried: Mutex::new(HashMap::new()) }
    }

    fn agent(&self, name: &str) -> Result<&AgentConfig, Error> {
        self.agents.get(name).ok_or_else(|| Error::not_found(format!("no A2A agent `{name}` can be bridged")))
    }

    fn engine(&self) -> Result<&Arc<dyn Invocations>, Error> {
        Ok(&self.engine)
    }

    /// The run request of a bridged invocation (one of this catalog's agents).
    fn run_of(&self, inv: &Invocation) -> Result<(RunRequest, &AgentConfig), Error> {
        let req: RunRequest = serde_json::from_value(inv.request.clone())
            .map_err(|e| Error::invalid_input(format!("invocation {} is not an A2A send: {e}", inv.id)))?;
        let cfg = self.agent(&req.agent)?;
        if inv.target.upstream != cfg.upstream() {
            return Err(Error::invalid_input(format!("invocation {} is not a send to `{}`", inv.id, req.agent)));
        }
        Ok((req, cfg))
    }

    /// The open task `id` of agent `cfg` in `scope`, as a follow-up needs it.
    async fn open_task(&self, scope: &TaskScope, cfg: &AgentConfig, id: &str) -> Result<Task, Error> {
        let missing = || Error::not_found(format!("task `{id}` not found"));
        let rec = self.hub.get(scope, &TaskId::from(id)).await.map_err(|e| Error::unavailable(e.message))?;
        let rec = rec.filter(|r| r.agent == cfg.name).ok_or_else(missing)?;
        let task = task_of(&rec).map_err(|e| Error::internal(e.message))?;
        if task.status.state.is_terminal() {
            return Err(Error::conflict(format!(
                "task `{id}` is {} and takes no more messages",
                crate::hub::state_name(&task.status.state)
            )));
        }
        Ok(task)
    }

    /// Whether `agent` offers `operation`, reading its card first if it was not read yet (a
    /// call may come before any listing: a stateless client, or one with a cached list). A
    /// skill the card does not name is the caller's mistake (not retry-safe); a card not read
    /// yet is the gateway's (retry-safe).
    async fn offers(&self, agent: &str, operation: &str) -> Result<(), Error> {
        let known = |s: &Self| s.operations(agent).iter().any(|o| o.name == operation);
        if known(self) {
            return Ok(());
        }
        let proxy = self.proxies.get(agent);
        if let Some(p) = proxy.filter(|p| p.discovered().is_none()) {
            p.discover_within(CARD_WAIT).await;
            if known(self) {
                return Ok(());
            }
            if p.discovered().is_none() {
                return Err(Error::unavailable(format!(
                    "the card of agent `{agent}` could not be read yet, so its skill `{operation}` is not known; try again"
                )));
            }
        }
        Err(Error::new(
            switchyard_contract::ErrorKind::NotFound,
            switchyard_contract::ErrorSource::Client,
            false,
            format!("agent `{agent}` offers no skill `{operation}`"),
        ))
    }

    fn submission(
        principal: &Principal,
        cfg: &AgentConfig,
        operation: &str,
        run: &RunRequest,
    ) -> Result<Submission, Error> {
        Ok(Submission {
            principal: principal.clone(),
            upstream: cfg.upstream(),
            operation: operation.into(),
            request: serde_json::to_value(run).map_err(|e| Error::internal(e.to_string()))?,
            ingress_key: None,
            // The A2A face's checks were applied here: the call enters as the A2A face's own.
            ingress: Ingress::A2a,
            // The calling face says whose protocol its caller spoke.
            caller: None,
            context: None,
            grant: None,
            parent: None,
            // The MCP face sets its caller's; otherwise the current span's, if traced.
            trace: switchyard_contract::trace::outgoing(),
        })
    }
}

#[async_trait::async_trait]
impl Catalog for A2aCatalog {
    fn operations(&self, agent: &str) -> Vec<Operation> {
        let Ok(cfg) = self.agent(agent) else { return Vec::new() };
        let proxy = self.proxies.get(agent);
        // A send to an agent behind the gateway is a write (never resent blindly); a built-in
        // agent's run is replay-safe.
        let effect = if proxy.is_some() { EffectClass::Write } else { EffectClass::ReadOnly };
        let card = proxy.and_then(|p| p.discovered());
        let about = cfg.description.clone().or_else(|| card.as_ref().map(|c| c.card.description.clone()));
        let op = |name: String, title: String, description: Option<String>| Operation {
            upstream: cfg.upstream(),
            name,
            title: Some(title),
            description,
            input_schema: message_schema(),
            output_schema: None,
            effect,
        };
        let mut ops = vec![op(
            SEND_MESSAGE.into(),
            format!("Send a message to agent {agent}"),
            Some(about.unwrap_or_else(|| format!("A2A agent `{agent}`"))),
        )];
        // MCP tool names are 1-128 of [A-Za-z0-9_.-]; a skill whose id is not one is reached
        // through send_message.
        let usable = |id: &str| {
            !id.is_empty()
                && id.len() <= 96
                && id.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
                && !RESERVED.contains(&id)
        };
        for s in card.iter().flat_map(|c| c.card.skills.iter()).filter(|s| usable(&s.id)) {
            let description = format!("{} (skill `{}` of A2A agent `{agent}`)", s.description, s.id);
            ops.push(op(s.id.clone(), s.name.clone(), Some(description)));
        }
        ops
    }

    async fn refresh(&self, agent: &str) {
        let Some(p) = self.proxies.get(agent).filter(|p| p.discovered().is_none()) else { return };
        let due = self.tried.lock().is_ok_and(|mut t| {
            let now = Instant::now();
            let due = t.get(agent).is_none_or(|last| now.duration_since(*last) >= CARD_RETRY);
            if due {
                t.insert(agent.to_string(), now);
            }
            due
        });
        if due {
            p.discover_within(CARD_WAIT).await;
        }
    }

    /// A first message (or, with `task_id`, a follow-up to an open task of this tenant). The
    /// message id derives from the caller's key, so a retry with the same key is the same
    /// message; without a key every call is a new message.
    async fn prepare(
        &self,
        principal: &Principal,
        agent: &str,
        operation: &str,
        arguments: Map<String, Value>,
        key: Option<&IngressKey>,
    ) -> Result<Submission, Error> {
        let cfg = self.agent(agent)?;
        self.offers(agent, operation).await?;
        let given = arguments.clone();
        let a = args(arguments)?;
        let scope = TaskScope::of(principal, "");
        let message_id = match key {
            Some(k) => message_id(&[&scope.identity(), agent, k.as_str()]),
            None => message_id(&[&uuid::Uuid::now_v7().to_string()]),
        };
        let mut parts = vec![A2aPart::text(a.text)];
        if let Some(d) = a.data {
            parts.push(A2aPart::data(Value::Object(d)));
        }
        let mut message = Message::new(Role::User, parts);
        message.message_id = message_id.clone();
        if operation != SEND_MESSAGE {
            message.metadata = Some(HashMap::from_iter([(SKILL_METADATA.to_string(), json!(operation))]));
        }
        let (task_id, context_id, new_task): (TaskId, ContextId, bool) = match &a.task_id {
            Some(tid) => {
                let task = self.open_task(&scope, cfg, tid).await?;
                if let Some(c) = a.context_id.as_deref().filter(|c| *c != task.context_id) {
                    return Err(Error::invalid_input(format!(
                        "context_id `{c}` does not match task `{tid}` (context `{}`)",
                        task.context_id
                    )));
                }
                (TaskId::from(tid.as_str()), task.context_id.into(), false)
            }
            None => {
                let s = scope.identity();
                let id = digest_id(&[&s, agent, &message_id, "mcp"]).to_string();
                let ctx = a.context_id.unwrap_or_else(|| digest_id(&[&s, agent, &message_id, "context"]).to_string());
                (TaskId::from(id), ctx.into(), true)
            }
        };
        message.task_id = (!new_task).then(|| task_id.to_string());
        message.context_id = Some(context_id.to_string());
        let run = RunRequest {
            scope,
            agent: cfg.name.clone(),
            task_id,
            context_id,
            new_task,
            message,
            push: None,
            metadata: None,
            accepted_output_modes: None,
            arguments: Some(given),
        };
        Self::submission(principal, cfg, operation, &run)
    }

    /// The follow-up message on the task that asked: the answer's `text` as a text part when
    /// that is all it holds, else the answer as a data part. Its id derives from the round it
    /// answers, so a retry of the answer is the same message.
    async fn prepare_answer(
        &self,
        principal: &Principal,
        previous: &Invocation,
        answer: Map<String, Value>,
    ) -> Result<Submission, Error> {
        let (prev, cfg) = self.run_of(previous)?;
        let InvocationState::Succeeded { result, .. } = &previous.state else {
            return Err(Error::conflict("the agent did not ask for input"));
        };
        if self.content(&previous.target.upstream, result)?.needs_input.is_none() {
            return Err(Error::conflict("the agent did not ask for input"));
        }
        let scope = TaskScope::of(principal, "");
        if prev.scope != scope {
            return Err(Error::not_found(format!("task `{}` not found", prev.task_id)));
        }
        let task = self.open_task(&scope, cfg, &prev.task_id).await?;
        let part = match answer.get("text") {
            Some(Value::String(t)) if answer.len() == 1 => A2aPart::text(t.clone()),
            _ => A2aPart::data(Value::Object(answer.clone())),
        };
        let mut message = Message::new(Role::User, vec![part]);
        message.message_id = message_id(&[&scope.identity(), &cfg.name, "answer", &previous.id.to_string()]);
        message.task_id = Some(prev.task_id.to_string());
        message.context_id = Some(task.context_id.clone());
        let run = RunRequest {
            scope,
            agent: cfg.name.clone(),
            task_id: prev.task_id,
            context_id: task.context_id.into(),
            new_task: false,
            message,
            push: None,
            metadata: None,
            accepted_output_modes: None,
            arguments: Some(answer),
        };
        // The answer is a round of the same call: the same policy target.
        Self::submission(principal, cfg, &previous.target.operation, &run)
    }

    fn content(&self, _upstream: &str, result: &Value) -> Result<Content, Error> {
        content_of(result)
    }

    async fn task_run(&self, principal: &Principal, agent: &str, task: &str) -> Result<Option<TaskRun>, Error> {
        let Ok(cfg) = self.agent(agent) else { return Ok(None) };
        let scope = TaskScope::of(principal, "");
        let rec = self.hub.get(&scope, &TaskId::from(task)).await.map_err(|e| Error::unavailable(e.message))?;
        let Some(rec) = rec.filter(|r| r.agent == cfg.name) else { return Ok(None) };
        let ended = task_of(&rec)
            .ok()
            .map(|t| t.status.state)
            .filter(TaskState::is_terminal)
            .map(|s| crate::hub::state_name(&s));
        Ok(rec.run_cursor.map(|c| TaskRun { invocation: c.invocation, ended }))
    }

    /// CancelTask on the call's task, as the A2A face does it: an agent behind the gateway is
    /// asked first, and only its confirmation cancels the run.
    async fn cancel(&self, principal: &Principal, invocation: &Invocation) -> Result<(), Error> {
        let (req, cfg) = self.run_of(invocation)?;
        if req.scope.tenant() != &principal.tenant {
            return Err(Error::not_found(format!("invocation {} not found", invocation.id)));
        }
        let engine = self.engine()?;
        let rec = self.hub.get(&req.scope, &req.task_id).await.map_err(|e| Error::unavailable(e.message))?;
        let proxy = self.proxies.get(&cfg.name).map(Arc::as_ref);
        let Some(rec) = rec.filter(|r| r.agent == cfg.name) else {
            // No task yet. Before dispatch nothing reached the agent: the engine's cancel is the
            // whole story. While an agent behind the gateway has the message but has not
            // answered with its task, there is nothing it could confirm: try again shortly.
            let now = engine.get(&principal.tenant, invocation.id).await?;
            if proxy.is_some() && matches!(now.state, InvocationState::Dispatching { .. }) {
                return Err(Error::unavailable(format!(
                    "task `{}` has not been acknowledged by the agent yet; cancel it again shortly",
                    req.task_id
                )));
            }
            return engine.cancel(principal, invocation.id).await.map(|_| ());
        };
        let Err(e) = crate::cancel::cancel_task(&self.hub, proxy, engine.as_ref(), principal, &rec).await else {
            return Ok(());
        };
        // An open task the agent has not acknowledged yet can be canceled shortly (unavailable:
        // try again); an ended one never (conflict).
        let now = self.hub.get(&req.scope, &req.task_id).await.ok().flatten().and_then(|r| task_of(&r).ok());
        match now {
            Some(t) if !t.status.state.is_terminal() => Err(Error::unavailable(e.message)),
            _ => Err(Error::conflict(e.message)),
        }
    }
}

/// The schema a request for input asks for: a data part of the status message holding
/// `{"requestedSchema": …}` (what the gateway's own `tools` agents send) or an object schema
/// itself; else one text field.
fn requested_schema(message: Option<&Message>) -> Value {
    let data = message.into_iter().flat_map(|m| m.parts.iter()).find_map(|p| match &p.content {
        PartContent::Data(v) => v
            .get("requestedSchema")
            .cloned()
            .or_else(|| (v.get("type") == Some(&json!("object")) && v.get("properties").is_some()).then(|| v.clone())),
        _ => None,
    });
    data.unwrap_or_else(|| {
        json!({"type": "object", "properties": {"text": {"type": "string", "description": "Your answer"}},
               "required": ["text"]})
    })
}

fn part_of(p: &A2aPart) -> Part {
    match &p.content {
        PartContent::Text(t) => Part::Text { text: t.clone() },
        // An agent on protobuf (its `Struct`) says 3.0 for 3: whole numbers are integers.
        PartContent::Data(d) => Part::Data { data: crate::tools::whole(d.clone()) },
        PartContent::Raw(b) => {
            Part::Bytes { data: b.clone(), media_type: p.media_type.clone(), name: p.filename.clone() }
        }
        PartContent::Url(u) => {
            let kept = u.strip_prefix(KEPT_SCHEME).and_then(|id| id.parse().ok());
            match kept {
                Some(id) => {
                    let meta = p.metadata.as_ref().and_then(|m| m.get("dev.switchyard/artifact"));
                    let size = meta.and_then(|m| m.get("size")).and_then(Value::as_u64).unwrap_or(0);
                    Part::Artifact { id, size, media_type: p.media_type.clone(), name: p.filename.clone() }
                }
                None => Part::Link {
                    uri: u.clone(),
                    media_type: p.media_type.clone(),
                    name: p.filename.clone(),
                    description: None,
                },
            }
        }
    }
}

fn text_of(message: Option<&Message>) -> String {
    let texts: Vec<&str> = message
        .into_iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// A stored run result (`{"task": …}` or `{"message": …}`) as content. The task's ids and state
/// go into [`Content::about`], so a caller can send a follow-up.
pub fn content_of(result: &Value) -> Result<Content, Error> {
    if let Some(m) = result.get("message") {
        let m: Message =
            serde_json::from_value(m.clone()).map_err(|e| Error::internal(format!("stored message: {e}")))?;
        let mut about = Map::new();
        if let Some(c) = &m.context_id {
            about.insert("contextId".into(), json!(c));
        }
        return Ok(Content { parts: m.parts.iter().map(part_of).collect(), about, ..Content::default() });
    }
    let task: Task = serde_json::from_value(result.get("task").cloned().unwrap_or(Value::Null))
        .map_err(|e| Error::internal(format!("stored run result is neither a task nor a message: {e}")))?;
    let state = task.status.state;
    let about = Map::from_iter([
        ("taskId".to_string(), json!(task.id)),
        ("contextId".to_string(), json!(task.context_id)),
        ("state".to_string(), json!(crate::hub::state_name(&state))),
    ]);
    let said = text_of(task.status.message.as_ref());
    let failed = |text: String| Content {
        parts: vec![Part::Text { text }],
        is_error: true,
        about: about.clone(),
        ..Content::default()
    };
    Ok(match state {
        TaskState::InputRequired => Content {
            needs_input: Some(NeedsInput {
                message: if said.is_empty() { "the agent needs more input".into() } else { said },
                schema: Some(requested_schema(task.status.message.as_ref())),
            }),
            about,
            ..Content::default()
        },
        TaskState::Failed | TaskState::Rejected => {
            let what = if state == TaskState::Failed { "failed" } else { "was rejected" };
            failed(if said.is_empty() { format!("the agent's task {what}") } else { said })
        }
        TaskState::Canceled => failed("the agent's task was canceled".into()),
        TaskState::AuthRequired => failed(format!(
            "the agent needs authorization before it can go on{}; authorize with the agent, then send a follow-up \
             with task_id `{}`",
            if said.is_empty() { String::new() } else { format!(": {said}") },
            task.id
        )),
        _ => {
            let mut parts: Vec<Part> =
                task.artifacts.iter().flatten().flat_map(|a| a.parts.iter()).map(part_of).collect();
            if !said.is_empty() {
                parts.push(Part::Text { text: said });
            }
            let data: Vec<&Value> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Data { data } => Some(data),
                    _ => None,
                })
                .collect();
            let structured = match data.as_slice() {
                [] => None,
                [one] if one.is_object() => Some((*one).clone()),
                many => Some(json!({ "data": many })),
            };
            Content { parts, structured, about, ..Content::default() }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_by_name_and_type() {
        let ok = args(Map::from_iter([("text".into(), json!("hi")), ("data".into(), json!({"a": 1}))]));
        assert!(ok.is_ok_and(|a| a.text == "hi" && a.data.is_some() && a.task_id.is_none()));
        for bad in [
            json!({}),
            json!({"text": 1}),
            json!({"text": "x", "data": [1]}),
            json!({"text": "x", "extra": 1}),
            json!({"text": "x", "task_id": ""}),
        ] {
            let Value::Object(m) = bad.clone() else { panic!() };
            assert!(args(m).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn a_task_becomes_content_by_its_state() {
        let task = |state: &str, status: Value, artifacts: Value| {
            json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": state, "message": status},
                            "artifacts": artifacts}})
        };
        let agent = |parts: Value| json!({"messageId": "m", "role": "ROLE_AGENT", "parts": parts});
        let done = content_of(&task(
            "TASK_STATE_COMPLETED",
            agent(json!([{"text": "done"}])),
            json!([{"artifactId": "a", "parts": [{"data": {"n": 1.0}}, {"url": "https://x/y", "mediaType": "text/plain"}]}]),
        ))
        .unwrap();
        assert_eq!(done.structured, Some(json!({"n": 1})));
        assert!(done.structured.as_ref().is_some_and(|s| s["n"].is_i64()), "a whole number is an integer");
        assert!(!done.is_error && done.needs_input.is_none());
        assert_eq!(done.text(), "done");
        assert!(matches!(&done.parts[1], Part::Link { uri, .. } if uri == "https://x/y"));
        assert_eq!(done.about.get("taskId"), Some(&json!("t1")));

        let asked =
            content_of(&task("TASK_STATE_INPUT_REQUIRED", agent(json!([{"text": "which?"}])), json!(null))).unwrap();
        let needs = asked.needs_input.unwrap_or_else(|| panic!("needs input"));
        assert_eq!(needs.message, "which?");
        assert_eq!(needs.schema.as_ref().and_then(|s| s.pointer("/required/0")), Some(&json!("text")));

        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let typed = content_of(&task(
            "TASK_STATE_INPUT_REQUIRED",
            agent(json!([{"text": "n?"}, {"data": {"requestedSchema": schema}}])),
            json!(null),
        ))
        .unwrap();
        assert_eq!(typed.needs_input.and_then(|n| n.schema), Some(schema));

        let failed = content_of(&task("TASK_STATE_FAILED", agent(json!([{"text": "boom"}])), json!(null))).unwrap();
        assert!(failed.is_error && failed.text() == "boom");
        let auth = content_of(&task("TASK_STATE_AUTH_REQUIRED", Value::Null, json!(null))).unwrap();
        assert!(auth.is_error && auth.text().contains("authorization") && auth.text().contains("t1"));
    }

    #[test]
    fn message_ids_derive_from_what_identifies_the_call() {
        assert_eq!(message_id(&["t/", "a", "k"]), message_id(&["t/", "a", "k"]));
        assert_ne!(message_id(&["t/", "a", "k"]), message_id(&["t/", "a", "k2"]));
        assert_ne!(message_id(&["ta", "b"]), message_id(&["t", "ab"]));
    }
}
