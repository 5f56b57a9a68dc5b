//! One message's run as the engine stores it ([`RunRequest`], the invocation request the A2A
//! face submits) and the task changes every kind of run writes (the submitted task, a status
//! with the agent's message). Shared by the built-in agents ([`crate::agent`]), the agents behind
//! the gateway ([`crate::proxy`]) and the `tools` agents ([`crate::tools`]).

use a2a::{Message, Part, Role, Task, TaskPushNotificationConfig, TaskState, TaskStatus};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use switchyard_contract::{ContextId, TaskId, TaskScope};

use crate::error::Kind;
use crate::hub::{Change, Hub};

/// What the A2A face submits as the invocation request of one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    pub scope: TaskScope,
    pub agent: String,
    pub task_id: TaskId,
    pub context_id: ContextId,
    pub new_task: bool,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<TaskPushNotificationConfig>,
    /// The request's own metadata and accepted output modes, passed on to an agent behind the
    /// gateway (push configuration and blocking are the gateway's, never passed on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<std::collections::HashMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_output_modes: Option<Vec<String>>,
    /// A bridged call's tool arguments as its caller gave them, so that policy rules address
    /// them at `/arguments/<name>` as for any MCP tool. Never sent to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

impl RunRequest {
    /// Whether `request`, a stored run request, is a first message (it starts its task): read
    /// from the one field, without decoding the message.
    pub(crate) fn starts_task(request: &serde_json::Value) -> bool {
        request.get("newTask") == Some(&serde_json::Value::Bool(true))
    }
}

pub(crate) fn status(state: TaskState, text: Option<&str>, ctx: &str, task: &str) -> Change {
    Change::Status(TaskStatus {
        state,
        message: text.map(|t| agent_message(vec![Part::text(t)], ctx, Some(task))),
        timestamp: None,
    })
}

/// The task a first message starts: submitted, with the message in its history.
pub fn submitted(req: &RunRequest) -> Task {
    let mut first = req.message.clone();
    first.task_id = Some(req.task_id.to_string());
    first.context_id = Some(req.context_id.to_string());
    Task {
        id: req.task_id.to_string(),
        context_id: req.context_id.to_string(),
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: Some(chrono::Utc::now()) },
        artifacts: None,
        history: Some(vec![first]),
        metadata: None,
    }
}

/// A status change to `state` with an agent message saying `text`.
pub(crate) fn status_saying(state: TaskState, text: &str, ctx: &str, task: &str) -> Change {
    status(state, Some(text), ctx, task)
}

pub fn agent_message(parts: Vec<Part>, ctx: &str, task: Option<&str>) -> Message {
    let mut m = Message::new(Role::Agent, parts);
    m.context_id = Some(ctx.to_string());
    m.task_id = task.map(str::to_string);
    m
}

/// A stable id from `parts` (the first 16 bytes of their SHA-256): a resent message names the
/// same task.
pub(crate) fn digest_id(parts: &[&str]) -> uuid::Uuid {
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

/// Ends the task of a held send rejected once its call was denied or expired (`inv`, failed
/// `approval_denied`, `approval_expired` or, refused after its approval, `policy_denied`; anything else is left alone). Written at the run's
/// step 1, so it happens once however many replicas and followers try.
pub(crate) async fn reject_held(hub: &Hub, inv: &switchyard_contract::Invocation) {
    use switchyard_contract::{FailureCode, InvocationState, RunCursor};
    let InvocationState::Failed { error, .. } = &inv.state else { return };
    let why = match error.code {
        FailureCode::ApprovalDenied => format!("approval denied: {}", error.message),
        FailureCode::ApprovalExpired => "nobody approved it in time".to_string(),
        FailureCode::PolicyDenied => format!("refused by policy when it was about to run: {}", error.message),
        _ => return,
    };
    let Ok(req) = serde_json::from_value::<RunRequest>(inv.request.clone()) else { return };
    if !req.new_task {
        return; // a refused follow-up leaves its task as it was
    }
    let change = status_saying(TaskState::Rejected, &why, &req.context_id, &req.task_id);
    let step = Some(RunCursor { invocation: inv.id, step: 1 });
    if let Err(e) = hub.apply_all(&req.scope, &req.task_id, step, vec![change]).await
        && e.kind != Kind::TaskNotFound
    {
        tracing::warn!(task = %req.task_id, error = %e.message, "a refused held task could not be rejected");
    }
}
