//! When a client stops waiting for a tools/call. Closing the response stream is MCP's way to
//! cancel on HTTP, so the call a request made is canceled with it. But a keyed call, or one a
//! request only attached to (same key), outlives its connection: a network blip must not make a
//! write `unknown`, and one client must not cancel another's call. Those are canceled only
//! explicitly: a legacy session's `notifications/cancelled`, `tasks/cancel`, or the admin API.
//!
//! rmcp cancels the request's token before it hands `notifications/cancelled` to the face, so
//! the waiting call and the notification meet in [`Cancels`], whichever comes first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, RequestId};
use serde_json::json;
use switchyard_contract::{InvocationId, Principal, Submitted};
use tracing::{info, warn};

use super::{McpFace, Shared, error_result};

/// How long a session remembers a detached call or an early `notifications/cancelled`.
const REMEMBER: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A keyed or attached call whose client stopped waiting, and who made it.
    Detached(InvocationId, Principal),
    /// A `notifications/cancelled` that arrived before its call detached.
    Cancelled,
}

/// One session's detached calls and explicit cancellations, by request id.
#[derive(Debug, Default)]
pub(super) struct Cancels(Mutex<HashMap<RequestId, Entry>>);

impl Cancels {
    /// The call `id` detached from its client; cancels it if the client already asked to.
    fn detach(self: &Arc<Self>, shared: &Arc<Shared>, id: RequestId, who: &Principal, inv: InvocationId) {
        let cancelled = match self.0.lock() {
            Ok(mut m) => match m.remove(&id) {
                Some(Entry::Cancelled) => true,
                _ => {
                    m.insert(id.clone(), Entry::Detached(inv, who.clone()));
                    false
                }
            },
            Err(_) => false,
        };
        if cancelled {
            cancel(shared, who.clone(), inv);
        } else {
            self.forget_later(id);
        }
    }

    /// A legacy session's `notifications/cancelled` for request `id`.
    pub(super) fn explicit(self: &Arc<Self>, shared: &Arc<Shared>, id: RequestId) {
        let detached = match self.0.lock() {
            Ok(mut m) => match m.remove(&id) {
                Some(Entry::Detached(inv, by)) => Some((inv, by)),
                _ => {
                    m.insert(id.clone(), Entry::Cancelled);
                    None
                }
            },
            Err(_) => None,
        };
        match detached {
            Some((inv, by)) => cancel(shared, by, inv),
            None => self.forget_later(id),
        }
    }

    fn forget_later(self: &Arc<Self>, id: RequestId) {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(REMEMBER).await;
            if let Some(me) = me.upgrade()
                && let Ok(mut m) = me.0.lock()
            {
                m.remove(&id);
            }
        });
    }
}

/// Cancels `inv` in the background. A bridged call's agent may not have acknowledged its task
/// yet (nothing it could confirm): asked again a few times before giving up.
fn cancel(shared: &Arc<Shared>, by: Principal, inv: InvocationId) {
    let shared = shared.clone();
    tokio::spawn(async move {
        info!(invocation.id = %inv, "client canceled tools/call; canceling the invocation");
        for _ in 0..CANCEL_TRIES {
            match shared.cancel(&by, inv).await {
                Err(e) if e.kind == switchyard_contract::ErrorKind::Unavailable => {
                    tokio::time::sleep(CANCEL_RETRY).await;
                }
                Err(e) => return warn!(invocation.id = %inv, error = %e, "cancel failed"),
                Ok(()) => return,
            }
        }
        warn!(invocation.id = %inv, "cancel failed: the agent never acknowledged the task");
    });
}

const CANCEL_TRIES: usize = 20;
const CANCEL_RETRY: Duration = Duration::from_millis(250);

impl McpFace {
    /// The answer (never seen: the client is gone) once the client stopped waiting; cancels
    /// the call only when it was this request's own unkeyed call.
    pub(super) fn client_gone(
        &self,
        request: RequestId,
        who: &Principal,
        submitted: &Submitted,
        keyed: bool,
    ) -> CallToolResult {
        let inv = submitted.invocation.id;
        if submitted.created && !keyed {
            cancel(&self.shared, who.clone(), inv);
            return error_result(inv, "canceled by the client");
        }
        info!(invocation.id = %inv, "client stopped waiting for a keyed call; it goes on (retry with the same key to attach)");
        self.cancels.detach(&self.shared, request, who, inv);
        pending_result(inv, submitted.invocation.state.name().as_str())
    }
}

/// The answer for a call that has not settled yet: an error result that says so, tells the
/// client not to call again blindly, and names the invocation (like an unknown outcome).
pub(super) fn pending_result(id: InvocationId, state: &str) -> CallToolResult {
    let mut r = error_result(
        id,
        &format!(
            "the call is still running (invocation {id}, {state}); its outcome is not known yet. Do not call again \
             blindly: retry with the same idempotency key to attach to it, or follow the invocation in the admin API."
        ),
    );
    r.structured_content = Some(json!({ "invocation": id.to_string(), "state": state }));
    r
}
