//! Tools of A2A agents (`kind = "a2a"` upstreams): the other protocol's [`Catalog`] offers the
//! operations (one per card skill, plus `send_message`), builds each round's submission and
//! reads each result as content; this face renders it. Every round is a durable invocation of
//! the agent's own upstream, as an A2A caller's send would be. A request for input becomes an
//! MRTR elicitation (modern clients) or a server→client `elicitation/create` (legacy); a call
//! still running when the wait ends becomes an MCP task (Tasks extension) or a result naming
//! `<prefix>get_task`. `<prefix>get_task` and `<prefix>cancel_task` serve clients without the
//! Tasks extension.

use std::collections::BTreeMap;

use base64::Engine as _;
use rmcp::model::{InputRequest, Tool};
use serde_json::Map;
use switchyard_contract::{Catalog as Foreign, Content, Invocation, Part};

use super::*;
use crate::face::call::{GRANT_META, Question, Ran, Rendered, render, request_meta};

/// One `kind = "a2a"` upstream as the face serves it.
#[derive(Debug, Clone)]
pub struct Bridge {
    /// The upstream's name (what virtual servers include).
    pub name: String,
    pub prefix: String,
    /// The A2A agent's name.
    pub agent: String,
    /// The engine's name for the agent's upstream (what its calls' invocations target).
    pub upstream: String,
    pub tasks: BTreeMap<String, TaskSupport>,
}

const GET_TASK: &str = "get_task";
const CANCEL_TASK: &str = "cancel_task";
/// The `_meta` key of a bridged result naming the A2A task behind it.
pub const A2A_META: &str = "dev.switchyard/a2a";
/// The key of the one input request a bridged round asks.
const ANSWER: &str = "answer";
/// How long an answer waits for the round that asked to commit its outcome.
const ASKED_SETTLES_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

fn task_tool_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {"task_id": {"type": "string", "description": "The agent's task id a call answered with (its invocation id is accepted too)."}},
        "required": ["task_id"],
        "additionalProperties": false
    });
    schema.as_object().cloned().unwrap_or_default()
}

impl Shared {
    /// The bridge serving engine upstream `upstream`, if one does.
    pub(super) fn bridge_for(&self, upstream: &str) -> Option<&Bridge> {
        self.bridges.iter().find(|b| b.upstream == upstream)
    }

    /// Cancels invocation `id` for `by`: a bridged call the way its protocol does it (the
    /// agent is asked), any other with the engine.
    pub(super) async fn cancel(&self, by: &Principal, id: InvocationId) -> Result<(), switchyard_contract::Error> {
        let inv = self.engine.get(&by.tenant, id).await?;
        match (&self.foreign, self.bridge_for(&inv.target.upstream)) {
            (Some(foreign), Some(_)) => foreign.cancel(by, &inv).await,
            _ => self.engine.cancel(by, id).await.map(|_| ()),
        }
    }
}

impl McpFace {
    pub(super) fn foreign(&self) -> Result<&Arc<dyn Foreign>, ErrorData> {
        self.shared.foreign.as_ref().ok_or_else(|| internal("no A2A agents are configured to bridge to"))
    }

    fn bridges(&self) -> impl Iterator<Item = &Bridge> {
        self.shared.bridges.iter().filter(|b| self.server.includes(&b.name))
    }

    /// Reads the cards of agents not discovered yet (bounded).
    pub(super) async fn refresh_bridges(&self) {
        if let Some(foreign) = &self.shared.foreign {
            futures::future::join_all(self.bridges().map(|b| foreign.refresh(&b.agent))).await;
        }
    }

    /// The bridged tools this endpoint exposes.
    pub(super) fn bridged_tools(&self) -> Vec<Tool> {
        let Some(foreign) = &self.shared.foreign else { return Vec::new() };
        let mut tools = Vec::new();
        for b in self.bridges() {
            for op in foreign.operations(&b.agent) {
                let schema = op.input_schema.as_object().cloned().unwrap_or_default();
                let mut t = Tool::new(format!("{}{}", b.prefix, op.name), op.description.unwrap_or_default(), schema);
                t.title = op.title;
                tools.push(t);
            }
            let about = |what: &str| format!("{what} of a call to A2A agent `{}` that answered with a task", b.agent);
            tools.push(Tool::new(
                format!("{}{GET_TASK}", b.prefix),
                about("The state and outcome"),
                task_tool_schema(),
            ));
            tools.push(Tool::new(format!("{}{CANCEL_TASK}", b.prefix), about("Cancels the task"), task_tool_schema()));
        }
        tools.retain(|t| self.server.exposes(&t.name));
        tools
    }

    /// The bridge and operation a tool name names, if this endpoint exposes it.
    pub(super) fn bridged(&self, name: &str) -> Option<(Bridge, String)> {
        if !self.server.exposes(name) {
            return None;
        }
        self.bridges().find_map(|b| name.strip_prefix(b.prefix.as_str()).map(|op| (b.clone(), op.to_string())))
    }

    /// Where this request reached the gateway (links to artifacts are absolute URLs under it),
    /// and the caller the links open for.
    pub(super) fn link_base(&self, ctx: &RequestContext<RoleServer>) -> LinkBase {
        let grant = self.shared.artifact_links.clone().zip(principal(ctx).ok());
        if let Some(u) = &self.shared.public_url {
            return LinkBase { url: u.trim_end_matches('/').to_string(), grant };
        }
        let host = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(axum::http::header::HOST))
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        LinkBase { url: format!("{}://{host}", if self.shared.tls { "https" } else { "http" }), grant }
    }

    pub(super) async fn call_bridged(
        &self,
        bridge: Bridge,
        op: String,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let foreign = self.foreign()?.clone();
        let who = principal(&ctx)?;
        let name = params.name.to_string();
        let args = params.arguments.clone().unwrap_or_default();
        let base = self.link_base(&ctx);
        if op == GET_TASK || op == CANCEL_TASK {
            let r = self.task_tool(&bridge, &who, &args, op == CANCEL_TASK, &base).await?;
            return Ok(CallToolResponse::Complete(r));
        }
        let support = bridge.tasks.get(&op).copied().unwrap_or_default();
        let tasks = super::tasks::may_become_task(support, &ctx)?;
        let wait = if tasks { self.shared.task_after } else { self.shared.call_wait };
        let mut round = self.first_round(&params, &ctx, &who, &name)?;
        let grant = request_meta(&params, &ctx, GRANT_META).and_then(Value::as_str).map(str::to_string);
        let trace = super::call::trace_context(&params, &ctx);
        loop {
            let prepared = match &round.prev {
                None => {
                    let key = round.ingress_key()?;
                    foreign.prepare(&who, &bridge.agent, &op, args.clone(), key.as_ref()).await
                }
                Some(prev) => {
                    let previous = self.bridged_invocation(&bridge, &who, prev).await?;
                    let previous = self.settled(&who, previous).await;
                    match answer_of(round.responses.take(), ANSWER)? {
                        Ok(answer) => foreign.prepare_answer(&who, &previous, answer).await,
                        Err(action) => return Ok(CallToolResponse::Complete(declined(&previous, &action, &bridge))),
                    }
                }
            };
            let mut submission = prepared.map_err(|e| crate::error::rpc_error(&e, None))?;
            submission.ingress_key = round.ingress_key()?;
            submission.grant.clone_from(&grant);
            // An MCP caller's message: counted as MCP, though it passed the A2A face's checks.
            submission.caller = Some(Ingress::Mcp);
            submission.trace = trace.clone().or(submission.trace);
            // No questions to wait for: an agent asks for input through its task's state.
            let inv = match self.run_round(submission, wait, &ctx, &who, round.key.is_some(), None).await? {
                Ran::Settled(inv) => inv,
                Ran::Answer(answer) => return Ok(CallToolResponse::Complete(answer)),
                Ran::Asked(s) => s.invocation,
            };
            let open = !inv.state.is_settled() || matches!(inv.state, InvocationState::AwaitingApproval);
            if open && tasks {
                return Ok(CallToolResponse::Task(CreateTaskResult::new(self.task_of(&inv))));
            }
            if open && !matches!(inv.state, InvocationState::AwaitingApproval) {
                return Ok(CallToolResponse::Complete(running(&inv, &bridge)));
            }
            let InvocationState::Succeeded { result, .. } = &inv.state else {
                return match render(&inv)? {
                    Rendered::Answer(a) => Ok(a),
                    Rendered::AskInput(_) => Err(internal("a bridged call cannot ask for MCP input")),
                };
            };
            let content = foreign.content(&inv.target.upstream, result).map_err(|e| internal(e.message))?;
            let Some(asked) = &content.needs_input else {
                return Ok(CallToolResponse::Complete(self.capped(&content, inv.id, &base)));
            };
            let requests = Some(elicitation(&asked.message, asked.schema.as_ref()));
            let question = Question { requests, up_state: None, who: "agent" };
            if let Some(answer) = self.ask_next(&mut round, inv.id, question, &ctx, &who, &name).await? {
                return Ok(answer);
            }
        }
    }

    /// Invocation `id` of `who`'s tenant, a call through `bridge`; anything else is unknown.
    async fn bridged_invocation(&self, bridge: &Bridge, who: &Principal, id: &str) -> Result<Invocation, ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("unknown task `{id}`"), None);
        let id: InvocationId = id.parse().map_err(|_| unknown())?;
        let inv = self.shared.engine.get(&who.tenant, id).await.map_err(|_| unknown())?;
        match self.shared.bridge_for(&inv.target.upstream) {
            Some(b) if b.name == bridge.name => Ok(inv),
            _ => Err(unknown()),
        }
    }

    /// The round that asked, once its outcome committed: its caller heard it from the agent's
    /// mirrored task, which may come before that commit (G5), so a quick answer can arrive
    /// first. Waits at most [`ASKED_SETTLES_WITHIN`]; as it is then, if it did not settle.
    async fn settled(&self, who: &Principal, previous: Invocation) -> Invocation {
        if previous.state.is_settled() {
            return previous;
        }
        let waited = self.shared.engine.wait(&who.tenant, previous.id, ASKED_SETTLES_WITHIN).await;
        waited.unwrap_or(previous)
    }

    /// `<prefix>get_task` and `<prefix>cancel_task`.
    async fn task_tool(
        &self,
        bridge: &Bridge,
        who: &Principal,
        args: &Map<String, Value>,
        cancel: bool,
        base: &LinkBase,
    ) -> Result<CallToolResult, ErrorData> {
        let id =
            args.get("task_id").and_then(Value::as_str).ok_or_else(|| invalid("`task_id` (a string) is required"))?;
        let (mut inv, ended) = match self.bridged_invocation(bridge, who, id).await {
            Ok(inv) => (inv, None),
            // The agent's task id (what results name): its latest round.
            Err(unknown) => {
                let run = self.foreign()?.task_run(who, &bridge.agent, id).await;
                match run.map_err(|e| crate::error::rpc_error(&e, None))? {
                    Some(run) => (self.bridged_invocation(bridge, who, &run.invocation.to_string()).await?, run.ended),
                    None => return Err(unknown),
                }
            }
        };
        // A task that waited for input, then ended (canceled): its round's result is stale.
        if let Some(state) = ended.filter(|_| self.waits_for_input(&inv).unwrap_or(false)) {
            return Ok(error_result(inv.id, &format!("the agent's task `{id}` ended: {state}")));
        }
        if cancel {
            let waits = self.waits_for_input(&inv)?;
            if inv.state.is_settled() && !waits {
                return Ok(error_result(inv.id, &format!("the call already ended ({})", inv.state.name().as_str())));
            }
            if let Err(e) = self.foreign()?.cancel(who, &inv).await {
                return Ok(error_result(inv.id, &format!("the agent did not cancel the task: {}", e.message)));
            }
            if waits {
                let task = task_of(&inv).unwrap_or(id);
                return Ok(error_result(inv.id, &format!("the agent's task `{task}` was canceled")));
            }
            inv = self.shared.engine.get(&who.tenant, inv.id).await.map_err(|e| crate::error::rpc_error(&e, None))?;
        }
        self.bridged_outcome(bridge, &inv, base)
    }

    /// Whether `inv` ended asking for input (its task waits for the caller's answer).
    pub(super) fn waits_for_input(&self, inv: &Invocation) -> Result<bool, ErrorData> {
        let InvocationState::Succeeded { result, .. } = &inv.state else { return Ok(false) };
        Ok(self.foreign()?.content(&inv.target.upstream, result).is_ok_and(|c| c.needs_input.is_some()))
    }

    /// [`result_of`], unless the content is larger than this gateway passes on.
    fn capped(&self, content: &Content, id: InvocationId, base: &LinkBase) -> CallToolResult {
        let max = self.shared.bridge_result_max_bytes;
        if content.size() > max {
            return error_result(
                id,
                &format!(
                    "the agent's result is {} bytes, more than this gateway passes on (mcp.bridge_result_max_bytes = \
                     {max}); the send itself succeeded and is recorded as invocation {id}",
                    content.size()
                ),
            );
        }
        result_of(content, id, base)
    }

    /// A bridged invocation as a tool result, whatever its state (for `get_task` and
    /// `tasks/get`): a request for input says how to answer it with `send_message`.
    pub(super) fn bridged_outcome(
        &self,
        bridge: &Bridge,
        inv: &Invocation,
        base: &LinkBase,
    ) -> Result<CallToolResult, ErrorData> {
        let InvocationState::Succeeded { result, .. } = &inv.state else {
            if !inv.state.is_settled() && !matches!(inv.state, InvocationState::AwaitingApproval) {
                return Ok(running(inv, bridge));
            }
            return match render(inv)? {
                Rendered::Answer(CallToolResponse::Complete(r)) => Ok(r),
                _ => Ok(error_result(inv.id, inv.state.name().as_str())),
            };
        };
        let content = self.foreign()?.content(&inv.target.upstream, result).map_err(|e| internal(e.message))?;
        let Some(asked) = &content.needs_input else { return Ok(self.capped(&content, inv.id, base)) };
        let task = content.about.get("taskId").and_then(Value::as_str).unwrap_or_default();
        let mut r = result_of(&Content { needs_input: None, ..content.clone() }, inv.id, base);
        r.content = vec![ContentBlock::text(format!(
            "The agent asks: {}\nAnswer with `{}send_message` and task_id `{task}`.",
            asked.message, bridge.prefix
        ))];
        Ok(r)
    }
}

/// The client's answer to the one input request (`key`) of a bridged round: its content when
/// it accepted, else the action it took (`decline`, `cancel`).
pub(super) fn answer_of(
    responses: Option<InputResponses>,
    key: &str,
) -> Result<Result<Map<String, Value>, String>, ErrorData> {
    let answer = responses
        .and_then(|mut r| r.remove(key))
        .ok_or_else(|| invalid(format!("inputResponses must answer `{key}`, the outstanding input request")))?;
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(Ok(answer.get("content").and_then(Value::as_object).cloned().unwrap_or_default())),
        Some(other) => Ok(Err(other.to_string())),
        None => Err(invalid(format!("inputResponses.{key} is not an elicitation result"))),
    }
}

/// The client did not answer: the agent's task still waits for input.
fn declined(previous: &Invocation, action: &str, bridge: &Bridge) -> CallToolResult {
    let task = match &previous.state {
        InvocationState::Succeeded { result, .. } => result.pointer("/task/id").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    error_result(
        previous.id,
        &format!(
            "you chose to {action} the agent's question; its task `{task}` still waits for input (answer later \
             with `{}send_message` and task_id `{task}`, or cancel it with `{}cancel_task`)",
            bridge.prefix, bridge.prefix
        ),
    )
}

/// The agent's task id a bridged invocation sends to (its run request's `taskId`).
pub(super) fn task_of(inv: &Invocation) -> Option<&str> {
    inv.request.get("taskId").and_then(Value::as_str)
}

/// A call still running: say which task, and how to follow it. `task_id` is always the agent's
/// task id (the invocation is in `structuredContent` and `_meta`; the task tools take either).
fn running(inv: &Invocation, bridge: &Bridge) -> CallToolResult {
    let task = task_of(inv).map_or_else(|| inv.id.to_string(), str::to_string);
    let mut r = error_result(
        inv.id,
        &format!(
            "the agent is still working on this call (task {task}, {state}). Call `{prefix}get_task` with task_id \
             `{task}` for its outcome, or `{prefix}cancel_task` to stop it.",
            state = inv.state.name().as_str(),
            prefix = bridge.prefix
        ),
    );
    r.structured_content = Some(json!({
        "invocation": inv.id.to_string(), "taskId": task, "state": inv.state.name().as_str(),
        "taskTool": format!("{}{GET_TASK}", bridge.prefix)
    }));
    r
}

/// The elicitation that asks a request for input: its requested schema when an MCP form can
/// carry it (flat, primitive properties), else one text field.
pub(super) fn elicitation(message: &str, schema: Option<&Value>) -> BTreeMap<String, InputRequest> {
    let text = json!({"type": "object", "properties": {"text": {"type": "string", "description": "Your answer"}},
                      "required": ["text"]});
    let request = |schema: &Value| {
        serde_json::from_value::<InputRequest>(json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema}
        }))
        .ok()
    };
    let asked = schema.and_then(request).or_else(|| request(&text));
    asked.map(|r| BTreeMap::from([(ANSWER.to_string(), r)])).unwrap_or_default()
}

/// Where the artifact links of a result point: under the URL the request reached, each with a
/// signed grant for the caller it answers when the gateway signs links (so a caller without
/// credentials of its own, or whose token lacks `artifacts:read`, can fetch what it was given).
pub(super) struct LinkBase {
    url: String,
    grant: Option<(switchyard_contract::ArtifactLinks, Principal)>,
}

impl LinkBase {
    fn artifact(&self, id: switchyard_contract::ArtifactId) -> String {
        let plain = format!("{}/artifacts/{id}", self.url);
        match &self.grant {
            Some((links, who)) => {
                let now_s = u64::try_from(switchyard_contract::wall_clock_ms() / 1000).unwrap_or(0);
                format!("{plain}?grant={}", links.grant(who, id, now_s))
            }
            None => plain,
        }
    }
}

/// Content as a tool result: text and data parts as text (data also as `structuredContent`),
/// bytes as image, audio or embedded resources, artifacts as `resource_link`s to
/// `/artifacts/{id}` under `base`, links as `resource_link`s; the A2A task's ids in `_meta`.
pub(super) fn result_of(content: &Content, id: InvocationId, base: &LinkBase) -> CallToolResult {
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    let blocks: Vec<Value> = content
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Part::Text { text } => json!({"type": "text", "text": text}),
            Part::Data { data } => json!({"type": "text", "text": data.to_string()}),
            Part::Bytes { data, media_type, name } => {
                let mime = media_type.clone().unwrap_or_else(|| "application/octet-stream".into());
                if mime.starts_with("image/") || mime.starts_with("audio/") {
                    let kind = if mime.starts_with("image/") { "image" } else { "audio" };
                    json!({"type": kind, "data": b64(data), "mimeType": mime})
                } else {
                    let uri = format!("urn:switchyard:part:{i}:{}", name.as_deref().unwrap_or("bytes"));
                    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": b64(data)}})
                }
            }
            Part::Artifact { id, size, media_type, name } => json!({
                "type": "resource_link", "uri": base.artifact(*id),
                "name": name.clone().unwrap_or_else(|| id.to_string()), "mimeType": media_type, "size": size
            }),
            Part::Link { uri, media_type, name, description } => json!({
                "type": "resource_link", "uri": uri,
                "name": name.clone().unwrap_or_else(|| uri.rsplit('/').next().unwrap_or("link").to_string()),
                "mimeType": media_type, "description": description
            }),
        })
        .map(|mut b| {
            if let Some(o) = b.as_object_mut() {
                o.retain(|_, v| !v.is_null());
            }
            b
        })
        .collect();
    let blocks: Vec<ContentBlock> = match serde_json::from_value(Value::Array(blocks)) {
        Ok(b) => b,
        Err(e) => vec![ContentBlock::text(format!("the agent's answer cannot be shown over MCP: {e}"))],
    };
    let mut r = if content.is_error { CallToolResult::error(blocks) } else { CallToolResult::success(blocks) };
    r.structured_content = content.structured.clone().filter(Value::is_object);
    let meta = r.meta.get_or_insert_with(MetaObject::new);
    meta.0.insert(INVOCATION_META.into(), json!(id.to_string()));
    if !content.about.is_empty() {
        meta.0.insert(A2A_META.into(), Value::Object(content.about.clone()));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_renders_as_a_tool_result() {
        let id = InvocationId::new();
        let artifact = switchyard_contract::ArtifactId::new();
        let content = Content {
            parts: vec![
                Part::Text { text: "hello".into() },
                Part::Data { data: json!({"n": 1}) },
                Part::Bytes { data: vec![1, 2], media_type: Some("image/png".into()), name: None },
                Part::Bytes { data: vec![3], media_type: None, name: Some("x.bin".into()) },
                Part::Artifact {
                    id: artifact,
                    size: 9,
                    media_type: Some("application/pdf".into()),
                    name: Some("r.pdf".into()),
                },
                Part::Link { uri: "https://e.x/a.txt".into(), media_type: None, name: None, description: None },
            ],
            structured: Some(json!({"n": 1})),
            about: Map::from_iter([("taskId".to_string(), json!("t1"))]),
            ..Content::default()
        };
        let r = serde_json::to_value(result_of(&content, id, &LinkBase { url: "http://gw".into(), grant: None }))
            .unwrap_or_default();
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hello"}));
        assert_eq!(r["content"][1]["text"], json!("{\"n\":1}"));
        assert_eq!(r["content"][2]["type"], json!("image"));
        assert_eq!(r["content"][3]["resource"]["blob"], json!("Aw=="));
        assert_eq!(r["content"][4]["uri"], json!(format!("http://gw/artifacts/{artifact}")));
        assert_eq!(r["content"][4]["size"], json!(9));
        assert_eq!(r["content"][5]["name"], json!("a.txt"));
        assert_eq!(r["structuredContent"], json!({"n": 1}));
        assert_eq!(r["isError"], json!(false));
        assert_eq!(r["_meta"][A2A_META]["taskId"], json!("t1"));
    }

    #[test]
    fn a_request_for_input_is_one_elicitation_and_falls_back_to_text() {
        let flat = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let asked = elicitation("how many?", Some(&flat));
        let v = serde_json::to_value(&asked[ANSWER]).unwrap_or_default();
        assert_eq!(v["params"]["requestedSchema"]["properties"]["n"]["type"], json!("integer"));
        assert_eq!(v["params"]["message"], json!("how many?"));
        let nested = json!({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}});
        let v = serde_json::to_value(&elicitation("?", Some(&nested))[ANSWER]).unwrap_or_default();
        assert_eq!(v["params"]["requestedSchema"]["required"], json!(["text"]));
    }

    #[test]
    fn answers_are_read_from_the_one_input_response() {
        let accept = InputResponses::from([(ANSWER.into(), json!({"action": "accept", "content": {"text": "blue"}}))]);
        assert_eq!(
            answer_of(Some(accept), ANSWER).ok().and_then(Result::ok).and_then(|m| m.get("text").cloned()),
            Some(json!("blue"))
        );
        let decline = InputResponses::from([(ANSWER.into(), json!({"action": "decline"}))]);
        assert_eq!(answer_of(Some(decline), ANSWER).ok().and_then(Result::err), Some("decline".to_string()));
        assert!(answer_of(None, ANSWER).is_err());
    }
}
