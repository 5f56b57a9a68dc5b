//! Questions a legacy upstream asks a 2026-07-28 client mid-call (elicitation, sampling, roots).
//! Such a client cannot take server→client requests, so the gateway answers its round with
//! `input_required` and holds the upstream's pending request — on the pooled upstream session, in
//! this process — until the client's next round (with the sealed `requestState` naming the hold)
//! brings the answer. A hold expires after the `requestState` lifetime: the upstream then gets an
//! error for its question and the call goes on without the answer. A round that reaches another
//! replica (or this one after a restart) finds no hold and is told so.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{CallToolResponse, InputRequest, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use switchyard_contract::{Principal, RelayError, Submitted};
use tokio::sync::oneshot;

use super::call::{Ran, Round};
use super::mrtr::Sealed;
use super::relay::McpRelay;
use super::{MAX_ROUNDS, McpFace, internal, invalid, pending_result};

/// At most this many questions are held at once in one gateway process.
const MAX_HELD: usize = 10_000;

/// One call waiting for its client's answers.
pub(super) struct HeldCall {
    relay: Arc<McpRelay>,
    submitted: Submitted,
    answers: Vec<(String, oneshot::Sender<Result<Value, RelayError>>)>,
}

impl HeldCall {
    /// Unanswered: the upstream hears so (the answers drop), and later questions of the call
    /// are refused at once.
    fn refuse(self) {
        if let Some(q) = &self.relay.questions {
            q.close();
        }
    }
}

/// The calls this process holds, by hold id.
#[derive(Default)]
pub struct Held(Mutex<HashMap<String, HeldCall>>);

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("calls", &self.0.lock().map(|m| m.len()).unwrap_or_default()).finish()
    }
}

impl Held {
    /// Holds `call` for `ttl`; `None` (and the upstream's questions refused) when it cannot.
    fn hold(self: &Arc<Self>, call: HeldCall, ttl: Duration) -> Option<String> {
        let mut bytes = [0u8; 16];
        let id = aws_lc_rs::rand::fill(&mut bytes).ok().map(|()| hex::encode(bytes));
        let refused = match (id.as_ref(), self.0.lock()) {
            (Some(id), Ok(mut m)) if m.len() < MAX_HELD => m.insert(id.clone(), call),
            _ => Some(call),
        };
        if let Some(call) = refused {
            call.refuse();
            return None;
        }
        let id = id?;
        let (held, key) = (Arc::downgrade(self), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if let Some(call) = Weak::upgrade(&held).and_then(|h| h.take(&key)) {
                call.refuse();
            }
        });
        Some(id)
    }

    fn take(&self, id: &str) -> Option<HeldCall> {
        self.0.lock().ok().and_then(|mut m| m.remove(id))
    }
}

impl McpFace {
    /// Answers the client's round with the upstream's questions and holds the call for the
    /// next round.
    pub(super) fn hold(
        &self,
        submitted: Submitted,
        relay: Arc<McpRelay>,
        round: &Round,
        who: &Principal,
        name: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let prev = submitted.invocation.id.to_string();
        if round.n >= MAX_ROUNDS {
            // Enough rounds: the upstream's question is refused, and the call goes on without it.
            if let Some(q) = &relay.questions {
                q.close();
            }
            let state = submitted.invocation.state.name();
            return Ok(CallToolResponse::Complete(pending_result(submitted.invocation.id, state.as_str())));
        }
        let asked = relay.questions.as_ref().map(|q| q.take()).unwrap_or_default();
        let mut requests: BTreeMap<String, InputRequest> = BTreeMap::new();
        let mut answers = Vec::new();
        for (i, a) in asked.into_iter().enumerate() {
            let key = format!("upstream-{}", i + 1);
            requests.insert(key.clone(), a.request);
            answers.push((key, a.answer));
        }
        let call = HeldCall { relay, submitted, answers };
        let hold = self.shared.held.hold(call, self.shared.state_ttl).ok_or_else(|| {
            internal(format!(
                "the gateway already holds {MAX_HELD} unanswered questions; the call goes on without an answer"
            ))
        })?;
        let sealed = Sealed { prev: Some(prev), up: None, key: round.key.clone(), round: round.n, held: Some(hold) };
        let state = self.seal(who, "tool", name, &sealed)?;
        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state))))
    }

    /// The client's next round of a held call: its answers go to the upstream, and the call is
    /// waited for again (until it settles, asks again, or the client leaves).
    pub(super) async fn resume_held(
        &self,
        hold: &str,
        round: &mut Round,
        wait: Duration,
        ctx: &RequestContext<RoleServer>,
        who: &Principal,
    ) -> Result<(Ran, Arc<McpRelay>), ErrorData> {
        let call = self.shared.held.take(hold).filter(|c| Some(c.submitted.invocation.id.to_string()) == round.prev);
        let Some(call) = call else {
            return Err(invalid(format!(
                "requestState names a question this gateway no longer holds: it went unanswered for longer than {} s, \
                 or was asked on another gateway replica; the call itself goes on as invocation {}",
                self.shared.state_ttl.as_secs(),
                round.prev.as_deref().unwrap_or("?")
            )));
        };
        let mut responses: InputResponses = round.responses.take().unwrap_or_default();
        for (key, answer) in call.answers {
            let _ = answer.send(responses.remove(&key).ok_or_else(|| RelayError {
                code: i64::from(rmcp::model::ErrorCode::INVALID_PARAMS.0),
                message: format!("the client's round did not answer `{key}`"),
                data: None,
            }));
        }
        call.relay.rebind(ctx.peer.clone(), ctx.meta.get_progress_token());
        let inv = call.submitted.invocation.id;
        let questions = call.relay.questions.clone();
        let asked = async {
            match &questions {
                Some(q) => q.wait().await,
                None => std::future::pending().await,
            }
        };
        let ran = tokio::select! {
            waited = self.shared.engine.wait(&who.tenant, inv, wait) => {
                Ran::Settled(waited.map_err(|e| crate::error::rpc_error(&e, None))?)
            }
            () = asked => Ran::Asked(call.submitted),
            () = ctx.ct.cancelled() => {
                Ran::Answer(self.client_gone(ctx.id.clone(), who, &call.submitted, round.key.is_some()))
            }
        };
        Ok((ran, call.relay))
    }
}
