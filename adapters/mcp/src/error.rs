//! Contract errors on the MCP wire, written out once, kind by kind. Every JSON-RPC error the
//! face makes from a contract error carries `data: {kind, retrySafe, source}` (and the
//! invocation, when there is one), so a client can tell whether repeating the call is safe.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Value, json};
use switchyard_contract::{Error, ErrorKind, ErrorSource, InvocationId};

/// The JSON-RPC error for `e`, about `invocation` if one exists.
pub fn rpc_error(e: &Error, invocation: Option<InvocationId>) -> ErrorData {
    let code = match e.kind() {
        // The request names something the caller cannot use (an unknown tool or task, another
        // tenant's id): MCP reports those as invalid params, never as "not found" (no such code).
        ErrorKind::NotFound => ErrorCode::INVALID_PARAMS,
        // The same idempotency key with other arguments: the request is wrong, nothing ran.
        ErrorKind::Conflict => ErrorCode::INVALID_PARAMS,
        ErrorKind::InvalidInput => ErrorCode::INVALID_PARAMS,
        // Authentication happens at HTTP (401/403) before JSON-RPC; one that reaches here is the
        // gateway's own failure to carry the caller.
        ErrorKind::Unauthenticated => ErrorCode::INTERNAL_ERROR,
        // An upstream owned by another face, or a policy refusal: the gateway declines to run it.
        ErrorKind::Forbidden => ErrorCode::INVALID_REQUEST,
        // The store or the gateway could not do its part; `retrySafe` says repeating is safe.
        ErrorKind::Unavailable => ErrorCode::INTERNAL_ERROR,
        ErrorKind::Internal => ErrorCode::INTERNAL_ERROR,
    };
    ErrorData::new(code, e.message.clone(), Some(data(e, invocation)))
}

fn source(s: ErrorSource) -> &'static str {
    match s {
        ErrorSource::Client => "client",
        ErrorSource::Gateway => "gateway",
        ErrorSource::Upstream => "upstream",
        ErrorSource::Policy => "policy",
    }
}

fn data(e: &Error, invocation: Option<InvocationId>) -> Value {
    let mut d = json!({
        "kind": serde_json::to_value(e.kind()).unwrap_or(Value::Null),
        "retrySafe": e.retry_safe,
        "source": source(e.source),
    });
    if let Some(id) = invocation {
        d["invocation"] = json!(id.to_string());
    }
    if let Some(ms) = e.retry_after_ms {
        d["retryAfterMs"] = json!(ms);
    }
    d
}

/// Typed failures of the adapter's own work, each carrying a message for the operator.
macro_rules! message_error {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }
    )*};
}

message_error! {
    /// An upstream could not be discovered (listed and pinned).
    DiscoveryError,
    /// The gateway could not get, or keep, an upstream's OAuth authorization.
    OAuthFlowError,
    /// Credentials could not be sealed or opened at rest.
    SealError,
    /// An upstream session could not be had.
    SessionError,
}

impl From<OAuthFlowError> for SessionError {
    fn from(e: OAuthFlowError) -> Self {
        Self(e.0)
    }
}

impl From<switchyard_contract::InvalidConfig> for OAuthFlowError {
    fn from(e: switchyard_contract::InvalidConfig) -> Self {
        Self(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_code_and_says_whether_a_retry_is_safe() {
        let cases = [
            (Error::not_found("x"), -32602, true),
            (Error::conflict("x"), -32602, false),
            (Error::invalid_input("x"), -32602, false),
            (Error::new(ErrorKind::Unauthenticated, ErrorSource::Client, false, "x"), -32603, false),
            (Error::forbidden("x"), -32600, false),
            (Error::unavailable("x"), -32603, true),
            (Error::internal("x"), -32603, false),
        ];
        let inv = InvocationId::new();
        for (e, code, safe) in cases {
            let rpc = rpc_error(&e, Some(inv));
            assert_eq!(rpc.code.0, code, "{:?}", e.kind());
            let data = rpc.data.unwrap_or_default();
            assert_eq!(data["retrySafe"], safe, "{:?}", e.kind());
            assert_eq!(data["invocation"], inv.to_string());
            assert_eq!(data["kind"], serde_json::to_value(e.kind()).unwrap_or_default());
        }
    }
}
