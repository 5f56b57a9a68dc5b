//! How a row is hashed, and the signed checkpoint over every partition's head.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchyard_contract::{AuditRow, AuditStore, ChainHead, Error, Millis, StoredCheckpoint};

use crate::grants::GrantKey;

/// The `prev` of a partition's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The `typ` claim of a checkpoint, so no other token signed with the same key passes for one.
pub const CHECKPOINT_TYP: &str = "switchyard.audit-checkpoint";

/// The hash a row must carry: SHA-256 over the canonical JSON of every field but `seq` and
/// `hash` (so moving a row to another place in its chain keeps its own hash valid and breaks
/// only its links, which [`super::verify`] then names as a reordering).
pub fn row_hash(row: &AuditRow) -> Result<String, Error> {
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
    Ok(hex::encode(Sha256::digest(canonical.as_bytes())))
}

/// What a checkpoint states: every partition's head at `at_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub iss: String,
    pub typ: String,
    pub at_ms: Millis,
    pub heads: Vec<ChainHead>,
}

/// Signs and stores a checkpoint of every partition's current head; `None` when the log is
/// empty, or when `last` already states exactly these heads.
pub async fn checkpoint(
    store: &dyn AuditStore,
    key: &GrantKey,
    last: Option<&[ChainHead]>,
) -> Result<Option<(StoredCheckpoint, Vec<ChainHead>)>, Error> {
    let heads = store.heads().await?;
    if heads.is_empty() || last == Some(heads.as_slice()) {
        return Ok(None);
    }
    let at_ms = switchyard_contract::wall_clock_ms();
    let claims = Checkpoint { iss: String::new(), typ: CHECKPOINT_TYP.into(), at_ms, heads: heads.clone() };
    let token = key.sign(claims).map_err(|e| Error::internal(e.to_string()))?;
    let id = format!("ckp_{at_ms}_{}", &hex::encode(Sha256::digest(token.as_bytes()))[..12]);
    let stored = StoredCheckpoint { id, at_ms, token };
    store.put_checkpoint(&stored).await?;
    Ok(Some((stored, heads)))
}
