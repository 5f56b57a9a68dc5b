//! What a tool call of a `tools` agent shows on its task: its note (`dev.switchyard/call`), a
//! call parked until someone acts (held, or its outcome unknown), its interim traffic, and its
//! answer as the task's artifact and final status.

use super::*;

/// A tool call that waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parked {
    /// Held for approval.
    Held,
    /// Its outcome is unknown until an operator reconciles it.
    Unknown,
}

impl Parked {
    pub(super) fn of(state: &InvocationState) -> Option<Self> {
        match state {
            InvocationState::AwaitingApproval => Some(Self::Held),
            InvocationState::Unknown { .. } => Some(Self::Unknown),
            _ => None,
        }
    }
}

/// A tool call whose outcome is unknown: its task stays `WORKING`, saying so, until the call is
/// reconciled (applied: its result; not applied: failed, safe to send again).
pub(super) fn unknown_changes(child: &Invocation, op: &Operation, reason: &str, ctx: &str, task: &str) -> Vec<Change> {
    let text = format!(
        "the outcome of the tool call `{}` is unknown ({reason}): it may or may not have taken effect and is not \
         sent again; the task stays open until an operator reconciles invocation {}",
        op.name, child.id
    );
    vec![call_note(child, op, "unknown"), status_saying(TaskState::Working, &text, ctx, task)]
}

/// Whether `task` says its tool call's outcome is unknown (it waits for an operator).
pub(crate) fn call_unknown(task: &a2a::Task) -> bool {
    let note = task.metadata.as_ref().and_then(|m| m.get(CALL_METADATA));
    note.and_then(|n| n.get("state")).and_then(Value::as_str) == Some("unknown")
}

/// The task's note of its tool call (`dev.switchyard/call` in its metadata).
pub(super) fn call_note(child: &Invocation, op: &Operation, state: &str) -> Change {
    Change::Annotate {
        key: CALL_METADATA.into(),
        value: json!({"invocation": child.id.to_string(), "upstream": op.upstream, "tool": op.name, "state": state}),
    }
}

/// At most this many progress notifications of one tool call become status updates (each joins
/// the task's history).
const MAX_PROGRESS_UPDATES: u32 = 64;

/// Where a tool call's interim traffic goes while a `tools` agent runs it: progress becomes a
/// `WORKING` status update on the task (streamed, pushed); questions mid-call have no A2A
/// equivalent (an A2A client answers only between turns) and are refused saying so.
#[derive(Debug)]
pub(super) struct TaskRelay {
    pub(super) hub: Hub,
    pub(super) scope: TaskScope,
    pub(super) task: TaskId,
    pub(super) ctx: String,
    pub(super) sent: AtomicU32,
}

#[async_trait::async_trait]
impl CallRelay for TaskRelay {
    async fn notify(&self, interim: Interim) -> Result<(), RelayError> {
        let Interim::Progress(p) = interim else { return Ok(()) };
        if self.sent.fetch_add(1, Ordering::Relaxed) >= MAX_PROGRESS_UPDATES {
            return Ok(());
        }
        let text = match (&p.message, p.total) {
            (Some(m), _) => m.clone(),
            (None, Some(total)) => format!("progress {}/{total}", p.progress),
            (None, None) => format!("progress {}", p.progress),
        };
        let update = status_saying(TaskState::Working, &text, &self.ctx, &self.task);
        self.hub.apply(&self.scope, &self.task, None, update).await.map(|_| ()).map_err(|e| RelayError {
            code: -32603,
            message: e.message,
            data: None,
        })
    }

    async fn ask(&self, question: Question) -> Result<Value, RelayError> {
        let what = match question {
            Question::Input(_) => "input from the user mid-call (the tool may ask between turns instead: MRTR)",
            Question::Sample(_) => "a model completion (MCP sampling)",
            Question::Roots => "the client's roots",
        };
        Err(RelayError {
            code: -32601,
            message: format!(
                "the caller is an A2A client behind a Switchyard `tools` agent, which cannot provide {what}"
            ),
            data: None,
        })
    }

    fn capabilities(&self) -> Option<Value> {
        None
    }

    fn log_level(&self) -> Option<String> {
        None
    }
}

/// A tool's answer as task changes: its content as one artifact and the final status.
pub(super) fn outcome(content: Content, op: &Operation, ctx: &str, task: &str, note: Change) -> Vec<Change> {
    if let Some(asked) = &content.needs_input {
        let mut status = status_saying(TaskState::InputRequired, &asked.message, ctx, task);
        if let (Change::Status(s), Some(schema)) = (&mut status, &asked.schema)
            && let Some(m) = s.message.as_mut()
        {
            m.parts.push(Part::data(json!({"requestedSchema": schema})));
        }
        return vec![note, status];
    }
    if content.is_error {
        let text = content.text();
        let text = if text.is_empty() { "the tool reported an error".to_string() } else { text };
        return vec![note, status_saying(TaskState::Failed, &text, ctx, task)];
    }
    let mut parts = Vec::with_capacity(content.parts.len() + 1);
    if let Some(s) = &content.structured {
        parts.push(Part::data(s.clone()));
    }
    for p in content.parts {
        parts.push(match p {
            switchyard_contract::Part::Text { text } => Part::text(text),
            switchyard_contract::Part::Data { data } => Part::data(data),
            switchyard_contract::Part::Bytes { data, media_type, name } => {
                let mut part = Part::raw(data);
                part.media_type = media_type;
                part.filename = name;
                part
            }
            switchyard_contract::Part::Artifact { id, media_type, name, .. } => {
                let mut part = Part::url(format!("{KEPT_SCHEME}{id}"));
                part.media_type = media_type;
                part.filename = name;
                part
            }
            // A link claiming to be a reference into the gateway's artifact store (which only the
            // gateway writes) is the tool's text, never a reference to hydrate.
            switchyard_contract::Part::Link { uri, .. } if uri.starts_with(KEPT_SCHEME) => Part::text(uri),
            switchyard_contract::Part::Link { uri, media_type, name, .. } => {
                let mut part = Part::url(uri);
                part.media_type = media_type;
                part.filename = name;
                part
            }
        });
    }
    let mut changes = vec![note];
    if !parts.is_empty() {
        changes.push(Change::Artifact {
            artifact: Artifact {
                artifact_id: "result".into(),
                name: Some(op.name.clone()),
                description: None,
                parts,
                metadata: None,
                extensions: None,
            },
            append: false,
            last_chunk: true,
        });
    }
    changes.push(Change::Status(a2a::TaskStatus { state: TaskState::Completed, message: None, timestamp: None }));
    changes
}
