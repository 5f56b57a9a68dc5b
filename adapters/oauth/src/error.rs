//! Why a credential was refused. Messages are safe to return to the client; they never
//! contain the token.

/// An authentication failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No credential was presented.
    #[error("no bearer token")]
    Missing,
    /// The credential is malformed, forged, expired, for another audience or issuer, …
    #[error("{0}")]
    InvalidToken(String),
    /// The issuer's keys could not be fetched (the token may be fine: retry later).
    #[error("cannot verify the token now: {0}")]
    Unavailable(String),
}

impl AuthError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidToken(message.into())
    }
}
