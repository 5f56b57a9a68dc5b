//! The audit log's ports: what the gateway records of every policy decision, approval step,
//! grant mint or revocation and reconciliation ([`AuditLog`], append-only, tamper-evident), and
//! where its hash-chained rows are kept ([`AuditStore`]).
//!
//! The log is a set of chains, one per *partition* (a gateway replica, or the command line), so
//! that replicas never serialize on one chain head: each row names the hash of the row before it
//! in its partition, and signed checkpoints over every partition's head bind the chains together
//! (and catch a cut-off tail). The chaining and its verification live in `switchyard-policy`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::error::Error;
use crate::id::InvocationId;
use crate::principal::TenantId;
use crate::state::{Decision, Invocation};

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuditKind {
    /// The policy enforcement point decided a call (allow, deny, hold or defer).
    #[serde(rename = "decision")]
    Decision,
    /// A human let a held call run.
    #[serde(rename = "approval.approved")]
    Approved,
    /// A human refused a held call.
    #[serde(rename = "approval.denied")]
    ApprovalDenied,
    /// Nobody decided a held call in time.
    #[serde(rename = "approval.expired")]
    ApprovalExpired,
    #[serde(rename = "grant.minted")]
    GrantMinted,
    #[serde(rename = "grant.revoked")]
    GrantRevoked,
    /// An `unknown` outcome was resolved (by an operator or from an upstream's evidence).
    #[serde(rename = "reconciled")]
    Reconciled,
}

impl AuditKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Approved => "approval.approved",
            Self::ApprovalDenied => "approval.denied",
            Self::ApprovalExpired => "approval.expired",
            Self::GrantMinted => "grant.minted",
            Self::GrantRevoked => "grant.revoked",
            Self::Reconciled => "reconciled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Decision,
            Self::Approved,
            Self::ApprovalDenied,
            Self::ApprovalExpired,
            Self::GrantMinted,
            Self::GrantRevoked,
            Self::Reconciled,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One thing to record: what happened, in which tenant, who did it, to which invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub kind: AuditKind,
    pub tenant: TenantId,
    /// The principal that acted (the caller for a decision, the operator for an approval).
    pub actor: String,
    /// For a decision: the id the call is admitted under (when its idempotency key names an
    /// earlier invocation, the call attaches to that one instead and this id stays unused).
    pub invocation: Option<InvocationId>,
    /// The rest, by kind (a decision's verdict, basis, target and request digest, …).
    pub detail: Value,
}

impl AuditEntry {
    /// A step taken on invocation `inv` by `actor` (an approval, denial, expiry or
    /// reconciliation), with what identifies the call and `extra` (a JSON object).
    pub fn about(kind: AuditKind, actor: &str, inv: &Invocation, extra: Value) -> Self {
        let mut detail = serde_json::json!({
            "upstream": inv.target.upstream,
            "operation": inv.target.operation,
            "digest": inv.digest.as_str(),
            "caller": inv.principal.subject,
            "state": inv.state.name().as_str(),
        });
        if let (Some(map), Value::Object(more)) = (detail.as_object_mut(), extra) {
            map.extend(more);
        }
        Self { kind, tenant: inv.principal.tenant.clone(), actor: actor.to_string(), invocation: Some(inv.id), detail }
    }

    /// `actor` reconciled `inv` with `decision`.
    pub fn reconciliation(actor: &str, inv: &Invocation, decision: &Decision) -> Self {
        let extra = match decision {
            Decision::Applied { .. } => serde_json::json!({"decision": "applied"}),
            Decision::NotApplied { message } => serde_json::json!({"decision": "not_applied", "message": message}),
        };
        Self::about(AuditKind::Reconciled, actor, inv, extra)
    }
}

/// The gateway's audit log. An entry is durable before [`AuditLog::append`] returns `Ok`; a
/// call whose decision cannot be recorded is not admitted (it fails closed).
#[async_trait]
pub trait AuditLog: Send + Sync + std::fmt::Debug {
    async fn append(&self, entry: AuditEntry) -> Result<(), Error>;
}

/// One stored row of a partition's chain. `hash` covers every field but `seq` (and itself),
/// `prev` included, so a changed row, a removed row and two swapped rows are each told apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub partition: String,
    /// 1, 2, 3, … within the partition.
    pub seq: u64,
    pub at_ms: Millis,
    pub kind: String,
    pub tenant: String,
    pub actor: String,
    pub invocation: Option<String>,
    pub detail: Value,
    /// The hash of the row before it in the partition (64 zeros for the first).
    pub prev: String,
    pub hash: String,
}

/// The newest row of a partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    pub partition: String,
    pub seq: u64,
    pub hash: String,
}

/// A signed statement of every partition's head at one moment (a compact JWS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    pub id: String,
    pub at_ms: Millis,
    pub token: String,
}

/// Where the chains and checkpoints are kept, shared by every replica.
#[async_trait]
pub trait AuditStore: Send + Sync + std::fmt::Debug {
    /// The newest row of `partition`, if it has any.
    async fn head(&self, partition: &str) -> Result<Option<ChainHead>, Error>;
    /// Appends `rows` (consecutive, of one partition) in one transaction: all or none. A
    /// sequence number already taken (another writer on the same partition) is `Conflict`.
    async fn append(&self, rows: &[AuditRow]) -> Result<(), Error>;
    /// Every partition's newest row.
    async fn heads(&self) -> Result<Vec<ChainHead>, Error>;
    /// The partitions' names.
    async fn partitions(&self) -> Result<Vec<String>, Error>;
    /// Rows of `partition` with `seq > after`, in order, at most `limit`.
    async fn rows(&self, partition: &str, after: u64, limit: u32) -> Result<Vec<AuditRow>, Error>;
    /// Rows of every partition written at or after `since_ms`, ordered by time, partition and
    /// sequence, after the row `after` (keyset: its time, partition and sequence), at most `limit`.
    async fn since(
        &self,
        since_ms: Millis,
        after: Option<(Millis, String, u64)>,
        limit: u32,
    ) -> Result<Vec<AuditRow>, Error>;
    async fn put_checkpoint(&self, checkpoint: &StoredCheckpoint) -> Result<(), Error>;
    /// Every checkpoint, oldest first.
    async fn checkpoints(&self) -> Result<Vec<StoredCheckpoint>, Error>;
}
