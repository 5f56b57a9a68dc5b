//! One message's run as the engine stores it ([`RunRequest`], the invocation request the A2A
//! face submits) and the task changes every kind of run writes (the submitted task, a status
//! with the agent's message). Shared by the built-in agents ([`crate::agent`]), the agents behind
//! the gateway ([`crate::proxy`]) and the `tools` agents ([`crate::tools`]).

use a2a::{Message, Part, Role, Task, TaskPushNotificationConfig, TaskState, TaskStatus};
use serde::{Deserialize, Serialize};
use switchyard_contract::{ContextId, TaskId, TaskScope};

use crate::hub::Change;

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
