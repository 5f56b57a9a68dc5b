//! The policy core's errors.

/// A policy that cannot be used as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy: {0}")]
pub struct PolicyError(pub String);

/// A condition that cannot be evaluated on a call (the value is absent or of another type): the
/// evaluator denies the call (fail closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unevaluable(pub String);
