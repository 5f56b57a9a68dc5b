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

/// The gateway's audit log. An entry is durable before [`AuditLog::append`] returns `Ok`; a
/// call whose decision cannot be recorded is not admitted (it fails closed).
#[async_trait]
pub trait AuditLog: Send + Sync + std::fmt::Debug {
    async fn append(&self, entry: AuditEntry) -> Result<(), Error>;

    /// The partition whose chain the store can extend in an admission's own commit
    /// ([`NewInvocation::audit`](crate::NewInvocation::audit)): a call's decision then commits
    /// with its admission, all or nothing. `None` (the default): decisions are appended first.
    fn admission_partition(&self) -> Option<&str> {
        None
    }
}

/// The `prev` of a partition's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash a row must carry: SHA-256 over the canonical JSON (RFC 8785) of every field but
/// `seq` and `hash` (so a row moved to another place in its chain keeps a valid hash of its own
/// and breaks only its links, which verification names as a reordering).
pub fn row_hash(row: &AuditRow) -> Result<String, Error> {
    use sha2::Digest as _;
    let body = serde_json::json!({
        "partition": row.partition,
        "at_ms": row.at_ms,
        "kind": row.kind,
        "tenant": row.tenant,
        "actor": row.actor,
        "invocation": row.invocation,
        "detail": row.detail,
        "prev": row.prev,
    });
    let canonical = serde_json_canonicalizer::to_string(&body)
        .map_err(|e| Error::internal(format!("audit row does not canonicalize: {e}")))?;
    Ok(hex::encode(sha2::Sha256::digest(canonical.as_bytes())))
}

/// The rows for `entries` in `partition`, numbered after `head` (`(seq, hash)` of its newest
/// row; `None`: an empty partition) and linked after it, written at `at_ms`.
pub fn chain(
    partition: &str,
    head: Option<(u64, String)>,
    entries: &[&AuditEntry],
    at_ms: Millis,
) -> Result<Vec<AuditRow>, Error> {
    let (mut seq, mut prev) = head.unwrap_or_else(|| (0, GENESIS.to_string()));
    let mut rows = Vec::with_capacity(entries.len());
    for e in entries {
        seq += 1;
        let mut row = AuditRow {
            partition: partition.to_string(),
            seq,
            at_ms,
            kind: e.kind.as_str().to_string(),
            tenant: e.tenant.as_str().to_string(),
            actor: e.actor.clone(),
            invocation: e.invocation.map(|i| i.to_string()),
            detail: e.detail.clone(),
            prev,
            hash: String::new(),
        };
        row.hash = row_hash(&row)?;
        prev = row.hash.clone();
        rows.push(row);
    }
    Ok(rows)
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

    /// A log of `partition` that chains and appends inside the store's own commits, if the store
    /// has them (SQLite's group commit: entries share the `fsync` of the calls they record, and
    /// decisions commit with their admissions). `None` (the default): use a chain writer.
    fn log_in_commits(&self, _partition: &str) -> Option<std::sync::Arc<dyn AuditLog>> {
        None
    }
}
