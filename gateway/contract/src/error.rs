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
}

/// A contract error. `message` is safe to show to clients (no internals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Whether repeating the same request cannot cause a second effect.
    pub retry_safe: bool,
    pub source: ErrorSource,
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
        Self { kind, message: message.into(), retry_safe, source }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, ErrorSource::Client, true, message)
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

/// A failure recorded as an invocation's final outcome (durable, shown to clients).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// A short machine-readable code, e.g. `upstream_rejected`, `attempts_exhausted`.
    pub code: String,
    pub message: String,
    /// Whether submitting the same request again (with a new key) cannot double an effect.
    pub retry_safe: bool,
    pub source: ErrorSource,
    /// Structured detail from the upstream (e.g. a JSON-RPC error's `code` and `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl FailureRecord {
    pub fn new(code: impl Into<String>, message: impl Into<String>, retry_safe: bool, source: ErrorSource) -> Self {
        Self { code: code.into(), message: message.into(), retry_safe, source, details: None }
    }
}
