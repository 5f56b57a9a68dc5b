//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the gateway: a task is
//! the durable invocation behind a long tools/call (task id = invocation id), read from the
//! store on every `tasks/get`, so any replica answers and a restart loses nothing.

use rmcp::model::{DetailedTask, GetTaskResult, InputRequiredResult, InputResponses, Task, TaskPayload, TaskStatus};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use switchyard_contract::{Invocation, InvocationId, InvocationState};
use tracing::info;

use super::{McpFace, TASKS_EXTENSION_ID, internal, principal, unknown_result};
use crate::config::TaskSupport;

/// Whether the request's client declared the Tasks extension.
pub(super) fn declares_tasks(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities().and_then(|c| c.extensions).is_some_and(|e| e.contains_key(TASKS_EXTENSION_ID))
}

/// Whether a call of a tool with `support` may be answered with a task: only for a 2026-07-28
/// client that declared the Tasks extension (a legacy session never gets one, whatever its
/// `initialize` said). A tool that requires tasks refuses every other client.
pub(super) fn may_become_task(support: TaskSupport, ctx: &RequestContext<RoleServer>) -> Result<bool, ErrorData> {
    let tasks = support != TaskSupport::Forbidden && super::modern(ctx) && declares_tasks(ctx);
    if support == TaskSupport::Required && !tasks {
        return Err(ErrorData::missing_required_client_capability(
            rmcp::model::ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    Ok(tasks)
}

/// Whether the invocation's upstream answer was another MRTR round.
pub(super) fn asks_input(inv: &Invocation) -> bool {
    matches!(&inv.state, InvocationState::Succeeded { result, .. }
        if result.get("resultType").and_then(Value::as_str) == Some("input_required"))
}

impl McpFace {
    pub(super) fn task_support(&self, upstream: &str, tool: &str) -> TaskSupport {
        self.shared.pools.get(upstream).and_then(|p| p.spec.tasks.get(tool).copied()).unwrap_or_default()
    }

    pub(super) fn task_of(&self, inv: &Invocation) -> Task {
        let status = match &inv.state {
            InvocationState::Succeeded { .. } if asks_input(inv) => TaskStatus::InputRequired,
            InvocationState::Succeeded { .. } | InvocationState::Unknown { .. } => TaskStatus::Completed,
            InvocationState::Failed { .. } => TaskStatus::Failed,
            InvocationState::Canceled { .. } => TaskStatus::Cancelled,
            _ => TaskStatus::Working,
        };
        let mut task = Task::new(
            inv.id.to_string(),
            status,
            switchyard_contract::iso8601(inv.created_at_ms),
            switchyard_contract::iso8601(inv.updated_at_ms),
        )
        .with_poll_interval_ms(self.shared.task_poll_ms);
        if matches!(inv.state, InvocationState::Unknown { .. }) {
            task = task.with_status_message("the outcome is unknown: see the result");
        }
        if matches!(inv.state, InvocationState::AwaitingApproval) {
            task = task.with_status_message("waiting for approval under the gateway's policy");
        }
        task
    }

    /// The caller's task: an MCP tools/call invocation the caller made (any of its tenant's with
    /// the `tasks:admin` scope), else `-32602`, exactly as for an id that does not exist.
    async fn task_invocation(&self, task_id: &str, ctx: &RequestContext<RoleServer>) -> Result<Invocation, ErrorData> {
        let who = principal(ctx)?;
        let unknown = || ErrorData::invalid_params(format!("unknown task `{task_id}`"), None);
        let id: InvocationId = task_id.parse().map_err(|_| unknown())?;
        let inv = self.shared.engine.get(&who.tenant, id).await.map_err(|_| unknown())?;
        let tenant_wide = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<switchyard_contract::Grant>())
            .is_some_and(switchyard_contract::Grant::tenant_wide);
        if inv.principal.subject != who.subject && !tenant_wide {
            return Err(unknown());
        }
        let upstream = match self.shared.bridge_for(&inv.target.upstream) {
            Some(b) => b.name.as_str(),
            None if self.shared.pools.contains_key(&inv.target.upstream) => inv.target.upstream.as_str(),
            None => return Err(unknown()),
        };
        if !self.server.includes(upstream) {
            return Err(unknown());
        }
        Ok(inv)
    }

    /// `tasks/get`: the invocation behind the task, as a DetailedTask (the result inlined once
    /// terminal; a lost `write` outcome is `completed` with an `isError` result saying so). A
    /// bridged task follows its A2A task's rounds.
    pub(super) async fn task_detail(
        &self,
        task_id: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let inv = self.task_invocation(task_id, ctx).await?;
        if let Some(bridge) = self.shared.bridge_for(&inv.target.upstream).cloned() {
            return self.bridged_task(&bridge, &inv, ctx).await;
        }
        self.task_detail_of(&inv, &inv)
    }

    /// Task `first` as its round `round` stands (the same invocation, but for a bridged task).
    pub(super) fn task_detail_of(&self, first: &Invocation, round: &Invocation) -> Result<GetTaskResult, ErrorData> {
        let mut task = self.task_of(round);
        task.task_id = first.id.to_string();
        task.created_at = switchyard_contract::iso8601(first.created_at_ms);
        let object = |v: Value| v.as_object().cloned().unwrap_or_default();
        let payload = match &round.state {
            InvocationState::Succeeded { result, .. } if asks_input(round) => {
                let asked: InputRequiredResult =
                    serde_json::from_value(result.clone()).map_err(|e| internal(e.to_string()))?;
                TaskPayload::InputRequired { input_requests: asked.input_requests.unwrap_or_default() }
            }
            InvocationState::Succeeded { result, .. } => TaskPayload::Completed { result: object(result.clone()) },
            InvocationState::Unknown { reason, .. } => {
                let r = unknown_result(round.id, reason);
                TaskPayload::Completed { result: object(serde_json::to_value(r).map_err(|e| internal(e.to_string()))?) }
            }
            InvocationState::Failed { error, .. } => {
                let code = error.details.as_ref().and_then(|d| d.get("code")).and_then(Value::as_i64).unwrap_or(-32603);
                let data = error.details.as_ref().and_then(|d| d.get("data")).cloned().filter(|v| !v.is_null());
                let mut e = json!({ "code": code, "message": error.message });
                if let Some(d) = data {
                    e["data"] = d;
                }
                TaskPayload::Failed { error: object(e) }
            }
            InvocationState::Canceled { .. } => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/cancel`: cancels the invocation (a bridged task's latest round); acknowledged even
    /// when it already ended.
    pub(super) async fn cancel_task_of(
        &self,
        task_id: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let inv = self.task_invocation(task_id, ctx).await?;
        let who = principal(ctx)?;
        let canceled = match self.shared.bridge_for(&inv.target.upstream).cloned() {
            Some(bridge) => self.cancel_bridged_task(&bridge, &inv, &who).await,
            None => self.shared.cancel(&who, inv.id).await,
        };
        if let Err(e) = canceled {
            info!(invocation.id = %inv.id, error = %e, "tasks/cancel on a task that cannot be canceled now");
        }
        Ok(())
    }

    /// `tasks/update`: the answer to a bridged task's question. The gateway's other tasks never
    /// wait for input inside the task (an upstream asking for input is answered through MRTR
    /// rounds before a task exists).
    pub(super) async fn update_task_of(
        &self,
        task_id: &str,
        responses: InputResponses,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let inv = self.task_invocation(task_id, ctx).await?;
        if let Some(bridge) = self.shared.bridge_for(&inv.target.upstream).cloned() {
            return self.update_bridged_task(&bridge, &inv, responses, ctx).await;
        }
        Err(ErrorData::invalid_params(
            format!("task `{task_id}` is not waiting for input: this gateway does not take input inside a task"),
            None,
        ))
    }
}
