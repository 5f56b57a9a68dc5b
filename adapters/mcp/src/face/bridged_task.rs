//! A bridged call as one MCP task (the Tasks extension) across every round of the A2A task
//! behind it. The MCP task id is the first round's invocation; each later round is the
//! invocation keyed after the round it answers (the key MRTR rounds use too), so the task's
//! latest round is found from the store alone, on any replica and after a restart. An A2A task
//! in `INPUT_REQUIRED` is the MCP task's `input_required`, its question one elicitation keyed
//! by the round that asked; `tasks/update` with the answer sends the follow-up message (once,
//! however often it is sent), and a declined question cancels the agent's task.

use rmcp::model::{DetailedTask, GetTaskResult, InputResponses, Task, TaskPayload, TaskStatus};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use switchyard_contract::{Invocation, InvocationState, Principal};

use super::bridged::{Bridge, answer_of, elicitation, task_of};
use super::call::{GRANT_META, round_key};
use super::{MAX_ROUNDS, McpFace, internal, principal};

/// The key of a round's one input request: unique over the task's lifetime.
fn input_key(round: &Invocation) -> String {
    format!("answer-{}", round.id)
}

/// Where the task stands: its latest round, and the A2A task's end if it ended while that
/// round waited for input (a cancel from either side).
struct Latest {
    round: Invocation,
    waits: bool,
    ended: Option<String>,
}

impl McpFace {
    /// The latest round of the bridged task that `first` started: from `first`, each round
    /// that asked for input followed by the round keyed after it, while there is one. Read as
    /// the task's owner sees it (a tenant-wide reader may be asking).
    async fn latest(&self, bridge: &Bridge, first: &Invocation) -> Result<Latest, ErrorData> {
        let who = &first.principal;
        let client_key = first.ingress_key.as_ref().map(|k| k.as_str());
        let mut round = first.clone();
        for _ in 0..=MAX_ROUNDS {
            if !self.waits_for_input(&round)? {
                return Ok(Latest { round, waits: false, ended: None });
            }
            let Some(key) = round_key(client_key, Some(&round.id.to_string()))? else { break };
            match self.shared.engine.by_key(&who.tenant, &key).await {
                Ok(Some(next)) => round = next,
                Ok(None) => break,
                Err(e) => return Err(crate::error::rpc_error(&e, None)),
            }
        }
        let waits = self.waits_for_input(&round)?;
        let task = task_of(&round).unwrap_or_default();
        let run = self.foreign()?.task_run(who, &bridge.agent, task).await;
        let ended = run.map_err(|e| crate::error::rpc_error(&e, None))?.and_then(|r| r.ended);
        Ok(Latest { round, waits, ended: ended.filter(|_| waits) })
    }

    /// `tasks/get` of a bridged task: its latest round as the task's status and payload.
    pub(super) async fn bridged_task(
        &self,
        bridge: &Bridge,
        first: &Invocation,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let latest = self.latest(bridge, first).await?;
        let round = &latest.round;
        let object = |r: rmcp::model::CallToolResult| -> Result<_, ErrorData> {
            let v = serde_json::to_value(r).map_err(|e| internal(e.to_string()))?;
            Ok(v.as_object().cloned().unwrap_or_default())
        };
        let payload = match (&round.state, latest.ended.as_deref()) {
            (_, Some("TASK_STATE_CANCELED")) => TaskPayload::Cancelled,
            (_, Some(state)) => TaskPayload::Completed {
                result: object(super::error_result(round.id, &format!("the agent's task ended: {state}")))?,
            },
            (InvocationState::Succeeded { result, .. }, None) if latest.waits => {
                let content =
                    self.foreign()?.content(&round.target.upstream, result).map_err(|e| internal(e.message))?;
                let asked = content.needs_input.ok_or_else(|| internal("the round no longer asks for input"))?;
                let requests =
                    elicitation(&asked.message, asked.schema.as_ref()).into_values().map(|r| (input_key(round), r));
                TaskPayload::InputRequired { input_requests: requests.collect() }
            }
            // The agent's task goes on; the agent's own record decides the round.
            (InvocationState::Unknown { .. }, None) => TaskPayload::Working,
            (InvocationState::Succeeded { .. }, None) => {
                TaskPayload::Completed { result: object(self.bridged_outcome(bridge, round, &self.link_base(ctx))?)? }
            }
            _ => return self.task_detail_of(first, round),
        };
        let mut task: Task = self.task_of(round);
        task.task_id = first.id.to_string();
        task.created_at = switchyard_contract::iso8601(first.created_at_ms);
        task.status = match &payload {
            TaskPayload::Cancelled => TaskStatus::Cancelled,
            TaskPayload::InputRequired { .. } => TaskStatus::InputRequired,
            TaskPayload::Working => {
                task.status_message = Some(
                    "the gateway lost this round's outcome in a restart; the agent's own record decides it".into(),
                );
                TaskStatus::Working
            }
            _ => TaskStatus::Completed,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update` of a bridged task waiting for input: the answer is the follow-up message
    /// on the agent's task (keyed after the round that asked, so a repeated update attaches to
    /// the one message); a declined question cancels the agent's task.
    pub(super) async fn update_bridged_task(
        &self,
        bridge: &Bridge,
        first: &Invocation,
        responses: InputResponses,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let who = principal(ctx)?;
        let latest = self.latest(bridge, first).await?;
        if !latest.waits || latest.ended.is_some() {
            return Err(ErrorData::invalid_params(format!("task `{}` is not waiting for input", first.id), None));
        }
        let key = input_key(&latest.round);
        let foreign = self.foreign()?;
        let answer = match answer_of(Some(responses), &key)? {
            Ok(answer) => answer,
            Err(_declined) => {
                return foreign.cancel(&who, &latest.round).await.map_err(|e| crate::error::rpc_error(&e, None));
            }
        };
        let prepared = foreign.prepare_answer(&who, &latest.round, answer).await;
        let mut submission = prepared.map_err(|e| crate::error::rpc_error(&e, None))?;
        let client_key = first.ingress_key.as_ref().map(|k| k.as_str());
        submission.ingress_key = round_key(client_key, Some(&latest.round.id.to_string()))?;
        submission.grant = ctx.meta.get(GRANT_META).and_then(Value::as_str).map(str::to_string);
        submission.caller = Some(switchyard_contract::Ingress::Mcp);
        self.shared.engine.submit(submission).await.map_err(|e| crate::error::rpc_error(&e, None))?;
        Ok(())
    }

    /// `tasks/cancel` of a bridged task: its latest round, the way the agent's protocol cancels.
    pub(super) async fn cancel_bridged_task(
        &self,
        bridge: &Bridge,
        first: &Invocation,
        who: &Principal,
    ) -> Result<(), switchyard_contract::Error> {
        let latest =
            self.latest(bridge, first).await.map_err(|e| switchyard_contract::Error::invalid_input(e.message))?;
        if latest.waits {
            return self
                .foreign()
                .map_err(|e| switchyard_contract::Error::internal(e.message))?
                .cancel(who, &latest.round)
                .await;
        }
        self.shared.cancel(who, latest.round.id).await
    }
}
