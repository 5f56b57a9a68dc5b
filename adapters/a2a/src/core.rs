//! The operation core: the eleven A2A operations as one enum, handled once for every binding.
//! Bindings decode into [`Operation`], call [`Face::handle`] with the caller and the service
//! parameters, and encode the [`Reply`] or [`A2aError`] in their own framing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskState,
    TaskStatus,
};
use base64::Engine as _;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_contract::{
    Engine, ErrorKind, IngressKey, InvocationId, InvocationState, Invocations, Principal, Submission, TaskQuery,
    TenantId,
};

use crate::agent::RunRequest;
use crate::config::{A2aConfig, AgentConfig};
use crate::error::{A2aError, Kind, Profile};
use crate::hub::{self, Change, Hub, slice_history, state_name, task_of};
use crate::push;

/// One decoded request.
#[derive(Debug, Clone)]
pub enum Operation {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl Operation {
    /// The operation's A2A method name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SendMessage(_) => "SendMessage",
            Self::SendStreamingMessage(_) => "SendStreamingMessage",
            Self::GetTask(_) => "GetTask",
            Self::ListTasks(_) => "ListTasks",
            Self::CancelTask(_) => "CancelTask",
            Self::SubscribeToTask(_) => "SubscribeToTask",
            Self::CreatePushConfig(_) => "CreateTaskPushNotificationConfig",
            Self::GetPushConfig(_) => "GetTaskPushNotificationConfig",
            Self::ListPushConfigs(_) => "ListTaskPushNotificationConfigs",
            Self::DeletePushConfig(_) => "DeleteTaskPushNotificationConfig",
            Self::GetExtendedAgentCard(_) => "GetExtendedAgentCard",
        }
    }

    /// Decodes JSON-RPC `params` (or an HTTP+JSON body) for `method`. `Ok(None)`: no such method.
    pub fn decode(method: &str, params: Value) -> Result<Option<Self>, A2aError> {
        fn de<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, A2aError> {
            serde_json::from_value(v).map_err(|e| A2aError::invalid_params(format!("invalid params: {e}")))
        }
        let params = if params.is_null() { Value::Object(Default::default()) } else { camelize(params) };
        if !params.is_object() {
            return Err(A2aError::invalid_params("params must be an object"));
        }
        Ok(Some(match method {
            "SendMessage" => Self::SendMessage(de(params)?),
            "SendStreamingMessage" => Self::SendStreamingMessage(de(params)?),
            "GetTask" => Self::GetTask(de(params)?),
            "ListTasks" => Self::ListTasks(de(params)?),
            "CancelTask" => Self::CancelTask(de(params)?),
            "SubscribeToTask" => Self::SubscribeToTask(de(params)?),
            "CreateTaskPushNotificationConfig" => Self::CreatePushConfig(de(params)?),
            "GetTaskPushNotificationConfig" => Self::GetPushConfig(de(params)?),
            "ListTaskPushNotificationConfigs" => Self::ListPushConfigs(de(params)?),
            "DeleteTaskPushNotificationConfig" => Self::DeletePushConfig(de(params)?),
            "GetExtendedAgentCard" => Self::GetExtendedAgentCard(de(params)?),
            _ => return Ok(None),
        }))
    }

    pub fn is_streaming(&self) -> bool {
        matches!(self, Self::SendStreamingMessage(_) | Self::SubscribeToTask(_))
    }
}

/// ProtoJSON parsers accept a field's proto name as well as its lowerCamel JSON name: rewrites
/// `task_id` to `taskId` in message fields, leaving user data (`metadata`, `data`, `params`:
/// `google.protobuf.Struct`/`Value` contents) untouched.
fn camelize(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = if k.contains('_') {
                        let mut out = String::with_capacity(k.len());
                        let mut up = false;
                        for c in k.chars() {
                            if c == '_' {
                                up = true;
                            } else if up {
                                out.extend(c.to_uppercase());
                                up = false;
                            } else {
                                out.push(c);
                            }
                        }
                        out
                    } else {
                        k
                    };
                    let v = if matches!(key.as_str(), "metadata" | "data" | "params") { v } else { camelize(v) };
                    (key, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camelize).collect()),
        other => other,
    }
}

/// What an operation answers.
pub enum Reply {
    Send(SendMessageResponse),
    Stream(BoxStream<'static, Result<StreamResponse, A2aError>>),
    Task(Task),
    Tasks(ListTasksResponse),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    Empty,
    Card(Value),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Send(_) => "Reply::Send",
            Self::Stream(_) => "Reply::Stream",
            Self::Task(_) => "Reply::Task",
            Self::Tasks(_) => "Reply::Tasks",
            Self::PushConfig(_) => "Reply::PushConfig",
            Self::PushConfigs(_) => "Reply::PushConfigs",
            Self::Empty => "Reply::Empty",
            Self::Card(_) => "Reply::Card",
        })
    }
}

/// Who calls, with which service parameters, and the tenant named by the request path.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    /// `A2A-Version` (header, query parameter or gRPC metadata); `None` when absent.
    pub version: Option<String>,
    /// `A2A-Extensions`.
    pub extensions: Vec<String>,
    /// The `/{tenant}/…` path segment, if any.
    pub path_tenant: Option<String>,
    /// The `Host` the request came to (for card URLs when no public URL is configured).
    pub host: Option<String>,
}

impl Caller {
    pub fn parse_extensions(raw: Option<&str>) -> Vec<String> {
        raw.map(|s| s.split(',').map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect()).unwrap_or_default()
    }
}

/// The protocol version served.
pub const SUPPORTED_VERSION: &str = "1.0";

/// Refuses requests for any version but 1.0 (a missing header means 0.3, spec §3.2.6).
pub fn check_version(v: Option<&str>) -> Result<(), A2aError> {
    let v = v.map(str::trim).filter(|v| !v.is_empty()).unwrap_or("0.3");
    if v == SUPPORTED_VERSION || v == "1" {
        Ok(())
    } else {
        Err(A2aError::new(
            Kind::VersionNotSupported,
            format!("A2A version {v} is not supported; this agent speaks 1.0"),
        ))
    }
}

/// One exposed agent.
#[derive(Debug)]
pub struct AgentEntry {
    pub config: AgentConfig,
}

/// The A2A face of the gateway.
#[derive(Debug, Clone)]
pub struct Face {
    pub(crate) engine: Engine,
    pub(crate) hub: Hub,
    pub(crate) config: Arc<A2aConfig>,
    pub(crate) agents: Arc<HashMap<String, Arc<AgentEntry>>>,
    /// Upstream agents by agent name (cancel reaches them too).
    pub(crate) proxies: Arc<HashMap<String, Arc<crate::proxy::Proxy>>>,
    /// Signs cards, when configured.
    pub(crate) signer: Option<Arc<crate::card::CardSigner>>,
    /// The card's `securitySchemes` and `securityRequirements`, when callers must authenticate.
    pub(crate) security: Option<Arc<(Value, Value)>>,
}

fn digest_id(parts: &[&str]) -> uuid::Uuid {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

const PAGE_DEFAULT: i32 = 50;
const PAGE_MAX: i32 = 100;

fn check_history(n: Option<i32>) -> Result<(), A2aError> {
    match n {
        Some(n) if n < 0 => Err(A2aError::invalid_params("historyLength must not be negative")),
        _ => Ok(()),
    }
}

impl Face {
    pub fn profile(&self) -> Profile {
        self.config.error_profile
    }

    pub fn agent(&self, name: &str) -> Option<Arc<AgentEntry>> {
        self.agents.get(name).cloned()
    }

    /// The first configured agent (served at the root card and on gRPC).
    pub fn default_agent(&self) -> Option<Arc<AgentEntry>> {
        self.config.agents.first().and_then(|a| self.agent(&a.name))
    }

    fn scope(who: &Caller, tenant: Option<&String>) -> String {
        let t = tenant.filter(|t| !t.is_empty()).or(who.path_tenant.as_ref()).map_or("", String::as_str);
        format!("{}/{}", who.principal.tenant, t)
    }

    /// Handles one operation for `agent`.
    pub async fn handle(&self, agent: &AgentEntry, who: &Caller, op: Operation) -> Result<Reply, A2aError> {
        use tracing::Instrument as _;
        let span = tracing::info_span!(
            "a2a",
            agent = %agent.config.name,
            operation = op.name(),
            tenant = %who.principal.tenant,
        );
        async {
            let reply = self.operate(agent, who, op).await?;
            self.hydrate(&who.principal.tenant, reply).await
        }
        .instrument(span)
        .await
    }

    /// Puts back the bytes of artifact parts kept in the artifact store (the caller's only).
    async fn hydrate(&self, tenant: &TenantId, reply: Reply) -> Result<Reply, A2aError> {
        let t = Some(tenant);
        Ok(match reply {
            Reply::Send(SendMessageResponse::Task(mut task)) => {
                self.hub.hydrate_task(t, &mut task).await?;
                Reply::Send(SendMessageResponse::Task(task))
            }
            Reply::Task(mut task) => {
                self.hub.hydrate_task(t, &mut task).await?;
                Reply::Task(task)
            }
            Reply::Tasks(mut list) => {
                for task in &mut list.tasks {
                    self.hub.hydrate_task(t, task).await?;
                }
                Reply::Tasks(list)
            }
            Reply::Stream(events) => {
                let (hub, tenant) = (self.hub.clone(), tenant.clone());
                Reply::Stream(
                    events
                        .then(move |ev| {
                            let (hub, tenant) = (hub.clone(), tenant.clone());
                            async move {
                                let mut ev = ev?;
                                hub.hydrate_event(Some(&tenant), &mut ev).await?;
                                Ok(ev)
                            }
                        })
                        .boxed(),
                )
            }
            other => other,
        })
    }

    async fn operate(&self, agent: &AgentEntry, who: &Caller, op: Operation) -> Result<Reply, A2aError> {
        check_version(who.version.as_deref())?;
        let missing: Vec<&String> =
            agent.config.required_extensions.iter().filter(|e| !who.extensions.contains(e)).collect();
        if !missing.is_empty() {
            return Err(A2aError::new(
                Kind::ExtensionSupportRequired,
                format!("required extensions not declared in A2A-Extensions: {missing:?}"),
            ));
        }
        let cfg = &agent.config;
        let push_op = matches!(
            op,
            Operation::CreatePushConfig(_)
                | Operation::GetPushConfig(_)
                | Operation::ListPushConfigs(_)
                | Operation::DeletePushConfig(_)
        );
        if push_op && !cfg.push_notifications {
            return Err(push::not_supported());
        }
        if op.is_streaming() && !cfg.streaming {
            return Err(A2aError::new(Kind::UnsupportedOperation, "this agent does not support streaming"));
        }
        match op {
            Operation::SendMessage(req) => self.send(agent, who, req, false).await,
            Operation::SendStreamingMessage(req) => self.send(agent, who, req, true).await,
            Operation::GetTask(req) => {
                check_history(req.history_length)?;
                let task = self.load(agent, &Self::scope(who, req.tenant.as_ref()), &req.id).await?;
                Ok(Reply::Task(slice_history(task, req.history_length)))
            }
            Operation::ListTasks(req) => self.list(agent, who, req).await.map(Reply::Tasks),
            Operation::CancelTask(req) => self.cancel(agent, who, req).await.map(Reply::Task),
            Operation::SubscribeToTask(req) => {
                let scope = Self::scope(who, req.tenant.as_ref());
                let rec = self.record(agent, &scope, &req.id).await?;
                let task = task_of(&rec)?;
                if task.status.state.is_terminal() {
                    return Err(A2aError::new(
                        Kind::UnsupportedOperation,
                        format!("task `{}` is {}: nothing to subscribe to", task.id, state_name(&task.status.state)),
                    ));
                }
                let first = futures::stream::once(async move { Ok(StreamResponse::Task(task)) });
                let rest = self.hub.follow(rec.id.clone(), rec.version, false);
                Ok(Reply::Stream(first.chain(rest).boxed()))
            }
            Operation::CreatePushConfig(cfg_req) => {
                let scope = Self::scope(who, cfg_req.tenant.as_ref());
                self.record(agent, &scope, &cfg_req.task_id).await?;
                push::check_url(&cfg_req.url, &self.config.push)?;
                let task_id = cfg_req.task_id.clone();
                Ok(Reply::PushConfig(push::store_config(&self.hub, &task_id, cfg_req).await?))
            }
            Operation::GetPushConfig(req) => {
                let scope = Self::scope(who, req.tenant.as_ref());
                self.record(agent, &scope, &req.task_id).await?;
                let found =
                    self.push_configs(&req.task_id).await?.into_iter().find(|c| c.id.as_deref() == Some(&req.id));
                found.map(Reply::PushConfig).ok_or_else(|| {
                    A2aError::new(
                        Kind::TaskNotFound,
                        format!("push config `{}` not found on task `{}`", req.id, req.task_id),
                    )
                })
            }
            Operation::ListPushConfigs(req) => {
                let scope = Self::scope(who, req.tenant.as_ref());
                self.record(agent, &scope, &req.task_id).await?;
                let all = self.push_configs(&req.task_id).await?;
                let size = match req.page_size {
                    None | Some(0) => 100,
                    Some(n) if (1..=PAGE_MAX).contains(&n) => usize::try_from(n).unwrap_or(100),
                    Some(_) => return Err(A2aError::invalid_params("pageSize must be 1-100")),
                };
                let start = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
                    None => 0,
                    Some(t) => t.parse::<usize>().map_err(|_| A2aError::invalid_params("invalid pageToken"))?,
                };
                let page: Vec<_> = all.iter().skip(start).take(size).cloned().collect();
                let next = (start + page.len() < all.len()).then(|| (start + page.len()).to_string());
                Ok(Reply::PushConfigs(ListTaskPushNotificationConfigsResponse { configs: page, next_page_token: next }))
            }
            Operation::DeletePushConfig(req) => {
                let scope = Self::scope(who, req.tenant.as_ref());
                self.record(agent, &scope, &req.task_id).await?;
                self.hub.store().delete_push_config(&req.task_id, &req.id).await?;
                Ok(Reply::Empty)
            }
            Operation::GetExtendedAgentCard(_) => {
                if !cfg.extended_card {
                    return Err(A2aError::new(Kind::UnsupportedOperation, "this agent has no extended card"));
                }
                Ok(Reply::Card(self.card(cfg, who.host.as_deref(), true)?))
            }
        }
    }

    /// The card of `agent` as served (with the security declaration, signed when configured).
    pub fn card(&self, agent: &AgentConfig, host: Option<&str>, extended: bool) -> Result<Value, A2aError> {
        let mut card = crate::card::card_with(&self.config, agent, host, extended, self.security.as_deref());
        if let Some(s) = &self.signer {
            s.sign(&mut card).map_err(A2aError::internal)?;
        }
        Ok(card)
    }

    /// The task's push configs, credentials opened (for the owning tenant).
    async fn push_configs(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2aError> {
        self.hub
            .store()
            .push_configs(task_id)
            .await?
            .into_iter()
            .map(|(_, v)| {
                let cfg = serde_json::from_value(v).map_err(|e| A2aError::internal(e.to_string()))?;
                self.hub.sealer().open_config(task_id, cfg)
            })
            .collect()
    }

    async fn record(
        &self,
        agent: &AgentEntry,
        scope: &str,
        id: &str,
    ) -> Result<switchyard_contract::TaskRecord, A2aError> {
        match self.hub.get(scope, id).await? {
            Some(rec) if rec.agent == agent.config.name => Ok(rec),
            _ => Err(A2aError::task_not_found(id)),
        }
    }

    async fn load(&self, agent: &AgentEntry, scope: &str, id: &str) -> Result<Task, A2aError> {
        task_of(&self.record(agent, scope, id).await?)
    }

    async fn send(
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
                A2aError::invalid_params(format!(
                    "message `{}` conflicts with an earlier message with the same id",
                    message.message_id
                ))
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
                let kind = Kind::from_reason(&error.code).unwrap_or(Kind::InvalidAgentResponse);
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
                Some(w) => self.engine.submit_and_wait(submission.clone(), w).await?,
                None => self.engine.submit(submission.clone()).await?,
            };
            let not_applied = matches!(&out.invocation.state, InvocationState::Failed { error, .. }
                if error.code == switchyard_contract::state::NOT_APPLIED_CODE);
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

    async fn list(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        check_history(req.history_length)?;
        let size = match req.page_size {
            None | Some(0) => PAGE_DEFAULT,
            Some(n) if (1..=PAGE_MAX).contains(&n) => n,
            Some(n) => return Err(A2aError::invalid_params(format!("pageSize must be 1-{PAGE_MAX}, got {n}"))),
        };
        let after = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(decode_token(t).ok_or_else(|| A2aError::invalid_params("invalid pageToken"))?),
        };
        let query = TaskQuery {
            scope: Self::scope(who, req.tenant.as_ref()),
            agent: agent.config.name.clone(),
            context_id: req.context_id.clone().filter(|c| !c.is_empty()),
            state: req.status.as_ref().filter(|s| **s != TaskState::Unspecified).map(state_name),
            status_after_ms: req.status_timestamp_after.map(|t| t.timestamp_millis()),
            after,
            limit: u32::try_from(size).unwrap_or(50) + 1,
        };
        let (mut rows, total) = self.hub.store().list(&query).await?;
        let more = rows.len() > usize::try_from(size).unwrap_or(50);
        rows.truncate(usize::try_from(size).unwrap_or(50));
        let next = if more {
            rows.last().map(|r| encode_token(r.status_ms, &r.id)).unwrap_or_default()
        } else {
            String::new()
        };
        let mut tasks = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut t = slice_history(task_of(r)?, req.history_length);
            if req.include_artifacts != Some(true) {
                t.artifacts = None;
            }
            tasks.push(t);
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: next,
            page_size: size,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    async fn cancel(&self, agent: &AgentEntry, who: &Caller, req: CancelTaskRequest) -> Result<Task, A2aError> {
        let scope = Self::scope(who, req.tenant.as_ref());
        let rec = self.record(agent, &scope, &req.id).await?;
        let task = task_of(&rec)?;
        let not_cancelable = |t: &Task| {
            A2aError::new(
                Kind::TaskNotCancelable,
                format!("task `{}` is {} and cannot be canceled", t.id, state_name(&t.status.state)),
            )
        };
        if task.status.state.is_terminal() {
            return Err(not_cancelable(&task));
        }
        let run = crate::hub::cursor_invocation(&rec.run_cursor).map(|i| i.to_string());
        if let Some(p) = self.proxies.get(&agent.config.name)
            && !p.cancel_upstream(&self.hub, &scope, &req.id, run.as_deref()).await?
        {
            // Nothing to ask the agent to cancel yet, so nothing it could confirm: change nothing.
            return Err(A2aError::new(
                Kind::TaskNotCancelable,
                format!("task `{}` has not been acknowledged by the agent yet; cancel it again shortly", task.id),
            ));
        }
        if let Some(inv) = crate::hub::cursor_invocation(&rec.run_cursor)
            && let Err(e) = self.engine.cancel(&who.principal, inv).await
        {
            tracing::debug!(invocation.id = %inv, error = %e, "run not cancelable (already settled)");
        }
        let canceled = TaskStatus { state: TaskState::Canceled, message: None, timestamp: None };
        match self.hub.apply(&scope, &req.id, None, Change::Status(canceled)).await? {
            Some(rec) => task_of(&rec),
            None => {
                let now = self.load(agent, &scope, &req.id).await?;
                if now.status.state == TaskState::Canceled { Ok(now) } else { Err(not_cancelable(&now)) }
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

fn encode_token(ms: i64, id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ms}:{id}"))
}

fn decode_token(t: &str) -> Option<(i64, String)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(t).ok()?;
    let s = String::from_utf8(raw).ok()?;
    let (ms, id) = s.split_once(':')?;
    Some((ms.parse().ok()?, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(check_version(Some("1.0")).is_ok());
        for bad in [None, Some(""), Some("0.3"), Some("99.0"), Some("2.0")] {
            assert_eq!(check_version(bad).map_err(|e| e.kind), Err(Kind::VersionNotSupported), "{bad:?}");
        }
    }

    #[test]
    fn page_tokens_round_trip_and_garbage_is_refused() {
        let t = encode_token(1_700_000_000_123, "abc-def");
        assert_eq!(decode_token(&t), Some((1_700_000_000_123, "abc-def".to_string())));
        assert_eq!(decode_token("!!"), None);
    }

    #[test]
    fn proto_field_names_are_accepted_but_user_data_is_not_rewritten() {
        let v = camelize(
            serde_json::json!({"task_id": "t", "metadata": {"a_b": 1}, "message": {"message_id": "m", "parts": [{"data": {"x_y": 2}}]}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"taskId": "t", "metadata": {"a_b": 1}, "message": {"messageId": "m", "parts": [{"data": {"x_y": 2}}]}})
        );
    }

    #[test]
    fn unknown_methods_and_bad_params() {
        assert!(matches!(Operation::decode("message/send", Value::Null), Ok(None)));
        assert_eq!(
            Operation::decode("GetTask", serde_json::json!([1])).map(|_| ()).map_err(|e| e.kind),
            Err(Kind::InvalidParams)
        );
        assert_eq!(
            Operation::decode("GetTask", serde_json::json!({})).map(|_| ()).map_err(|e| e.kind),
            Err(Kind::InvalidParams)
        );
        assert!(matches!(Operation::decode("GetExtendedAgentCard", Value::Null), Ok(Some(_))));
    }
}
