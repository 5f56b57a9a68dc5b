//! Who calls (`Principal`), what is called (`Target`) and the caller's idempotency key.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A tenant: every stored row and every query is scoped by one.
/// Invariant: 1–64 characters of `[A-Za-z0-9._-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

impl TenantId {
    /// Validates and wraps a tenant name.
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        let ok = (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if ok {
            Ok(Self(s))
        } else {
            Err(Error::invalid_input(format!(
                "tenant `{}` is invalid: use 1-64 characters of A-Z a-z 0-9 . _ -",
                s.chars().take(80).collect::<String>()
            )))
        }
    }

    /// The tenant name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TenantId {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl From<TenantId> for String {
    fn from(t: TenantId) -> String {
        t.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The authenticated caller: a subject inside a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub tenant: TenantId,
    pub subject: String,
}

impl Principal {
    pub fn new(tenant: TenantId, subject: impl Into<String>) -> Self {
        Self { tenant, subject: subject.into() }
    }
}

/// What a caller's credential grants, for a face that can check a scope only after routing a
/// request (the gRPC binding names its agent inside the message, not in the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// The operator, or an anonymous caller where configuration allows that: everything.
    All,
    /// These scopes only.
    Scopes(std::collections::BTreeSet<String>),
}

/// The scope that reads and cancels every task of the caller's tenant, not only the caller's
/// own (the operator's admin token holds it).
pub const TASKS_ADMIN: &str = "tasks:admin";

impl Grant {
    /// Whether `scope` is granted.
    pub fn allows(&self, scope: &str) -> bool {
        match self {
            Self::All => true,
            Self::Scopes(s) => s.contains(scope),
        }
    }

    /// Whether the caller reads and cancels every subject's tasks of its tenant, not only its
    /// own ([`TASKS_ADMIN`]).
    pub fn tenant_wide(&self) -> bool {
        self.allows(TASKS_ADMIN)
    }
}

/// What an operation does to the world. Taken from local configuration only, never from an
/// upstream's self-description: it decides whether a lost outcome may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// Safe to repeat: a lost outcome is retried automatically (bounded).
    ReadOnly,
    /// Changes the world: dispatched at most once automatically; a lost outcome is `unknown`.
    Write,
}

impl EffectClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Write => "write",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read_only" => Some(Self::ReadOnly),
            "write" => Some(Self::Write),
            _ => None,
        }
    }
}

/// Which upstream and operation an invocation calls, with its locally configured effect class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub upstream: String,
    pub operation: String,
    pub effect: EffectClass,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.upstream, self.operation)
    }
}

/// A caller-chosen idempotency key, unique per tenant.
/// Invariant: 1–255 printable ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IngressKey(String);

impl IngressKey {
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        if (1..=255).contains(&s.len()) && s.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            Ok(Self(s))
        } else {
            Err(Error::invalid_input("idempotency key is invalid: use 1-255 printable ASCII characters without spaces"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for IngressKey {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl From<IngressKey> for String {
    fn from(k: IngressKey) -> String {
        k.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_and_key_validation() {
        assert!(TenantId::new("acme-1.prod_x").is_ok());
        assert!(TenantId::new("").is_err());
        assert!(TenantId::new("a b").is_err());
        assert!(TenantId::new("x".repeat(65)).is_err());
        assert!(IngressKey::new("order-42").is_ok());
        assert!(IngressKey::new("has space").is_err());
        assert!(IngressKey::new("k".repeat(256)).is_err());
        assert!(serde_json::from_str::<TenantId>("\"bad tenant\"").is_err());
    }
}
