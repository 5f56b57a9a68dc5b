//! SendMessage and SendStreamingMessage: the run request, its durable invocation, and the
//! first answer (a message, or the task and its stream).

use std::collections::HashMap;

use super::*;
use switchyard_contract::Invocation;
use switchyard_contract::TraceParent;

/// How many earlier generations a resent message may follow to its current one (each link is
/// an earlier run that never reached the agent, or that ended before the dedupe window).
const CHAIN_MAX: usize = 32;

/// A decoded send: everything the run needs, checked, before anything is submitted.
pub(super) struct Send {
    pub(super) scope: TaskScope,
    pub(super) task_id: TaskId,
    pub(super) new_task: bool,
    message_id: String,
    pub(super) history_length: Option<i32>,
    /// A follow-up's task as it was before this message: its stream starts there, so every
    /// event of this run (its end included) follows the first snapshot.
    before: Option<(Task, i64)>,
    pub(super) submission: Submission,
    /// With dedupe: how long after its run ended a resend still answers with it.
    window: Option<Duration>,
    /// The content digest of this generation of the message (with dedupe).
    content: String,
}

impl A2aFace {
    /// parse → apply → render: [`parse_send`](Self::parse_send) checks the request and builds
    /// the run's submission; a blocking send waits for the run and renders its outcome
    /// ([`blocking`](Self::blocking)); a streaming or non-blocking one answers with the first
    /// thing the run produced ([`first`](Self::first)).
    pub(super) async fn send(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: SendMessageRequest,
        streaming: bool,
    ) -> Result<Reply, A2aError> {
        let blocking = !streaming && req.configuration.as_ref().and_then(|c| c.return_immediately) != Some(true);
        let mut send = self.parse_send(agent, who, req.clone(), None).await?;
        let message_id = send.message_id.clone();
        // A resend with the same id but other content is the caller's mistake, not a conflict of
        // the store: say which message.
        let resent = |e: switchyard_contract::Error| {
            if e.kind == ErrorKind::Conflict {
                A2aError {
                    retry_safe: Some(e.retry_safe),
                    ..A2aError::invalid_params(format!(
                        "message `{message_id}` conflicts with an earlier message with the same id"
                    ))
                }
            } else {
                A2aError::from(e)
            }
        };
        // A resend whose run ended longer ago than the dedupe window is a new message: its next
        // generation (content, key and new task derived from that run), which may have ended
        // too — a chain every replica walks alike, since each link is a stored invocation.
        let mut current = None;
        for _ in 0..CHAIN_MAX {
            let submitted = match self.submit_run(send.submission.clone()).await {
                Ok(submitted) => submitted,
                // Refused by the policy: nothing was admitted; the task says why.
                Err(e) if e.kind == ErrorKind::Forbidden && e.source == switchyard_contract::ErrorSource::Policy => {
                    return self.denied(agent, &send, &e.message, streaming).await;
                }
                Err(e) => return Err(resent(e)),
            };
            if !self.ended_before(&submitted, send.window).await? {
                current = Some(submitted.invocation);
                break;
            }
            let after = (send.content.clone(), submitted.invocation.id);
            send = self.parse_send(agent, who, req.clone(), Some(after)).await?;
        }
        let inv = current.ok_or_else(|| {
            A2aError::invalid_params(format!(
                "message `{message_id}` was sent too many times; send it with a new messageId"
            ))
        })?;
        if matches!(inv.state, InvocationState::AwaitingApproval) {
            self.held(agent, &send, &inv, streaming).await
        } else if blocking {
            let inv = self.until_answered(&send, inv).await?;
            self.blocking(&send, inv).await
        } else {
            self.first(send, inv.id, &who.principal, streaming).await
        }
    }

    /// Checks a send and builds its run request and submission; writes nothing. `after`: the
    /// content digest and run of the generation this send follows (its run ended longer ago
    /// than the dedupe window).
    async fn parse_send(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: SendMessageRequest,
        after: Option<(String, InvocationId)>,
    ) -> Result<Send, A2aError> {
        let cfg = &agent.config;
        let scope = Self::scope(who, req.tenant.as_ref());
        let message = req.message;
        if message.message_id.is_empty() {
            return Err(A2aError::invalid_params("message.messageId is required"));
        }
        if message.parts.is_empty() {
            return Err(A2aError::invalid_params("message.parts must not be empty"));
        }
        cfg.kind.admit(&message, &who.extensions)?;
        let push = req.configuration.as_ref().and_then(|c| c.task_push_notification_config.clone());
        let modes = req.configuration.as_ref().and_then(|c| c.accepted_output_modes.clone());
        let (metadata, grant, trace) = split_metadata(req.metadata);
        let trace = trace.or_else(|| who.trace.clone());
        let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
        check_history(history_length)?;
        if let Some(p) = &push {
            if !cfg.push_notifications {
                return Err(push::not_supported());
            }
            push::check_url(&p.url, &self.config.push)?;
        }
        // With dedupe, a resent message (same caller, messageId and content) is the same
        // invocation and the same task (its key; past the dedupe window, the message's next
        // generation: see [`send`](Self::send)); without, every send is new.
        let identity = format!("{}\0{}\0{}", scope.identity(), cfg.name, message.message_id);
        let content = if cfg.dedupes() {
            let digest = match after {
                Some((previous, run)) => format!("{previous}\0{run}"),
                None => serde_json_canonicalizer::to_string(&serde_json::json!([&message, &push, &metadata, &modes]))
                    .map_err(|e| A2aError::internal(e.to_string()))?,
            };
            hex::encode(Sha256::digest(digest.as_bytes()))
        } else {
            uuid::Uuid::now_v7().to_string()
        };
        let (task_id, context_id, before) = self.task_for(agent, &scope, &message, &content).await?;
        let new_task = before.is_none();
        if let Some(tools) = &agent.tools {
            tools.check(&who.principal, &message, before.as_ref().map(|(t, _)| t)).await?;
        }
        let run = RunRequest {
            // A new task's run reads only its own task: the same message sent with a broader
            // credential (`tasks:admin`) is the same run request.
            scope: if new_task { scope.own() } else { scope.clone() },
            agent: cfg.name.clone(),
            task_id: task_id.clone(),
            context_id,
            new_task,
            message: message.clone(),
            // The invocation's stored request carries the credentials sealed, never in clear.
            push: push.map(|p| self.hub.sealer().seal_config(&task_id, p)).transpose()?,
            metadata,
            accepted_output_modes: modes,
            arguments: None,
        };
        let key = if cfg.dedupes() {
            let d = Sha256::digest(format!("{identity}\0{content}").as_bytes());
            Some(IngressKey::new(format!("a2a-{}", &hex::encode(d)[..40])).map_err(A2aError::from)?)
        } else {
            None
        };
        let submission = Submission {
            principal: who.principal.clone(),
            upstream: cfg.upstream(),
            operation: "SendMessage".into(),
            request: serde_json::to_value(&run).map_err(|e| A2aError::internal(e.to_string()))?,
            ingress_key: key,
            ingress: switchyard_contract::Ingress::A2a,
            caller: None,
            context: None,
            grant,
            parent: None,
            trace,
        };
        Ok(Send {
            scope,
            task_id,
            new_task,
            message_id: message.message_id,
            history_length,
            before,
            submission,
            window: cfg.dedupes().then(|| cfg.dedupe_window()),
            content,
        })
    }

    /// The task a message belongs to: a follow-up's (which must be open, in the same context),
    /// with its snapshot before this message; or a new task's id and context, derived from the
    /// message so that a resend names the same task.
    async fn task_for(
        &self,
        agent: &AgentEntry,
        scope: &TaskScope,
        message: &Message,
        content: &str,
    ) -> Result<(TaskId, ContextId, Option<(Task, i64)>), A2aError> {
        let name = &agent.config.name;
        let Some(tid) = message.task_id.as_deref().filter(|t| !t.is_empty()) else {
            let scope = &scope.identity();
            let id = digest_id(&[scope, name, &message.message_id, content]).to_string();
            let ctx = message
                .context_id
                .clone()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| digest_id(&[scope, name, &message.message_id, content, "context"]).to_string());
            return Ok((id.into(), ctx.into(), None));
        };
        let rec = self.record(agent, scope, &TaskId::from(tid)).await?;
        let task = task_of(&rec)?;
        hub::ensure_open(&task)?;
        if let Some(c) = message.context_id.as_deref().filter(|c| !c.is_empty())
            && c != task.context_id
        {
            return Err(A2aError::invalid_params(format!(
                "contextId `{c}` does not match task `{tid}` (context `{}`)",
                task.context_id
            )));
        }
        Ok((rec.id.clone(), rec.context_id.clone(), Some((task, rec.version))))
    }

    /// A blocking send's answer once its run settled (or the wait ended): the agent's message,
    /// its error, or the task as it is.
    async fn blocking(&self, send: &Send, inv: Invocation) -> Result<Reply, A2aError> {
        if let InvocationState::Succeeded { result, .. } = &inv.state
            && let Some(m) = result.get("message")
        {
            let m: Message = serde_json::from_value(m.clone())
                .map_err(|e| A2aError::new(Kind::InvalidAgentResponse, e.to_string()))?;
            return Ok(Reply::Send(SendMessageResponse::Message(m)));
        }
        // A run that ended its task answers with it as committed (an ended task takes no more
        // changes): no need to read it again.
        if let InvocationState::Succeeded { result, .. } = &inv.state
            && let Some(Ok(task)) = result.get("task").map(|t| serde_json::from_value::<Task>(t.clone()))
            && task.status.state.is_terminal()
        {
            return Ok(Reply::Send(SendMessageResponse::Task(slice_history(task, send.history_length))));
        }
        if let InvocationState::Failed { error, .. } = &inv.state {
            return Err(run_failed(inv.id, error));
        }
        match self.hub.get(&send.scope, &send.task_id).await? {
            Some(rec) => Ok(Reply::Send(SendMessageResponse::Task(slice_history(task_of(&rec)?, send.history_length)))),
            None if matches!(inv.state, InvocationState::Unknown { .. }) => Err(lost_send(inv.id)),
            None if inv.state.is_settled() => {
                Err(A2aError::new(Kind::InvalidAgentResponse, format!("agent run {} started no task", inv.id)))
            }
            None => Err(A2aError::new(
                Kind::Unavailable,
                format!("agent run {} has not started its task yet; send the same message again to follow it", inv.id),
            )),
        }
    }

    /// A streaming or non-blocking send's answer: the agent's message, or its task — on a
    /// stream, followed by every later event of the task.
    async fn first(&self, send: Send, inv: InvocationId, who: &Principal, streaming: bool) -> Result<Reply, A2aError> {
        let rec = match self.first_answer(&send.scope, &send.task_id, inv, who).await? {
            First::Message(m) if streaming => {
                return Ok(Reply::Stream(futures::stream::once(async move { Ok(StreamResponse::Message(m)) }).boxed()));
            }
            First::Message(m) => return Ok(Reply::Send(SendMessageResponse::Message(m))),
            First::Task(rec) if !streaming => {
                let task = slice_history(task_of(&rec)?, send.history_length);
                return Ok(Reply::Send(SendMessageResponse::Task(task)));
            }
            First::Task(rec) => rec,
        };
        // A new task's stream starts at its creation, so every event is seen in order.
        let (task, after) = match (send.new_task, send.before) {
            (true, _) => match self.hub.store().events_after(&rec.id, 0, 1).await?.into_iter().next() {
                Some((seq, v)) => match serde_json::from_value::<StreamResponse>(v) {
                    Ok(StreamResponse::Task(t)) => (t, seq),
                    _ => (task_of(&rec)?, rec.version),
                },
                None => (task_of(&rec)?, rec.version),
            },
            (false, Some(before)) => before,
            (false, None) => (task_of(&rec)?, rec.version),
        };
        let first = futures::stream::once(async move { Ok(StreamResponse::Task(task)) });
        let rest = self.hub.follow(rec.id.clone(), after, true);
        Ok(Reply::Stream(first.chain(rest).boxed()))
    }

    /// Submits a run. A resent message whose earlier send was reconciled `not applied` — it
    /// never reached the agent — runs again, under a key derived from that invocation (and the
    /// same task): every resend follows the same chain, so it still runs once.
    async fn submit_run(
        &self,
        mut submission: Submission,
    ) -> Result<switchyard_contract::Submitted, switchyard_contract::Error> {
        for _ in 0..CHAIN_MAX {
            let out = self.engine.submit(submission.clone()).await?;
            let not_applied = matches!(&out.invocation.state, InvocationState::Failed { error, .. }
                if error.code == switchyard_contract::FailureCode::NotApplied);
            match &submission.ingress_key {
                Some(key) if not_applied => {
                    let d = Sha256::digest(format!("{}\0{}", key.as_str(), out.invocation.id).as_bytes());
                    submission.ingress_key = Some(IngressKey::new(format!("a2a-{}", &hex::encode(d)[..40]))?);
                }
                _ => return Ok(out),
            }
        }
        Err(switchyard_contract::Error::conflict("this message was reconciled `not applied` too many times"))
    }

    /// A blocking send's wait (at most `call_wait_ms`): until its run settles, or its task
    /// is in an interrupted state (`INPUT_REQUIRED`, or `AUTH_REQUIRED` while a tool call waits
    /// for approval), as A2A's blocking mode asks — or says its tool call's outcome is unknown
    /// (it waits for an operator, not for the agent). The run as it is then.
    async fn until_answered(&self, send: &Send, inv: Invocation) -> Result<Invocation, A2aError> {
        if inv.state.is_settled() {
            return Ok(inv);
        }
        let limit = Duration::from_millis(self.config.call_wait_ms);
        let tenant = inv.principal.tenant.clone();
        // This run's events: a new task's from its start, a follow-up's after its message.
        let after = send.before.as_ref().map_or(0, |(_, version)| *version);
        let interrupted = async {
            let mut events = self.hub.follow(send.task_id.clone(), after, false);
            while let Some(event) = events.next().await {
                if let Ok(StreamResponse::StatusUpdate(_)) = &event
                    && let Ok(Some(rec)) = self.hub.get(&send.scope, &send.task_id).await
                    && task_of(&rec)
                        .is_ok_and(|t| hub::is_interrupted(&t.status.state) || crate::tools::call_unknown(&t))
                {
                    return;
                }
            }
            // Ended: the run settles with it.
            std::future::pending::<()>().await;
        };
        tokio::select! {
            settled = self.engine.wait(&tenant, inv.id, limit) => Ok(settled?),
            () = interrupted => Ok(self.engine.get(&tenant, inv.id).await?),
        }
    }

    /// Whether `out` is an earlier send of this message (not just admitted) whose run ended
    /// longer than `window` ago, on the store's clock: a resend then is a new message.
    async fn ended_before(
        &self,
        out: &switchyard_contract::Submitted,
        window: Option<Duration>,
    ) -> Result<bool, switchyard_contract::Error> {
        let inv = &out.invocation;
        let Some(window) = window.filter(|_| !out.created && inv.state.is_terminal()) else { return Ok(false) };
        let age = self.engine.now().await?.saturating_sub(inv.updated_at_ms);
        Ok(age > i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
    }

    /// Waits until the run's task exists (a follow-up's does at once), or the run answered
    /// with a message. Both waits are woken by the change itself: the task's creation rings the
    /// hub, the run's outcome the engine; neither store is read in a loop. (A message reply
    /// creates no task, so the task alone cannot be the signal.)
    async fn first_answer(
        &self,
        scope: &TaskScope,
        task_id: &TaskId,
        inv: InvocationId,
        who: &Principal,
    ) -> Result<First, A2aError> {
        let limit = Duration::from_millis(self.config.call_wait_ms);
        let settled = tokio::select! {
            biased;
            created = self.hub.wait_for(scope, task_id, limit) => match created? {
                Some(rec) => return Ok(First::Task(rec)),
                None => return Err(A2aError::new(Kind::Unavailable, format!("agent run {inv} has not started yet"))),
            },
            settled = self.engine.wait(&who.tenant, inv, limit) => settled?,
        };
        if let InvocationState::Succeeded { result, .. } = &settled.state
            && let Some(m) = result.get("message")
        {
            let m = serde_json::from_value(m.clone())
                .map_err(|e| A2aError::new(Kind::InvalidAgentResponse, e.to_string()))?;
            return Ok(First::Message(m));
        }
        // Settled without a message: its task, if the run made one before it ended.
        if let Some(rec) = self.hub.get(scope, task_id).await? {
            return Ok(First::Task(rec));
        }
        Err(match settled.state {
            InvocationState::Unknown { .. } => lost_send(inv),
            // Refused before it made a task (an upstream agent's error for a first message).
            InvocationState::Failed { error, .. } => run_failed(inv, &error),
            InvocationState::Canceled { .. } => {
                A2aError::new(Kind::InvalidAgentResponse, format!("agent run {inv} did not start a task"))
            }
            _ => A2aError::new(Kind::Unavailable, format!("agent run {inv} has not started yet")),
        })
    }
}

/// A run's failure as the caller sees it: the agent's own error (an upstream agent's A2A error
/// keeps its kind).
fn run_failed(inv: InvocationId, error: &switchyard_contract::FailureRecord) -> A2aError {
    let kind = Kind::from_failure(&error.code).unwrap_or(Kind::InvalidAgentResponse);
    A2aError::new(kind, error.message.clone()).about(inv, error.retry_safe)
}

/// The gateway lost track of a send (it stopped mid-call) before the agent's task appeared:
/// the gateway's failure, not the agent's, and one it reconciles by itself.
fn lost_send(inv: InvocationId) -> A2aError {
    A2aError::new(
        Kind::Unavailable,
        format!(
            "the gateway lost track of this send (run {inv}) and is reconciling it; send the same message \
             again in a few seconds"
        ),
    )
    .about(inv, true)
}

enum First {
    Message(Message),
    Task(switchyard_contract::TaskRecord),
}

/// Where a send presents a grant: the request's `metadata`, as MCP's `_meta` does.
pub const GRANT_METADATA: &str = "dev.switchyard/grant";

/// The request's metadata without its grant and trace context, the grant, and the trace
/// context (`traceparent`, `tracestate`, as MCP's `_meta` carries them): both concern this send
/// only, so they are neither stored with the run nor passed on to the agent (the gateway sends
/// its own trace context), and a resend with another grant or trace (or none) is the same
/// message.
fn split_metadata(
    metadata: Option<HashMap<String, Value>>,
) -> (Option<HashMap<String, Value>>, Option<String>, Option<TraceParent>) {
    let Some(mut m) = metadata else { return (None, None, None) };
    let grant = m.remove(GRANT_METADATA).and_then(|v| v.as_str().map(str::to_string));
    let parent = m.remove("traceparent");
    let state = m.remove("tracestate");
    let trace = parent
        .as_ref()
        .and_then(Value::as_str)
        .and_then(|p| TraceParent::parse(p, state.as_ref().and_then(Value::as_str)));
    ((!m.is_empty()).then_some(m), grant, trace)
}
