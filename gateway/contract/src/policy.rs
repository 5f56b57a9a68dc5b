//! The policy enforcement point's port: before the engine admits a call it asks a
//! [`PolicyPoint`] whether the call may run now, must wait for a human's approval, is refused,
//! or should come back later. The decision core lives outside the contract
//! (`switchyard-policy`); without one configured every call is allowed ([`AllowAll`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::digest::RequestDigest;
use crate::error::Error;
use crate::ports::Ingress;
use crate::principal::{Principal, Target, TenantId};
use crate::state::Invocation;

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
    /// A grant the caller presented, unverified.
    pub grant: Option<&'a str>,
    /// The id the call is admitted under if it is admitted (what a concurrency slot is held by).
    pub invocation: crate::id::InvocationId,
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

impl Verdict {
    /// `allow`, `deny`, `hold` or `defer`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny { .. } => "deny",
            Self::Hold { .. } => "hold",
            Self::Defer { .. } => "defer",
        }
    }
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

    /// What [`decide`](Self::decide) would rule on `facts` now, changing nothing: no quota token
    /// or concurrency slot is taken (one already used up still says so). The policy simulator.
    /// The default asks `decide`, for a policy point whose decisions change nothing.
    async fn simulate(&self, facts: &CallFacts<'_>) -> Ruling {
        self.decide(facts).await
    }

    /// The policy in force, for people to read: its version (what every decision records) and
    /// its configuration as JSON. `None` (the default) where there is no policy to show.
    fn in_force(&self) -> Option<(String, serde_json::Value)> {
        None
    }

    /// The call `invocation` no longer runs here: it was not admitted to run after an `Allow`
    /// (its key named an earlier call, or its admission failed), or its driver on this replica
    /// ended. A concurrency slot it took is free again. Called for every admission attempt
    /// and every driver's end; the default does nothing.
    fn release(&self, _invocation: crate::id::InvocationId) {}

    /// The proof of `by`'s approval of the held call `inv`: a single-use grant bound to that
    /// call (its id and digest), recorded where grants are kept, which [`recheck`](Self::recheck)
    /// is given back before the call runs. `None` (the default) where grants are not enabled.
    async fn approval_grant(&self, _inv: &Invocation, _by: &Principal) -> Result<Option<ApprovalGrant>, Error> {
        Ok(None)
    }

    /// Asked once more just before an approved call's first attempt, with the approval's
    /// grant (if one was minted): a `Deny` stops it there (nothing runs); anything else lets
    /// it run. The default allows.
    async fn recheck(&self, _inv: &Invocation, _grant: Option<&str>) -> Ruling {
        Ruling { verdict: Verdict::Allow, basis: "no policy configured".into() }
    }
}

/// The proof of a human's approval of one held call (see [`PolicyPoint::approval_grant`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalGrant {
    /// The grant's id, as listed and revoked.
    pub id: String,
    /// The signed grant (compact JWS).
    pub token: String,
}

/// A grant as minted: who may do what up to which tier, until when; and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantRecord {
    pub id: String,
    pub tenant: TenantId,
    pub subject: String,
    /// The signed claims, as JSON.
    pub claims: Value,
    pub minted_ms: Millis,
    pub revoked_ms: Option<Millis>,
    pub revoked_by: Option<String>,
}

/// Minted grants and their revocations, shared by every replica: a revocation takes effect at
/// each replica's next decision on that grant.
#[async_trait]
pub trait GrantStore: Send + Sync + std::fmt::Debug {
    /// Records a minted grant.
    async fn record(&self, id: &str, tenant: &TenantId, subject: &str, claims: &Value) -> Result<(), Error>;
    /// Revokes grant `id`; `Ok(false)` when it is unknown or already revoked.
    async fn revoke(&self, id: &str, by: &str) -> Result<bool, Error>;
    async fn is_revoked(&self, id: &str) -> Result<bool, Error>;
    /// Spends the single-use grant `id` for `by` (the call it is bound to): `Ok(true)` the
    /// first time and again for the same `by` (a driver taking the call over after a crash),
    /// `Ok(false)` when it is unknown, revoked, or spent by another.
    async fn spend(&self, id: &str, by: &str) -> Result<bool, Error>;
    /// The grants of `tenant` (or every tenant), newest first.
    async fn list(&self, tenant: Option<&TenantId>) -> Result<Vec<GrantRecord>, Error>;
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
