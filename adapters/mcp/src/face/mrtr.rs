//! MRTR mediation: the `requestState` the gateway hands to clients (HMAC-sealed, bound to the
//! caller and the tool or resource, expiring), and answering an upstream's input requests for
//! legacy clients, which cannot take `input_required` results.

use rmcp::model::{
    ClientRequest, ClientResult, InputRequest, InputRequiredResult, InputResponses, SealOptions, ServerRequest,
    ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::{Deserialize, Serialize};
use switchyard_contract::Principal;

use super::{MAX_ROUNDS, McpFace, internal, invalid, modern, principal};
use crate::client::service_error;

/// What the gateway seals into the `requestState` it gives a client.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Sealed {
    /// The invocation whose `input_required` answer this continues (tools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) prev: Option<String>,
    /// The upstream's own `requestState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) up: Option<String>,
    /// The client's idempotency key, carried across rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) key: Option<String>,
    pub(super) round: u32,
    /// The hold of a legacy upstream's questions that this round answers (tools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) held: Option<String>,
}

impl McpFace {
    fn seal_data(who: &Principal, kind: &str, name: &str) -> Vec<u8> {
        format!("{}\n{}\n{kind}\n{name}", who.tenant, who.subject).into_bytes()
    }

    pub(super) fn seal(&self, who: &Principal, kind: &str, name: &str, s: &Sealed) -> Result<String, ErrorData> {
        let ad = Self::seal_data(who, kind, name);
        self.shared
            .codec
            .seal_json_with(s, &SealOptions::new().associated_data(&ad).ttl(self.shared.state_ttl))
            .map_err(|e| internal(format!("cannot seal requestState: {e}")))
    }

    pub(super) fn open(&self, who: &Principal, kind: &str, name: &str, state: &str) -> Result<Sealed, ErrorData> {
        self.shared.codec.open_json_with(state, &Self::seal_data(who, kind, name)).map_err(|_| {
            invalid("requestState is invalid: it was altered, has expired, or belongs to another call or caller")
        })
    }

    /// Answers an upstream's input requests by asking a legacy client directly.
    pub(super) async fn ask_legacy(
        &self,
        requests: &std::collections::BTreeMap<String, InputRequest>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<InputResponses, ErrorData> {
        let mut answers = InputResponses::new();
        for (key, request) in requests {
            let request = match request.clone() {
                InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
                InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
                InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
                _ => return Err(internal("the upstream asked for an input kind this gateway does not know")),
            };
            let answer = ctx.peer.send_request(request).await.map_err(service_error)?;
            let value = match answer {
                ClientResult::CreateMessageResult(r) => serde_json::to_value(*r),
                ClientResult::ElicitResult(r) => serde_json::to_value(r),
                ClientResult::ListRootsResult(r) => serde_json::to_value(r),
                other => serde_json::to_value(other),
            }
            .map_err(|e| internal(e.to_string()))?;
            answers.insert(key.clone(), value);
        }
        Ok(answers)
    }

    /// prompts/get and resources/read: forwarded; an `input_required` answer is sealed (modern
    /// clients) or answered by asking the client (legacy).
    pub(super) async fn forward_mrtr(
        &self,
        upstream: &str,
        kind: &str,
        name: &str,
        make: impl Fn(Option<InputResponses>, Option<String>) -> ClientRequest,
        resume: (Option<&str>, Option<InputResponses>),
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Result<ServerResult, InputRequiredResult>, ErrorData> {
        let who = principal(ctx)?;
        let (client_state, mut responses) = resume;
        let (mut up, mut round) = (None, 1u32);
        if let Some(state) = client_state {
            let sealed = self.open(&who, kind, name, state)?;
            (up, round) = (sealed.up, sealed.round + 1);
        }
        loop {
            let answer = self.forward(upstream, make(responses.take(), up.take()), ctx).await?;
            let ServerResult::InputRequiredResult(asked) = answer else { return Ok(Ok(answer)) };
            if modern(ctx) {
                let state = self.seal(
                    &who,
                    kind,
                    name,
                    &Sealed { prev: None, up: asked.request_state.clone(), key: None, round, held: None },
                )?;
                return Ok(Err(InputRequiredResult::new(asked.input_requests, Some(state))));
            }
            if round >= MAX_ROUNDS {
                return Err(internal("the upstream asked for input too many times"));
            }
            responses = Some(self.ask_legacy(&asked.input_requests.clone().unwrap_or_default(), ctx).await?);
            up = asked.request_state;
            round += 1;
        }
    }
}
