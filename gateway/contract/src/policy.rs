//! The policy enforcement point's port: before the engine admits a call it asks a
//! [`PolicyPoint`] whether the call may run now, must wait for a human's approval, is refused,
//! or should come back later. The decision core lives outside the contract
//! (`switchyard-policy`); without one configured every call is allowed ([`AllowAll`]).

use async_trait::async_trait;
use serde_json::Value;

use crate::digest::RequestDigest;
use crate::ports::Ingress;
use crate::principal::{Principal, Target};

/// What the enforcement point sees of a call about to be admitted.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    pub principal: &'a Principal,
    pub ingress: Ingress,
    pub target: &'a Target,
    /// What an approval binds to: a changed argument is another digest.
    pub digest: &'a RequestDigest,
    /// The request as the face submitted it.
    pub request: &'a Value,
}

/// Whether a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Refused; nothing is admitted.
    Deny {
        reason: String,
    },
    /// Admitted as `awaiting_approval`: it runs once a human approves it.
    Hold {
        reason: String,
    },
    /// Not now (a quota): nothing is admitted; ask again after `retry_after_ms`.
    Defer {
        retry_after_ms: u64,
        reason: String,
    },
}

/// A verdict and what decided it (the policy version and rule), for logs and the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub verdict: Verdict,
    pub basis: String,
}

#[async_trait]
pub trait PolicyPoint: Send + Sync + std::fmt::Debug {
    async fn decide(&self, facts: &CallFacts<'_>) -> Ruling;
}

/// No policy configured: every call runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

#[async_trait]
impl PolicyPoint for AllowAll {
    async fn decide(&self, _: &CallFacts<'_>) -> Ruling {
        Ruling { verdict: Verdict::Allow, basis: "no policy configured".into() }
    }
}
