//! The A2A face: the eleven operations handled once for every binding. Bindings decode into
//! [`Operation`], call [`A2aFace::handle`] with the caller, and encode the [`Reply`] or
//! [`A2aError`] in their own framing. One file per operation group: [`send`] (SendMessage and
//! its stream), [`tasks`] (list, cancel), [`push_configs`]; this file holds the dispatch, the
//! caller, cards and the task lookups they share.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    CancelTaskRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig, TaskState,
};
use base64::Engine as _;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_contract::{
    ContextId, ErrorKind, IngressKey, InvocationId, InvocationState, Invocations, Principal, Submission, TaskId,
    TaskQuery, TaskScope, TenantId,
};

use crate::config::{A2aConfig, AgentConfig};
use crate::error::{A2aError, Kind, Profile};
use crate::hub::{self, Hub, slice_history, state_name, task_of};
use crate::push;
use crate::run::{RunRequest, digest_id};

mod decided;
mod push_configs;
mod send;
mod tasks;

pub use crate::operation::Operation;

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
    /// The binding the request came on: `jsonrpc`, `rest` or `grpc` (for spans).
    pub binding: &'static str,
    /// The caller's W3C trace context (`traceparent` and `tracestate` headers or gRPC metadata);
    /// a send's request metadata may name another, which wins.
    pub trace: Option<switchyard_contract::TraceParent>,
    /// The caller holds [`TASKS_ADMIN`](switchyard_contract::TASKS_ADMIN): it reads and cancels
    /// every subject's tasks of its tenant, not only its own.
    pub tenant_wide: bool,
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
    /// Kind `tools`: the tools it exposes.
    pub tools: Option<Arc<crate::tools::ToolsAgent>>,
}

/// The A2A face of the gateway.
#[derive(Debug, Clone)]
pub struct A2aFace {
    pub(crate) engine: Arc<dyn Invocations>,
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

const PAGE_DEFAULT: i32 = 50;
const PAGE_MAX: i32 = 100;

fn check_history(n: Option<i32>) -> Result<(), A2aError> {
    match n {
        Some(n) if n < 0 => Err(A2aError::invalid_params("historyLength must not be negative")),
        _ => Ok(()),
    }
}

impl A2aFace {
    pub fn profile(&self) -> Profile {
        self.config.error_profile
    }

    pub fn agent(&self, name: &str) -> Option<Arc<AgentEntry>> {
        self.agents.get(name).cloned()
    }

    /// The agent at the root card and on gRPC without a tenant: `default_agent`, else the first
    /// configured agent served on the face.
    pub fn default_agent(&self) -> Option<Arc<AgentEntry>> {
        match &self.config.default_agent {
            Some(name) => self.agent(name),
            None => self.config.agents.iter().find(|a| a.exposed).and_then(|a| self.agent(&a.name)),
        }
    }

    /// The caller's tasks in the space the request names (its `tenant`, else the path's): its
    /// own, or its tenant's with `tasks:admin`.
    fn scope(who: &Caller, tenant: Option<&String>) -> TaskScope {
        let t = tenant.filter(|t| !t.is_empty()).or(who.path_tenant.as_ref()).map_or("", String::as_str);
        if who.tenant_wide { TaskScope::tenant_wide(&who.principal, t) } else { TaskScope::of(&who.principal, t) }
    }

    /// Handles one operation for `agent`.
    pub async fn handle(&self, agent: &AgentEntry, who: &Caller, op: Operation) -> Result<Reply, A2aError> {
        use tracing::Instrument as _;
        let span = tracing::info_span!(
            "a2a",
            protocol = "a2a",
            binding = who.binding,
            agent = %agent.config.name,
            operation = op.name(),
            tenant = %who.principal.tenant,
            invocation.id = tracing::field::Empty,
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
                // Counted as open until the stream is dropped (ended, or its client gone).
                let open = self.hub.stats.stream_opened();
                Reply::Stream(
                    events
                        .then(move |ev| {
                            let _open = &open;
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
        if let Some(request) = op.decided_by() {
            self.decide(agent, who, op.name(), request).await?;
        }
        match op {
            Operation::SendMessage(req) => self.send(agent, who, req, false).await,
            Operation::SendStreamingMessage(req) => self.send(agent, who, req, true).await,
            Operation::GetTask(req) => {
                check_history(req.history_length)?;
                let task =
                    self.load(agent, &Self::scope(who, req.tenant.as_ref()), &TaskId::from(req.id.as_str())).await?;
                Ok(Reply::Task(slice_history(task, req.history_length)))
            }
            Operation::ListTasks(req) => self.list(agent, who, req).await.map(Reply::Tasks),
            Operation::CancelTask(req) => self.cancel(agent, who, req).await.map(Reply::Task),
            Operation::SubscribeToTask(req) => {
                let (_, rec) = self.callers_task(agent, who, req.tenant.as_ref(), &req.id).await?;
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
            Operation::CreatePushConfig(req) => self.create_push_config(agent, who, req).await,
            Operation::GetPushConfig(req) => self.get_push_config(agent, who, req).await,
            Operation::ListPushConfigs(req) => self.list_push_configs(agent, who, req).await,
            Operation::DeletePushConfig(req) => self.delete_push_config(agent, who, req).await,
            Operation::GetExtendedAgentCard(_) => {
                if !cfg.extended_card {
                    return Err(A2aError::new(Kind::UnsupportedOperation, "this agent has no extended card"));
                }
                Ok(Reply::Card(self.card(cfg, who.host.as_deref(), true).await?))
            }
        }
    }

    /// The policy enforcement point's decision on `method` (an operation other than a message or
    /// the card) of `agent` for `who`: `task:<method>` on the agent's upstream, a read (routine
    /// unless a rule says otherwise); a denial, a deferral or a hold (it cannot wait) refuses
    /// it before anything is read or changed. The decision is audited.
    async fn decide(&self, agent: &AgentEntry, who: &Caller, method: &str, request: Value) -> Result<(), A2aError> {
        let passage = switchyard_contract::Passage {
            principal: who.principal.clone(),
            ingress: switchyard_contract::Ingress::A2a,
            upstream: agent.config.upstream(),
            operation: format!("task:{method}"),
            request,
            grant: None,
        };
        Ok(self.engine.decide_passage(&passage).await?)
    }

    /// The card of `agent` as served (with the security declaration, signed when configured).
    /// An agent behind the gateway keeps its own identity — name, description, version,
    /// provider, skills, input and output modes, links — with the gateway's interfaces,
    /// capabilities and security (a configured `description` wins); its card is read first if
    /// it was not yet (at most 3 s).
    pub async fn card(&self, agent: &AgentConfig, host: Option<&str>, extended: bool) -> Result<Value, A2aError> {
        let mut card = crate::card::card_with(&self.config, agent, host, extended, self.security.as_deref());
        if let Some(tools) = self.agents.get(&agent.name).and_then(|a| a.tools.as_ref())
            && let Some(obj) = card.as_object_mut()
        {
            obj.insert("skills".into(), Value::Array(tools.card_skills()));
        }
        if let Some(proxy) = self.proxies.get(&agent.name) {
            proxy.discover_within(Duration::from_secs(3)).await;
            if let (Some(theirs), Some(obj)) = (proxy.discovered(), card.as_object_mut()) {
                crate::card::keep_identity(obj, &theirs.card, agent.description.is_some())?;
            }
        }
        if let Some(s) = &self.signer {
            s.sign(&mut card)?;
        }
        Ok(card)
    }

    async fn record(
        &self,
        agent: &AgentEntry,
        scope: &TaskScope,
        id: &TaskId,
    ) -> Result<switchyard_contract::TaskRecord, A2aError> {
        match self.hub.get(scope, id).await? {
            Some(rec) if rec.agent == agent.config.name => Ok(rec),
            _ => Err(A2aError::task_not_found(id)),
        }
    }

    async fn load(&self, agent: &AgentEntry, scope: &TaskScope, id: &TaskId) -> Result<Task, A2aError> {
        task_of(&self.record(agent, scope, id).await?)
    }

    /// Task `id` (as the request names it) of `agent` in the caller's scope (`tenant`: the request's tenant field), with
    /// that scope; another scope's task is `TaskNotFound`.
    async fn callers_task(
        &self,
        agent: &AgentEntry,
        who: &Caller,
        tenant: Option<&String>,
        id: &str,
    ) -> Result<(TaskScope, switchyard_contract::TaskRecord), A2aError> {
        let scope = Self::scope(who, tenant);
        let rec = self.record(agent, &scope, &TaskId::from(id)).await?;
        Ok((scope, rec))
    }
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
}
