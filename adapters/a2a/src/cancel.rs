//! CancelTask, from any face (the A2A face's and the bridge's `cancel_task`): one rule for every
//! kind of agent.

use a2a::{Task, TaskState, TaskStatus};
use switchyard_contract::{Invocations, Principal, TaskRecord};

use crate::error::{A2aError, Kind};
use crate::hub::{Change, Hub, task_of};
use crate::proxy::Proxy;

/// Cancels task `rec` and its run for `who` (CancelTask, from any face): an upstream agent
/// (`proxy`) is asked first, and only its confirmation lets the run end `canceled`; a task the
/// agent has not acknowledged yet is left as it is.
pub(crate) async fn cancel_task(
    hub: &Hub,
    proxy: Option<&Proxy>,
    engine: &dyn Invocations,
    who: &Principal,
    rec: &TaskRecord,
) -> Result<Task, A2aError> {
    let task = task_of(rec)?;
    let not_cancelable = |t: &Task| {
        A2aError::new(
            Kind::TaskNotCancelable,
            format!("task `{}` is {} and cannot be canceled", t.id, crate::hub::state_name(&t.status.state)),
        )
    };
    if task.status.state.is_terminal() {
        return Err(not_cancelable(&task));
    }
    let run = rec.run_cursor.map(|c| c.invocation);
    if let Some(p) = proxy
        && !p.cancel_upstream(hub, &rec.scope, &rec.id, run).await?
    {
        // Nothing to ask the agent to cancel yet, so nothing it could confirm: change nothing.
        return Err(A2aError::new(
            Kind::TaskNotCancelable,
            format!("task `{}` has not been acknowledged by the agent yet; cancel it again shortly", task.id),
        ));
    }
    if let Some(inv) = run
        && let Err(e) = engine.cancel(who, inv).await
    {
        tracing::debug!(invocation.id = %inv, error = %e, "run not cancelable (already settled)");
    }
    let canceled = TaskStatus { state: TaskState::Canceled, message: None, timestamp: None };
    match hub.apply(&rec.scope, &rec.id, None, Change::Status(canceled)).await? {
        Some(rec) => task_of(&rec),
        None => {
            let now = hub.get(&rec.scope, &rec.id).await?.ok_or_else(|| A2aError::task_not_found(&rec.id))?;
            let now = task_of(&now)?;
            if now.status.state == TaskState::Canceled { Ok(now) } else { Err(not_cancelable(&now)) }
        }
    }
}
