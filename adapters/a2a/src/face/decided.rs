//! Sends the policy enforcement point did not let run at once. A first message's is rendered as
//! its own task (A2A has no "held" answer): a **denied** one's task ends `TASK_STATE_REJECTED`
//! with the reason (nothing was admitted: no run); a **held** one's task is created
//! `TASK_STATE_SUBMITTED` with a status message saying it awaits approval and naming the
//! invocation. Approval runs it (the run moves the same task on); a denial or an expiry ends it
//! `TASK_STATE_REJECTED`: the deciding replica's engine tells the agent
//! ([`Upstream::refused`](switchyard_contract::Upstream)), and a follower this face starts
//! catches a denial made at the command line.
//!
//! A **follow-up** never changes the task it names unless it runs: a denied one is answered with
//! the policy's error, a held one with a message of the agent saying it waits (the task moves
//! on only if it is approved and runs; a denial or an expiry leaves it as it was).

use a2a::{Task, TaskState};
use switchyard_contract::{Event, Invocation, RunCursor};

use super::send::Send;
use super::*;
use crate::run::{status_saying, submitted};

impl A2aFace {
    /// A send the policy refused: its task (new, or the follow-up's) ends rejected, saying why.
    pub(super) async fn denied(
        &self,
        agent: &AgentEntry,
        send: &Send,
        reason: &str,
        streaming: bool,
    ) -> Result<Reply, A2aError> {
        let text = format!("refused by the gateway's policy: {reason}");
        if !send.new_task {
            return Err(A2aError::new(crate::error::Kind::PermissionDenied, text));
        }
        // No run exists: the task names a cursor of its own, so nothing replays into it.
        let cursor = RunCursor { invocation: InvocationId::new(), step: 1 };
        let task = self.decided_task(agent, send, cursor, TaskState::Rejected, &text).await?;
        self.render_decided(send, task, streaming)
    }

    /// A send held for approval as invocation `inv`: its task waits, saying so, and a follower
    /// ends it rejected if the call is denied or expires.
    pub(super) async fn held(
        &self,
        agent: &AgentEntry,
        send: &Send,
        inv: &Invocation,
        streaming: bool,
    ) -> Result<Reply, A2aError> {
        let reason = self.engine.hold_reason(inv).await;
        let text = format!(
            "waits for approval{} (invocation {}): it runs once an operator approves it, and is rejected if \
             denied or not decided in time",
            reason.map(|r| format!(": {r}")).unwrap_or_default(),
            inv.id
        );
        if !send.new_task {
            return Ok(self.held_follow_up(send, &text, streaming));
        }
        // Step 0 of the run: the approved run's own first step (1) still applies.
        let cursor = RunCursor { invocation: inv.id, step: 0 };
        let task = self.decided_task(agent, send, cursor, TaskState::Submitted, &text).await?;
        self.follow_held(inv.clone());
        self.render_decided(send, task, streaming)
    }

    /// A held follow-up's answer: a message of the agent on the task, saying `text`; the task
    /// itself is unchanged until the call is approved and runs.
    fn held_follow_up(&self, send: &Send, text: &str, streaming: bool) -> Reply {
        let run: Option<RunRequest> = serde_json::from_value(send.submission.request.clone()).ok();
        let context = run.as_ref().map_or("", |r| r.context_id.as_str());
        let message = crate::run::agent_message(vec![a2a::Part::text(text)], context, Some(send.task_id.as_str()));
        if streaming {
            Reply::Stream(futures::stream::once(async move { Ok(StreamResponse::Message(message)) }).boxed())
        } else {
            Reply::Send(SendMessageResponse::Message(message))
        }
    }

    /// The send's task with a status `state` saying `text`: created for a new task (or found, if
    /// a resend created it), changed for a follow-up's.
    async fn decided_task(
        &self,
        agent: &AgentEntry,
        send: &Send,
        cursor: RunCursor,
        state: TaskState,
        text: &str,
    ) -> Result<(Task, i64), A2aError> {
        let run: RunRequest = serde_json::from_value(send.submission.request.clone())
            .map_err(|e| A2aError::internal(format!("run request: {e}")))?;
        let change = status_saying(state, text, &run.context_id, &run.task_id);
        if send.new_task {
            self.hub.create(&send.scope, &agent.config.name, &submitted(&run), cursor, vec![change]).await?;
        } else {
            self.hub.apply_all(&send.scope, &send.task_id, None, vec![change]).await?;
        }
        let rec = self.record(agent, &send.scope, &send.task_id).await?;
        Ok((task_of(&rec)?, rec.version))
    }

    /// The decided task as the send's answer; on a stream, followed by its later events (a held
    /// task's approval run, or its rejection).
    fn render_decided(&self, send: &Send, (task, version): (Task, i64), streaming: bool) -> Result<Reply, A2aError> {
        let task = slice_history(task, send.history_length);
        if !streaming {
            return Ok(Reply::Send(SendMessageResponse::Task(task)));
        }
        let terminal = task.status.state.is_terminal();
        let first = futures::stream::once(async move { Ok(StreamResponse::Task(task)) });
        if terminal {
            return Ok(Reply::Stream(first.boxed()));
        }
        let rest = self.hub.follow(send.task_id.clone(), version, true);
        Ok(Reply::Stream(first.chain(rest).boxed()))
    }

    /// Waits (in the background) for the held call's next event: a denial or an expiry ends its
    /// task rejected (as the deciding replica's engine does too; this catches a denial made at
    /// the command line); an approval leaves the task to the run.
    fn follow_held(&self, inv: Invocation) {
        let (engine, hub) = (self.engine.clone(), self.hub.clone());
        tokio::spawn(async move {
            let tenant = inv.principal.tenant.clone();
            let mut events = engine.watch(tenant.clone(), inv.id, inv.last_seq);
            let next: Option<Event> = events.next().await.and_then(Result::ok);
            drop(events);
            if next.is_some()
                && let Ok(now) = engine.get(&tenant, inv.id).await
            {
                crate::run::reject_held(&hub, &now).await;
            }
        });
    }
}
