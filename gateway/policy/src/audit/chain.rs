//! The signed checkpoint over every partition's head (a row's hash is the contract's
//! [`row_hash`]).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
pub use switchyard_contract::audit::{GENESIS, row_hash};
use switchyard_contract::{AuditStore, ChainHead, Error, Millis, StoredCheckpoint};

use crate::grants::GrantKey;

/// The `typ` claim of a checkpoint, so no other token signed with the same key passes for one.
pub const CHECKPOINT_TYP: &str = "switchyard.audit-checkpoint";

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
    if last == Some(heads.as_slice()) {
        return Ok(None);
    }
    Ok(sign_heads(store, key, &heads).await?.map(|stored| (stored, heads)))
}

/// Signs and stores a checkpoint of `heads`, read from `store` just before; `None` when there
/// are none (an empty log).
pub async fn sign_heads(
    store: &dyn AuditStore,
    key: &GrantKey,
    heads: &[ChainHead],
) -> Result<Option<StoredCheckpoint>, Error> {
    if heads.is_empty() {
        return Ok(None);
    }
    let at_ms = switchyard_contract::wall_clock_ms();
    let claims = Checkpoint { iss: String::new(), typ: CHECKPOINT_TYP.into(), at_ms, heads: heads.to_vec() };
    let token = key.sign(claims).map_err(|e| Error::internal(e.to_string()))?;
    let id = format!("ckp_{at_ms}_{}", &hex::encode(Sha256::digest(token.as_bytes()))[..12]);
    let stored = StoredCheckpoint { id, at_ms, token };
    store.put_checkpoint(&stored).await?;
    Ok(Some(stored))
}
