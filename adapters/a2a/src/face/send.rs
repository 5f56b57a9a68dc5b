//! SendMessage and SendStreamingMessage: the run request, its durable invocation, and the
//! first answer (a message, or the task and its stream).

use super::*;
use switchyard_contract::client_stays;

impl Face {
    pub(super) async fn send(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: SendMessageRequest,
        streaming: bool,
    ) -> Result<Reply, A2aError> {
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
        let conf = req.configuration.unwrap_or(a2a::SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: None,
        });
        check_history(conf.history_length)?;
        if let Some(p) = &conf.task_push_notification_config {
            if !cfg.push_notifications {
                return Err(push::not_supported());
            }
            push::check_url(&p.url, &self.config.push)?;
        }
        // With dedupe, a resent message (same messageId, same content) is the same invocation
        // and the same task; without, every send is new.
        let content = if cfg.dedupes() {
            let v = serde_json::json!([&message, &conf.task_push_notification_config]);
            let canonical = serde_json_canonicalizer::to_string(&v).map_err(|e| A2aError::internal(e.to_string()))?;
            hex::encode(Sha256::digest(canonical.as_bytes()))
        } else {
            uuid::Uuid::now_v7().to_string()
        };
        // A follow-up's task as it was before this message: its stream starts there, so every
        // event of this run (its end included) follows the first snapshot.
        let mut before: Option<(Task, i64)> = None;
        let (task_id, context_id, new_task) = match message.task_id.as_deref().filter(|t| !t.is_empty()) {
            Some(tid) => {
                let rec = self.record(agent, &scope, tid).await?;
                let task = task_of(&rec)?;
                hub::ensure_open(&task)?;
                before = Some((task.clone(), rec.version));
                if let Some(c) = message.context_id.as_deref().filter(|c| !c.is_empty())
                    && c != task.context_id
                {
                    return Err(A2aError::invalid_params(format!(
                        "contextId `{c}` does not match task `{tid}` (context `{}`)",
                        task.context_id
                    )));
                }
                (task.id, task.context_id, false)
            }
            None => {
                let id = digest_id(&[&scope, &cfg.name, &message.message_id, &content]).to_string();
                let ctx = message.context_id.clone().filter(|c| !c.is_empty()).unwrap_or_else(|| {
                    digest_id(&[&scope, &cfg.name, &message.message_id, &content, "context"]).to_string()
                });
                (id, ctx, true)
            }
        };
        let run = RunRequest {
            scope: scope.clone(),
            agent: cfg.name.clone(),
            task_id: task_id.clone(),
            context_id,
            new_task,
            message: message.clone(),
            // The invocation's stored request carries the credentials sealed, never in clear.
            push: conf
                .task_push_notification_config
                .clone()
                .map(|p| self.hub.sealer().seal_config(&task_id, p))
                .transpose()?,
        };
        let key = if cfg.dedupes() {
            let d = Sha256::digest(format!("{scope}\0{}\0{}\0{content}", cfg.name, message.message_id).as_bytes());
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
            context: None,
        };
        let resent = |e: switchyard_contract::Error| {
            if e.kind == ErrorKind::Conflict {
                A2aError {
                    retry_safe: Some(e.retry_safe),
                    ..A2aError::invalid_params(format!(
                        "message `{}` conflicts with an earlier message with the same id",
                        message.message_id
                    ))
                }
            } else {
                A2aError::from(e)
            }
        };
        let blocking = !streaming && conf.return_immediately != Some(true);
        if blocking {
            let wait = Duration::from_millis(self.config.call_wait_ms);
            let done = self.submit_run(submission, Some(wait)).await.map_err(resent)?;
            let inv = done.invocation;
            if let InvocationState::Succeeded { result, .. } = &inv.state
                && let Some(m) = result.get("message")
            {
                let m: Message = serde_json::from_value(m.clone())
                    .map_err(|e| A2aError::new(Kind::InvalidAgentResponse, e.to_string()))?;
                return Ok(Reply::Send(SendMessageResponse::Message(m)));
            }
            if let InvocationState::Failed { error, .. } = &inv.state {
                // The agent's own error (an upstream agent's A2A error keeps its kind).
                let kind = Kind::from_failure(&error.code).unwrap_or(Kind::InvalidAgentResponse);
                return Err(A2aError::new(kind, error.message.clone()).about(inv.id, error.retry_safe));
            }
            return match self.hub.get(&scope, &task_id).await? {
                Some(rec) => {
                    Ok(Reply::Send(SendMessageResponse::Task(slice_history(task_of(&rec)?, conf.history_length))))
                }
                None if matches!(inv.state, InvocationState::Unknown { .. }) => Err(lost_send(inv.id)),
                None if inv.state.is_settled() => {
                    Err(A2aError::new(Kind::InvalidAgentResponse, format!("agent run {} started no task", inv.id)))
                }
                None => Err(A2aError::new(
                    Kind::Unavailable,
                    format!(
                        "agent run {} has not started its task yet; send the same message again to follow it",
                        inv.id
                    ),
                )),
            };
        }
        let inv = self.submit_run(submission, None).await.map_err(resent)?.invocation;
        let first = self.first_answer(&scope, &task_id, inv.id, &who.principal).await?;
        match first {
            First::Message(m) if streaming => {
                Ok(Reply::Stream(futures::stream::once(async move { Ok(StreamResponse::Message(m)) }).boxed()))
            }
            First::Message(m) => Ok(Reply::Send(SendMessageResponse::Message(m))),
            First::Task(rec) if streaming => {
                // A new task's stream starts at its creation, so every event is seen in order.
                let (task, after) = if new_task {
                    match self.hub.store().events_after(&rec.id, 0, 1).await?.into_iter().next() {
                        Some((seq, v)) => match serde_json::from_value::<StreamResponse>(v) {
                            Ok(StreamResponse::Task(t)) => (t, seq),
                            _ => (task_of(&rec)?, rec.version),
                        },
                        None => (task_of(&rec)?, rec.version),
                    }
                } else {
                    match before {
                        Some(b) => b,
                        None => (task_of(&rec)?, rec.version),
                    }
                };
                let first = futures::stream::once(async move { Ok(StreamResponse::Task(task)) });
                let rest = self.hub.follow(rec.id.clone(), after, true);
                Ok(Reply::Stream(first.chain(rest).boxed()))
            }
            First::Task(rec) => {
                Ok(Reply::Send(SendMessageResponse::Task(slice_history(task_of(&rec)?, conf.history_length))))
            }
        }
    }

    /// Submits a run (and with `wait`, waits for it). A resent message whose earlier send was
    /// reconciled `not applied` — it never reached the agent — runs again, under a key derived
    /// from that invocation: every resend follows the same chain, so it still runs once.
    async fn submit_run(
        &self,
        mut submission: Submission,
        wait: Option<Duration>,
    ) -> Result<switchyard_contract::Submitted, switchyard_contract::Error> {
        for _ in 0..8 {
            let out = match wait {
                Some(w) => self.engine.submit_and_wait(submission.clone(), w, client_stays()).await?.submitted,
                None => self.engine.submit(submission.clone()).await?,
            };
            let not_applied = matches!(&out.invocation.state, InvocationState::Failed { error, .. }
                if error.code == switchyard_contract::FailureCode::NotApplied);
            match (&submission.ingress_key, not_applied) {
                (Some(key), true) => {
                    let d = Sha256::digest(format!("{}\0{}", key.as_str(), out.invocation.id).as_bytes());
                    submission.ingress_key = Some(IngressKey::new(format!("a2a-{}", &hex::encode(d)[..40]))?);
                }
                _ => return Ok(out),
            }
        }
        Err(switchyard_contract::Error::conflict("this message was reconciled `not applied` too many times"))
    }

    /// Waits until the run's task exists (a follow-up's does at once), or the run answered
    /// with a message.
    async fn first_answer(
        &self,
        scope: &str,
        task_id: &str,
        inv: InvocationId,
        who: &Principal,
    ) -> Result<First, A2aError> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.config.call_wait_ms);
        loop {
            let state = self.engine.get(&who.tenant, inv).await?.state;
            if let InvocationState::Succeeded { result, .. } = &state
                && let Some(m) = result.get("message")
            {
                let m = serde_json::from_value(m.clone())
                    .map_err(|e| A2aError::new(Kind::InvalidAgentResponse, e.to_string()))?;
                return Ok(First::Message(m));
            }
            if let Some(rec) = self.hub.wait_for(scope, task_id, Duration::from_millis(100)).await? {
                return Ok(First::Task(rec));
            }
            if matches!(state, InvocationState::Unknown { .. }) {
                return Err(lost_send(inv));
            }
            if matches!(state, InvocationState::Failed { .. } | InvocationState::Canceled { .. }) {
                return Err(A2aError::new(Kind::InvalidAgentResponse, format!("agent run {inv} did not start a task")));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(A2aError::new(Kind::Unavailable, format!("agent run {inv} has not started yet")));
            }
        }
    }
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
