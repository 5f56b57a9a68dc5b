//! tools/call as parse → apply → render: the catalog check ([`McpFace::callable`]), the rounds of
//! one call (each a durable invocation, submitted and waited for through the driving port), and
//! the rendering of each round's outcome ([`render`]) as a result, an error, a task, or a
//! request for input.

use super::relay::Questions;
use super::*;
use rmcp::model::{ClientResult, ElicitationAction, ServerRequest};
use switchyard_contract::{ErrorKind, ErrorSource, Invocation, Submitted, TraceParent};

/// Where a call is in its rounds. Round 1 is the client's request; each later round answers the
/// upstream's request for input and continues the invocation before it.
pub(super) struct Round {
    /// The client's idempotency key, if any.
    pub(super) key: Option<String>,
    /// The invocation this round continues.
    pub(super) prev: Option<String>,
    /// The upstream's own `requestState` from the previous round, passed back verbatim.
    up_state: Option<String>,
    pub(super) responses: Option<InputResponses>,
    pub(super) n: u32,
    /// The hold of the upstream's questions this round answers (a legacy upstream, a 2026-07-28
    /// client).
    held: Option<String>,
}

impl Round {
    /// The round's ingress key. Round n > 1 gets a key derived from the invocation it continues
    /// (and the client's key, if any), so a retry — or a replay — of that round's
    /// `requestState` attaches to the round's one invocation instead of calling the upstream
    /// again.
    pub(super) fn ingress_key(&self) -> Result<Option<IngressKey>, ErrorData> {
        round_key(self.key.as_deref(), self.prev.as_deref())
    }
}

/// The ingress key of a round: the client's `key` for the first, and for one that continues
/// invocation `prev`, a key derived from it (and the client's key, if any).
pub(super) fn round_key(key: Option<&str>, prev: Option<&str>) -> Result<Option<IngressKey>, ErrorData> {
    match (key, prev) {
        (Some(k), None) => Some(k.to_string()),
        (Some(k), Some(p)) => Some(format!("{k}/{p}")),
        (None, Some(p)) => Some(format!("mrtr/{p}")),
        (None, None) => None,
    }
    .map(IngressKey::new)
    .transpose()
    .map_err(|e| invalid(e.message.to_string()))
}

impl Round {
    /// The round's invocation as submitted: the upstream's own tool name, the client's
    /// arguments, and what continues the previous round.
    fn submission(
        &mut self,
        entry: &crate::catalog::ToolEntry,
        params: &CallToolRequestParams,
        who: &Principal,
        relay: &Arc<McpRelay>,
        grant: Option<&str>,
    ) -> Result<Submission, ErrorData> {
        let request = ToolRequest {
            tool: entry.tool.name.to_string(),
            arguments: params.arguments.clone(),
            input_responses: self.responses.take(),
            request_state: self.up_state.take(),
            continues: self.prev.clone(),
        };
        Ok(Submission {
            principal: who.clone(),
            upstream: entry.upstream.clone(),
            operation: entry.tool.name.to_string(),
            request: serde_json::to_value(&request).map_err(|e| internal(e.to_string()))?,
            ingress_key: self.ingress_key()?,
            ingress: switchyard_contract::Ingress::Mcp,
            caller: None,
            context: Some(CallContext::new(relay.clone())),
            grant: grant.map(str::to_string),
            parent: None,
            trace: None,
        })
    }
}

/// What a round asks the client: the questions, the upstream's own state to pass back with the
/// answers, and who asks (for the message when it asks too often).
pub(super) struct Question {
    pub(super) requests: Option<std::collections::BTreeMap<String, rmcp::model::InputRequest>>,
    pub(super) up_state: Option<String>,
    pub(super) who: &'static str,
}

/// How waiting for one round ended.
pub(super) enum Ran {
    /// The invocation as it is now (settled, or still running at the deadline).
    Settled(Invocation),
    /// The answer, with nothing more to wait for (a policy denial, or the client left).
    Answer(CallToolResult),
    /// The upstream asks the client something mid-call (held for the client's next round).
    Asked(Submitted),
}

/// What one round's invocation came to.
pub(super) enum Rendered {
    Answer(CallToolResponse),
    /// The upstream asks the client for input before it can answer.
    AskInput(InputRequiredResult),
}

impl McpFace {
    pub(super) async fn call(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = params.name.to_string();
        if let Some((bridge, op)) = self.bridged(&name) {
            return self.call_bridged(bridge, op, params, ctx).await;
        }
        let entry = self.callable(&name).await?;
        let (support, tasks) = self.task_mode(&entry, &ctx)?;
        let wait = if tasks { self.shared.task_after } else { self.shared.call_wait };
        let who = principal(&ctx)?;
        let mut round = self.first_round(&params, &ctx, &who, &name)?;
        let mut relay = self.call_relay(&ctx);
        let grant = request_meta(&params, &ctx, GRANT_META).and_then(Value::as_str).map(str::to_string);
        let trace = trace_context(&params, &ctx);
        loop {
            let ran = match round.held.take() {
                Some(hold) => {
                    let (ran, held) = self.resume_held(&hold, &mut round, wait, &ctx, &who).await?;
                    relay = held;
                    ran
                }
                None => {
                    let mut submission = round.submission(&entry, &params, &who, &relay, grant.as_deref())?;
                    submission.trace.clone_from(&trace);
                    let keyed = round.key.is_some();
                    self.run_round(submission, wait, &ctx, &who, keyed, relay.questions.clone()).await?
                }
            };
            let mut inv = match ran {
                Ran::Settled(inv) => inv,
                Ran::Answer(answer) => return Ok(CallToolResponse::Complete(answer)),
                Ran::Asked(submitted) => return self.hold(submitted, relay, &round, &who, &name),
            };
            // Questions the upstream asks from here on have no one to answer them.
            if let Some(q) = &relay.questions {
                q.close();
            }
            if self.shared.wait_for_approval && !tasks {
                inv = self.decided(inv, &who, &ctx).await?;
            }
            // A task: the call is still running or waits for approval, or the tool always
            // answers with one (unless this round only asks for input, which stays an MRTR round).
            let open = !inv.state.is_settled() || matches!(inv.state, InvocationState::AwaitingApproval);
            if tasks && (open || support == TaskSupport::Required && !asks_input(&inv)) {
                return Ok(CallToolResponse::Task(CreateTaskResult::new(self.task_of(&inv))));
            }
            if matches!(inv.state, InvocationState::AwaitingApproval) {
                let reason = self.shared.engine.hold_reason(&inv).await;
                return Ok(CallToolResponse::Complete(held_result(inv.id, reason.as_deref())));
            }
            let asked = match render(&inv)? {
                Rendered::Answer(answer) => return Ok(answer),
                Rendered::AskInput(asked) => asked,
            };
            let question = Question { requests: asked.input_requests, up_state: asked.request_state, who: "upstream" };
            if let Some(answer) = self.ask_next(&mut round, inv.id, question, &ctx, &who, &name).await? {
                return Ok(answer);
            }
        }
    }

    /// After round `round` (invocation `inv`) asked the client for input: a 2026-07-28 client
    /// gets the questions with the sealed state of the next round (the answer to return); a
    /// legacy client is asked through server→client requests, and its answers make the next
    /// round (`None`: go on), up to [`MAX_ROUNDS`]. One copy for native and bridged tools.
    pub(super) async fn ask_next(
        &self,
        round: &mut Round,
        inv: InvocationId,
        question: Question,
        ctx: &RequestContext<RoleServer>,
        who: &Principal,
        name: &str,
    ) -> Result<Option<CallToolResponse>, ErrorData> {
        round.prev = Some(inv.to_string());
        if modern(ctx) {
            let sealed = Sealed {
                prev: round.prev.clone(),
                up: question.up_state,
                key: round.key.clone(),
                round: round.n,
                held: None,
            };
            let state = self.seal(who, "tool", name, &sealed)?;
            let asked = InputRequiredResult::new(question.requests, Some(state));
            return Ok(Some(CallToolResponse::InputRequired(asked)));
        }
        if round.n >= MAX_ROUNDS {
            let answer = error_result(inv, &format!("the {} asked for input too many times", question.who));
            return Ok(Some(CallToolResponse::Complete(answer)));
        }
        round.responses = Some(self.ask_legacy(&question.requests.unwrap_or_default(), ctx).await?);
        (round.up_state, round.n) = (question.up_state, round.n + 1);
        Ok(None)
    }

    /// Submits one round and waits for it: until it settles, the deadline passes, the client
    /// stops waiting, or (with `questions`) the upstream asks the client something.
    pub(super) async fn run_round(
        &self,
        submission: Submission,
        wait: Duration,
        ctx: &RequestContext<RoleServer>,
        who: &Principal,
        keyed: bool,
        questions: Option<Arc<Questions>>,
    ) -> Result<Ran, ErrorData> {
        let ct = ctx.ct.clone();
        let asked = questions.clone();
        // The engine's wait ends when the client goes — or when a question arrives for it.
        let gone = Box::pin(async move {
            tokio::select! {
                () = ct.cancelled() => {}
                () = async { match &asked { Some(q) => q.wait().await, None => std::future::pending().await } } => {}
            }
        });
        let waited = match self.shared.engine.submit_and_wait(submission, wait, gone).await {
            Ok(waited) => waited,
            // A policy denial is the tool's answer, not a protocol error: a model reads it and
            // adapts.
            Err(e) if e.source == ErrorSource::Policy && e.kind == ErrorKind::Forbidden => {
                return Ok(Ran::Answer(denied_result(&e)));
            }
            Err(e) => return Err(crate::error::rpc_error(&e, None)),
        };
        if waited.client_gone {
            if !ctx.ct.is_cancelled() && questions.is_some_and(|q| q.pending()) {
                return Ok(Ran::Asked(waited.submitted));
            }
            return Ok(Ran::Answer(self.client_gone(ctx.id.clone(), who, &waited.submitted, keyed)));
        }
        Ok(Ran::Settled(waited.submitted.invocation))
    }

    /// A held call, waited for until a person decides it (approved and run, denied, or expired)
    /// or its client gives up: where the client cannot come back for it (`switchyard stdio`).
    /// A client that declared elicitation is asked too, and its person's answer decides it.
    async fn decided(
        &self,
        mut inv: Invocation,
        who: &Principal,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Invocation, ErrorData> {
        let engine = &self.shared.engine;
        let held = inv.clone();
        let mut asking = std::pin::pin!(self.ask_person(&held, ctx));
        let mut asked = false;
        while matches!(inv.state, InvocationState::AwaitingApproval) {
            tokio::select! {
                () = ctx.ct.cancelled() => return Ok(inv),
                answer = &mut asking, if !asked => {
                    asked = true;
                    // Recorded as the person at the client, not as the caller (who may not
                    // approve its own call); one decided elsewhere first stays decided.
                    let by = Principal::new(who.tenant.clone(), format!("{} (in the MCP client)", who.subject));
                    let decided = match answer {
                        Some(true) => engine.approve(&by, inv.id).await.map(drop),
                        Some(false) => engine.deny(&by, inv.id, "declined in the MCP client".into()).await.map(drop),
                        None => Ok(()),
                    };
                    if let Err(e) = decided {
                        tracing::debug!(error = %e, "the client's decision was not recorded");
                    }
                }
                () = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
            inv = engine.get(&who.tenant, inv.id).await.map_err(|e| crate::error::rpc_error(&e, Some(inv.id)))?;
        }
        engine
            .wait(&who.tenant, inv.id, self.shared.call_wait)
            .await
            .map_err(|e| crate::error::rpc_error(&e, Some(inv.id)))
    }

    /// Asks the person at the client (form elicitation, when the client declared it) whether the
    /// held call may run, showing its tool and arguments: `Some(true)` approve, `Some(false)`
    /// deny; `None` no answer (the form canceled, or answered without the field), and never
    /// when the client cannot be asked.
    async fn ask_person(&self, inv: &Invocation, ctx: &RequestContext<RoleServer>) -> Option<bool> {
        let declared = ctx.peer.peer_info().is_some_and(|i| i.capabilities.elicitation.is_some());
        if !declared {
            return std::future::pending().await;
        }
        let reason = self.shared.engine.hold_reason(inv).await.unwrap_or_else(|| "held by the policy".into());
        let arguments = inv.request.get("arguments").cloned().unwrap_or_default();
        let message = format!("`{}` waits for your approval ({reason}). Arguments: {arguments}", inv.target.operation);
        let params = serde_json::from_value(json!({"mode": "form", "message": message, "requestedSchema": {
            "type": "object",
            "properties": {"approve": {"type": "boolean", "title": "Run this call",
                "description": "Yes runs it once, with exactly these arguments; no refuses it."}},
            "required": ["approve"]}}))
        .ok()?;
        let request = ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
        match ctx.peer.send_request(request).await {
            Ok(ClientResult::ElicitResult(r)) => match r.action {
                ElicitationAction::Accept => r.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool),
                ElicitationAction::Decline => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// The catalog entry for `name`, if this endpoint exposes it and its schema is approved.
    async fn callable(&self, name: &str) -> Result<crate::catalog::ToolEntry, ErrorData> {
        self.shared.catalog.refresh_approvals().await;
        let entry = self
            .shared
            .catalog
            .tool(name, self.includes())
            .filter(|t| self.server.exposes(&t.exposed))
            .ok_or_else(|| invalid(format!("unknown tool `{name}`")))?;
        if !entry.approved {
            return Err(ErrorData::invalid_params(
                format!(
                    "tool `{name}` is withheld: upstream `{}` changed its schema since it was approved; an operator \
                     must review and run `switchyard upstreams approve {} --tool {}`",
                    entry.upstream, entry.upstream, entry.tool.name
                ),
                Some(json!({ "tool": name, "reason": "schema_changed" })),
            ));
        }
        Ok(entry)
    }

    /// The tool's task support and whether this call may be answered with a task
    /// ([`super::tasks::may_become_task`]).
    fn task_mode(
        &self,
        entry: &crate::catalog::ToolEntry,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(TaskSupport, bool), ErrorData> {
        let support = self.task_support(&entry.upstream, &entry.tool.name);
        Ok((support, super::tasks::may_become_task(support, ctx)?))
    }

    /// The call's first round: a fresh call (with the client's idempotency key, if any), or the
    /// continuation a sealed `requestState` names (checked against the caller and the tool).
    pub(super) fn first_round(
        &self,
        params: &CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
        who: &Principal,
        name: &str,
    ) -> Result<Round, ErrorData> {
        let responses = params.input_responses.clone();
        if let Some(state) = params.request_state.as_deref() {
            let sealed = self.open(who, "tool", name, state)?;
            return Ok(Round {
                key: sealed.key,
                prev: sealed.prev,
                up_state: sealed.up,
                responses,
                n: sealed.round + 1,
                held: sealed.held,
            });
        }
        let key = request_meta(params, ctx, IDEMPOTENCY_KEY);
        let key = match key {
            Some(k) => {
                let k = k.as_str().ok_or_else(|| invalid(format!("_meta.{IDEMPOTENCY_KEY} must be a string")))?;
                IngressKey::new(k).map_err(|e| invalid(format!("_meta.{IDEMPOTENCY_KEY}: {}", e.message)))?;
                Some(k.to_string())
            }
            None => None,
        };
        Ok(Round { key, prev: None, up_state: None, responses, n: 1, held: None })
    }
}

/// The value of `key` in the call's `_meta` (in the params, or where rmcp put it: the context).
pub(super) fn request_meta<'a>(
    params: &'a CallToolRequestParams,
    ctx: &'a RequestContext<RoleServer>,
    key: &str,
) -> Option<&'a Value> {
    params.meta.as_ref().and_then(|m| m.get(key)).or_else(|| ctx.meta.get(key))
}

/// The caller's W3C trace context: `traceparent` and `tracestate` in the request's `_meta`
/// (SEP-414), else the HTTP request's headers of the same names.
pub(super) fn trace_context(params: &CallToolRequestParams, ctx: &RequestContext<RoleServer>) -> Option<TraceParent> {
    let meta = |k: &str| request_meta(params, ctx, k).and_then(Value::as_str);
    if let Some(parent) = meta("traceparent") {
        return TraceParent::parse(parent, meta("tracestate"));
    }
    let headers = &ctx.extensions.get::<axum::http::request::Parts>()?.headers;
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    TraceParent::parse(header("traceparent")?, header("tracestate"))
}

/// Where an MCP client presents a grant for a call: `_meta["dev.switchyard/grant"]`.
pub const GRANT_META: &str = "dev.switchyard/grant";

/// A call the policy enforcement point refused: nothing was admitted.
pub(super) fn denied_result(e: &switchyard_contract::Error) -> CallToolResult {
    let mut r =
        CallToolResult::error(vec![ContentBlock::text(format!("refused by the gateway's policy: {}", e.message))]);
    r.structured_content = Some(json!({ "state": "denied", "reason": e.message, "retrySafe": e.retry_safe }));
    r
}

/// A call the policy enforcement point holds (saying why, when known): it runs once a human
/// approves it.
fn held_result(id: InvocationId, reason: Option<&str>) -> CallToolResult {
    let why = reason.map(|r| format!(": {r}")).unwrap_or_default();
    let mut r = error_result(
        id,
        &format!(
            "the call waits for approval under the gateway's policy{why} (invocation {id}); it runs once approved. \
             Retry with the same idempotency key to attach to it and get its outcome."
        ),
    );
    let mut sc = json!({ "invocation": id.to_string(), "state": "awaiting_approval" });
    if let (Some(reason), Some(o)) = (reason, sc.as_object_mut()) {
        o.insert("reason".into(), json!(reason));
    }
    r.structured_content = Some(sc);
    r
}

/// A settled (or still running) round as the client sees it.
pub(super) fn render(inv: &Invocation) -> Result<Rendered, ErrorData> {
    let complete = |r: CallToolResult| Ok(Rendered::Answer(CallToolResponse::Complete(r)));
    let result = match &inv.state {
        InvocationState::Succeeded { result, .. } => result.clone(),
        // The upstream's JSON-RPC error, passed on with its own code and data; the gateway adds
        // the invocation under its own key (to object data, or as the data when there is none).
        InvocationState::Failed { error, .. } if error.code == FailureCode::RpcError => {
            let d = error.details.clone().unwrap_or(Value::Null);
            let code = d.get("code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok());
            let mut data = d.get("data").cloned().unwrap_or(Value::Null);
            if data.is_null() {
                data = json!({});
            }
            if let Some(obj) = data.as_object_mut() {
                obj.insert(super::INVOCATION_META.into(), json!(inv.id.to_string()));
            }
            return Err(ErrorData::new(ErrorCode(code.unwrap_or(-32603)), error.message.clone(), Some(data)));
        }
        InvocationState::Failed { error, .. } => {
            let mut r = error_result(inv.id, &format!("the call failed ({}): {}", error.code, error.message));
            r.structured_content = Some(json!({ "invocation": inv.id.to_string(), "state": "failed",
                "code": error.code, "retrySafe": error.retry_safe }));
            return complete(r);
        }
        InvocationState::Unknown { reason, .. } => return complete(unknown_result(inv.id, reason)),
        InvocationState::Canceled { .. } => return complete(error_result(inv.id, "the call was canceled")),
        InvocationState::AwaitingApproval => return complete(held_result(inv.id, None)),
        other => return complete(pending_result(inv.id, other.name().as_str())),
    };
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        let asked = serde_json::from_value(result).map_err(|e| internal(format!("stored input_required: {e}")))?;
        return Ok(Rendered::AskInput(asked));
    }
    // An operator's reconciliation may record any JSON: shown as text if it is not a tool result.
    let mut r: CallToolResult = serde_json::from_value(result.clone())
        .unwrap_or_else(|_| CallToolResult::success(vec![ContentBlock::text(result.to_string())]));
    let meta = r.meta.get_or_insert_with(MetaObject::new);
    meta.0.insert(INVOCATION_META.into(), json!(inv.id.to_string()));
    complete(r)
}
