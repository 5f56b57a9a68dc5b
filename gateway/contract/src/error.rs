//! The contract's one error type, classified once: what kind of failure, whether the caller may
//! safely retry, and who failed. Adapters render it per wire (HTTP status, JSON-RPC code, …).

use serde::{Deserialize, Serialize};

/// What went wrong, as a caller needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NotFound,
    Conflict,
    InvalidInput,
    Unauthenticated,
    Forbidden,
    Unavailable,
    Internal,
}

/// Who failed: the caller's input, the gateway itself, or the upstream it called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSource {
    Client,
    Gateway,
    Upstream,
    /// The policy enforcement point decided (a denial, a deferral).
    Policy,
}

/// A contract error. `message` is safe to show to clients (no internals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Whether repeating the same request cannot cause a second effect.
    pub retry_safe: bool,
    pub source: ErrorSource,
    /// Come back after this long (a quota deferred the call; nothing was admitted).
    pub retry_after_ms: Option<u64>,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

// `source` here means who failed, not a wrapped error, so `Error` is implemented by hand.
impl std::error::Error for Error {}

impl Error {
    pub fn new(kind: ErrorKind, source: ErrorSource, retry_safe: bool, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), retry_safe, source, retry_after_ms: None }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, ErrorSource::Client, true, message)
    }
    /// The answer for an invocation the caller may not see: the same as for one that does not
    /// exist, so existence does not leak across tenants or subjects.
    pub fn invocation_not_found(id: impl std::fmt::Display) -> Self {
        Self::not_found(format!("invocation {id} not found"))
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, ErrorSource::Client, false, message)
    }
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, ErrorSource::Client, false, message)
    }
    /// The caller may not do this; nothing was changed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, ErrorSource::Client, false, message)
    }
    /// The policy enforcement point refused the call; nothing was admitted.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, ErrorSource::Policy, true, message)
    }
    /// The policy enforcement point deferred the call (a quota): nothing was admitted; ask again
    /// after `retry_after_ms`.
    pub fn deferred(message: impl Into<String>, retry_after_ms: u64) -> Self {
        Self {
            retry_after_ms: Some(retry_after_ms),
            ..Self::new(ErrorKind::Unavailable, ErrorSource::Policy, true, message)
        }
    }
    /// The gateway could not do its part (e.g. the database is down); nothing was admitted.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, ErrorSource::Gateway, true, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, ErrorSource::Gateway, false, message)
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// A configuration (or key) that cannot be used; the message names the setting and what is
/// wrong with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

impl From<String> for InvalidConfig {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for InvalidConfig {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

/// What failed, as an upstream or the engine reports it: classified once, here, so that no face
/// matches on strings. Stored and shown as its [`as_str`](Self::as_str) form (snake case for the
/// contract's own codes; an upstream's own code verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailureCode {
    /// The upstream could not be reached; nothing took effect (`upstream_unavailable`).
    UpstreamUnavailable,
    /// A `read_only` attempt's reply was lost (`outcome_lost`).
    OutcomeLost,
    /// The worker driving an attempt stopped; recovery took the invocation over (`attempt_lost`).
    AttemptLost,
    /// A `read_only` target failed on every attempt the retry policy allows
    /// (`attempts_exhausted`).
    AttemptsExhausted,
    /// No upstream of that name is configured in this process (`upstream_not_configured`).
    UpstreamNotConfigured,
    /// An operator (or an upstream's evidence) decided a lost outcome never took effect
    /// (`reconciled_not_applied`): sending it again is safe.
    NotApplied,
    /// The stored request is not one the upstream adapter can send (`invalid_request`).
    InvalidRequest,
    /// The upstream answered with another kind of result than asked for (`unexpected_result`).
    UnexpectedResult,
    /// The upstream has no such operation (`unknown_operation`).
    UnknownOperation,
    /// The upstream answered with a JSON-RPC error; `details` carry its `code` and `data`, so a
    /// face of the same protocol passes it on unchanged. Stored as `mcp_error` (its first user).
    RpcError,
    /// An approver denied a call the policy enforcement point held (`approval_denied`); nothing
    /// ran.
    ApprovalDenied,
    /// No approval came within the policy's approval time (`approval_expired`); nothing ran.
    ApprovalExpired,
    /// The policy enforcement point refused an approved call when it was about to run (an
    /// envelope or deny rule made since it was held, or an approval grant that does not check
    /// out) (`policy_denied`); nothing ran.
    PolicyDenied,
    /// A code the upstream named itself (an A2A `ErrorInfo.reason` such as
    /// `TASK_NOT_CANCELABLE`), kept verbatim.
    Upstream(String),
}

impl FailureCode {
    const NAMED: [FailureCode; 13] = [
        Self::UpstreamUnavailable,
        Self::OutcomeLost,
        Self::AttemptLost,
        Self::AttemptsExhausted,
        Self::UpstreamNotConfigured,
        Self::NotApplied,
        Self::InvalidRequest,
        Self::UnexpectedResult,
        Self::UnknownOperation,
        Self::RpcError,
        Self::ApprovalDenied,
        Self::ApprovalExpired,
        Self::PolicyDenied,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::OutcomeLost => "outcome_lost",
            Self::AttemptLost => "attempt_lost",
            Self::AttemptsExhausted => "attempts_exhausted",
            Self::UpstreamNotConfigured => "upstream_not_configured",
            Self::NotApplied => "reconciled_not_applied",
            Self::InvalidRequest => "invalid_request",
            Self::UnexpectedResult => "unexpected_result",
            Self::UnknownOperation => "unknown_operation",
            Self::RpcError => "mcp_error",
            Self::ApprovalDenied => "approval_denied",
            Self::ApprovalExpired => "approval_expired",
            Self::PolicyDenied => "policy_denied",
            Self::Upstream(code) => code,
        }
    }

    /// The code `s` names: one of the contract's own, else an upstream's.
    pub fn parse(s: &str) -> Self {
        Self::NAMED.into_iter().find(|c| c.as_str() == s).unwrap_or_else(|| Self::Upstream(s.to_string()))
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(d)?))
    }
}

/// A failure recorded as an invocation's final outcome (durable, shown to clients).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    pub code: FailureCode,
    pub message: String,
    /// Whether submitting the same request again (with a new key) cannot double an effect.
    pub retry_safe: bool,
    pub source: ErrorSource,
    /// Structured detail from the upstream (e.g. a JSON-RPC error's `code` and `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl FailureRecord {
    pub fn new(code: FailureCode, message: impl Into<String>, retry_safe: bool, source: ErrorSource) -> Self {
        Self { code, message: message.into(), retry_safe, source, details: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_codes_keep_their_stored_form() {
        for c in FailureCode::NAMED {
            assert_eq!(FailureCode::parse(c.as_str()), c);
            let json = serde_json::to_value(&c).unwrap_or_default();
            assert_eq!(json, serde_json::json!(c.as_str()));
            assert_eq!(serde_json::from_value::<FailureCode>(json).ok(), Some(c));
        }
        assert_eq!(FailureCode::parse("TASK_NOT_CANCELABLE"), FailureCode::Upstream("TASK_NOT_CANCELABLE".into()));
        assert_eq!(FailureCode::RpcError.as_str(), "mcp_error", "records written before the enum read back");
    }
}
