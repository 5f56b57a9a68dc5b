//! The contract's [`Upstream`] for an MCP server: one `tools/call` per attempt, on a session of
//! the upstream's pool. The stored request is [`ToolRequest`]; the result is the upstream's
//! answer as JSON (a `CallToolResult`, or an `input_required` result for another round).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    ErrorCode, InputResponses, JsonObject, ReadResourceRequest, ReadResourceRequestParams, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchyard_contract::{AttemptId, CancelAck, DispatchCall, EffectClass, FailureCode, Upstream, UpstreamError};
use tokio_util::sync::CancellationToken;

use crate::client::{Pool, request_meta};
use crate::skills::{SKILL_READ, SkillRead};

/// A tools/call as the invocation stores it (and its digest covers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolRequest {
    /// The tool's name at the upstream (not the prefixed name clients see).
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// MRTR: the answers for the upstream's previous `input_required` round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// MRTR: the upstream's own `requestState` from that round, passed back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// MRTR: the invocation whose `input_required` result this round answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
}

/// One upstream MCP server as the engine calls it.
pub struct McpUpstream {
    pool: Arc<Pool>,
    in_flight: Mutex<HashMap<AttemptId, CancellationToken>>,
}

/// How many times a call the upstream refused for its `Mcp-Param-*` headers (before running it)
/// is sent again after its session lists the tools again.
const HEADER_RESENDS: usize = 2;

impl std::fmt::Debug for McpUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpUpstream").field("pool", &self.pool).finish_non_exhaustive()
    }
}

impl McpUpstream {
    pub fn new(pool: Arc<Pool>) -> Self {
        Self { pool, in_flight: Mutex::new(HashMap::new()) }
    }

    fn track(&self, attempt: AttemptId) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut m) = self.in_flight.lock() {
            m.insert(attempt, token.clone());
        }
        token
    }

    fn untrack(&self, attempt: AttemptId) {
        if let Ok(mut m) = self.in_flight.lock() {
            m.remove(&attempt);
        }
    }

    /// The request an attempt sends: a skill file's `resources/read` for [`SKILL_READ`], else the
    /// stored `tools/call`.
    fn request(call: &DispatchCall) -> Result<ClientRequest, UpstreamError> {
        let invalid =
            |message: String| UpstreamError::Rejected { code: FailureCode::InvalidRequest, message, details: None };
        if call.target.operation == SKILL_READ {
            let read: SkillRead = serde_json::from_value(call.request.clone())
                .map_err(|e| invalid(format!("stored request is not a skill file read: {e}")))?;
            return Ok(ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(
                read.uri,
            ))));
        }
        let req: ToolRequest = serde_json::from_value(call.request.clone())
            .map_err(|e| invalid(format!("stored request is not an MCP tools/call: {e}")))?;
        // The effect class is the operation's: the tool called must be that operation.
        if req.tool != call.target.operation {
            return Err(invalid(format!(
                "the request names tool `{}` but the invocation's operation is `{}`",
                req.tool, call.target.operation
            )));
        }
        let mut params = CallToolRequestParams::new(req.tool.clone());
        params.arguments = req.arguments;
        params.input_responses = req.input_responses;
        params.request_state = req.request_state;
        Ok(ClientRequest::CallToolRequest(CallToolRequest::new(params)))
    }

    async fn call(&self, call: &DispatchCall, cancel: CancellationToken) -> Result<Value, UpstreamError> {
        let request = Self::request(call)?;
        let mut answer = self.send(call, request.clone(), cancel.clone()).await?;
        // The upstream refused the `Mcp-Param-*` headers rmcp mirrored from the session's tool
        // list, before running the tool (SEP-2243): that list no longer agrees with the
        // upstream's. The session lists its tools again (the lease marked it) and the same
        // request goes once more; nothing ran, so this is not a retry of an effect. At most
        // [`HEADER_RESENDS`] times: the resend may reach another session whose list is as old.
        for _ in 0..HEADER_RESENDS {
            if !matches!(&answer, Err(rmcp::ServiceError::McpError(e)) if e.code == ErrorCode::HEADER_MISMATCH)
                || cancel.is_cancelled()
            {
                break;
            }
            tracing::warn!(error = ?answer.as_ref().err(), "the upstream refused the mirrored Mcp-Param headers; listing its tools again and sending once more");
            answer = self.send(call, request.clone(), cancel.clone()).await?;
        }
        match answer.map(crate::client::from_upstream) {
            Ok(ServerResult::CallToolResult(r)) => json_of(&r),
            Ok(ServerResult::InputRequiredResult(r)) => json_of(&r),
            Ok(ServerResult::ReadResourceResult(r)) if call.target.operation == SKILL_READ => json_of(&r),
            Ok(other) => Err(UpstreamError::Rejected {
                code: FailureCode::UnexpectedResult,
                message: format!("the upstream answered tools/call with another kind of result: {}", kind(&other)),
                details: None,
            }),
            Err(rmcp::ServiceError::McpError(e)) => Err(UpstreamError::Rejected {
                code: FailureCode::RpcError,
                message: e.message.to_string(),
                details: Some(json!({ "code": e.code.0, "data": e.data })),
            }),
            Err(e) if never_sent(&e) => {
                Err(UpstreamError::Unavailable { message: format!("cannot connect to the upstream: {e}") })
            }
            Err(e) => Err(UpstreamError::Lost { message: format!("the upstream's reply was lost: {e}") }),
        }
    }

    /// Sends `request` on a session of the pool and waits for the upstream's answer.
    async fn send(
        &self,
        call: &DispatchCall,
        request: ClientRequest,
        cancel: CancellationToken,
    ) -> Result<Result<ServerResult, rmcp::ServiceError>, UpstreamError> {
        let relay = call.context.as_ref().map(|c| c.relay().clone());
        // Waiting for a free session (and its handshake) sends nothing: give up before the
        // attempt would time out, so that a write that never left is not `unknown`.
        let lease = match tokio::time::timeout_at(call.send_by, self.pool.acquire()).await {
            Ok(lease) => lease.map_err(|e| UpstreamError::Unavailable { message: e.0 })?,
            Err(_) => {
                return Err(UpstreamError::Unavailable {
                    message: "no upstream session became free in time; nothing was sent".into(),
                });
            }
        };
        let Some(peer) = lease.peer().cloned() else {
            return Err(UpstreamError::Unavailable { message: "no upstream session".into() });
        };
        lease.attach(relay.clone());
        lease.reuse_connection(call.target.effect == EffectClass::ReadOnly);
        let mut meta = relay.as_deref().map(request_meta).unwrap_or_default();
        // This attempt's span is the upstream's parent (SEP-414 `_meta` keys), when traced.
        if let Some(t) = switchyard_contract::trace::outgoing() {
            meta.0.set_traceparent(t.header());
            if let Some(state) = t.state {
                meta.0.set_tracestate(state);
            }
        }
        // Not queued: nothing reached the upstream, so trying again is safe.
        let handle = match peer.send_request_with_option(request, PeerRequestOptions::default().with_meta(meta)).await {
            Ok(h) => h,
            Err(e) => {
                lease.discard();
                return Err(UpstreamError::Unavailable { message: format!("upstream session closed: {e}") });
            }
        };
        lease.in_flight(handle.id.clone(), handle.progress_token.clone());
        // The wait runs in its own task, so that a dispatch dropped by the engine (attempt
        // timeout, or a confirmed cancel) still tells the upstream and retires the session.
        let id = handle.id.clone();
        let waiter = tokio::spawn(async move {
            tokio::select! {
                r = handle.await_response() => {
                    match &r {
                        Err(rmcp::ServiceError::McpError(e)) if e.code == ErrorCode::HEADER_MISMATCH => lease.relist(),
                        Err(rmcp::ServiceError::McpError(_)) | Ok(_) => {}
                        Err(_) => lease.discard(),
                    }
                    Some(r)
                }
                _ = cancel.cancelled() => {
                    let note = CancelledNotification::new(CancelledNotificationParam::new(
                        Some(id),
                        Some("canceled by the gateway".into()),
                    ));
                    let _ = peer.send_notification(note.into()).await;
                    lease.discard();
                    None
                }
            }
        });
        let mut guard = CancelOnDrop(self.in_flight_token(call.attempt));
        let waited = waiter.await;
        guard.0 = None; // finished: nothing to cancel
        let answer = match waited {
            Ok(Some(answer)) => answer,
            // MCP gives no confirmation that a tool stopped: a write may have happened.
            Ok(None) => {
                return Err(match call.target.effect {
                    EffectClass::ReadOnly => UpstreamError::Canceled,
                    EffectClass::Write => UpstreamError::Lost {
                        message: "canceled while the upstream was running it; MCP does not confirm whether the \
                                  tool stopped before taking effect"
                            .into(),
                    },
                });
            }
            Err(e) => return Err(UpstreamError::Lost { message: format!("the wait for the upstream failed: {e}") }),
        };
        Ok(answer)
    }

    fn in_flight_token(&self, attempt: AttemptId) -> Option<CancellationToken> {
        self.in_flight.lock().ok().and_then(|m| m.get(&attempt).cloned())
    }
}

/// Whether a send error proves the request never left: its cause is a refused or failed TCP
/// connect (a dead upstream shows here: a write goes on a connection of its own, see
/// [`crate::http`]). Any
/// other transport failure may have happened after bytes left, so it is a lost outcome.
fn never_sent(e: &rmcp::ServiceError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::ServiceError::TransportSend(inner) = e else { return false };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(inner.error.as_ref());
    while let Some(c) = cause {
        let connect = match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(r)) => r.is_connect(),
            _ => {
                c.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_connect)
                    || c.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
            }
        };
        if connect {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Cancels the upstream call when the dispatch future is dropped before it finished.
struct CancelOnDrop(Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.cancel();
        }
    }
}

fn json_of<T: Serialize>(v: &T) -> Result<Value, UpstreamError> {
    serde_json::to_value(v).map_err(|e| UpstreamError::Lost { message: format!("reply does not encode: {e}") })
}

fn kind(r: &ServerResult) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(",")))
        .unwrap_or_default()
}

#[async_trait]
impl Upstream for McpUpstream {
    async fn dispatch(&self, call: &DispatchCall) -> Result<Value, UpstreamError> {
        let cancel = self.track(call.attempt);
        let result = self.call(call, cancel).await;
        self.untrack(call.attempt);
        result
    }

    /// An MCP server knows nothing of the gateway's record: a read may go out while it commits.
    fn sends_before_the_record(&self) -> bool {
        true
    }

    /// Stops waiting for the upstream and tells it so. Confirmed only for a `read_only` tool:
    /// MCP does not say whether a tool stopped before taking effect, so a `write` keeps its
    /// dispatch, which then ends as a lost outcome (`unknown`).
    async fn cancel(&self, call: &DispatchCall) -> CancelAck {
        match self.in_flight_token(call.attempt) {
            Some(token) => {
                token.cancel();
                match call.target.effect {
                    EffectClass::ReadOnly => CancelAck::Confirmed,
                    EffectClass::Write => CancelAck::Unsupported,
                }
            }
            None => CancelAck::Unsupported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_requests_round_trip_and_refuse_unknown_fields() {
        let req = ToolRequest {
            tool: "t".into(),
            arguments: Some(JsonObject::from_iter([("a".to_string(), json!(1))])),
            input_responses: None,
            request_state: Some("s".into()),
            continues: None,
        };
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(v, json!({"tool": "t", "arguments": {"a": 1}, "requestState": "s"}));
        assert_eq!(serde_json::from_value::<ToolRequest>(v).ok(), Some(req));
        assert!(serde_json::from_value::<ToolRequest>(json!({"tool": "t", "x": 1})).is_err());
    }
}
