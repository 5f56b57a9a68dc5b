//! Console sessions, kept server-side. The cookie carries only a random session id (32 bytes);
//! the store keeps, under the SHA-256 of that id, the sign-in's credential sealed (AES-256-GCM)
//! with a key derived from the id — so neither the cookie nor the database alone gives the
//! credential — and the session's expiry. Every request opens the credential and checks it again
//! as the admin API would: a rotated admin token or a revoked OAuth token ends the session at
//! once, on every replica. Signing out deletes the row: the same cookie then signs nobody in.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use switchyard_contract::SecretVault;
use switchyard_mcp::Sealer;

/// A sign-in: the credential and, for the admin token, the tenant and the name it acts as.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Credentials {
    pub tenant: String,
    pub name: String,
    pub token: String,
}

impl Credentials {
    fn encode(&self) -> String {
        format!("v1\n{}\n{}\n{}", self.tenant, self.name, self.token)
    }

    fn decode(text: &str) -> Option<Self> {
        let mut parts = text.splitn(4, '\n');
        (parts.next()? == "v1").then_some(())?;
        let (tenant, name, token) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Self { tenant: tenant.into(), name: name.into(), token: token.into() })
    }
}

/// Where sessions are kept: the store's sealed-secrets table, shared by every replica.
#[derive(Clone)]
pub(super) struct Sessions {
    vault: Arc<dyn SecretVault>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions")
    }
}

/// Why a session could not be opened or found.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct SessionError(String);

impl Sessions {
    pub(super) fn new(vault: Arc<dyn SecretVault>) -> Self {
        Self { vault }
    }

    /// Starts a session for `creds` lasting `max_age_s`; returns the cookie's value (the id).
    pub(super) async fn open(&self, creds: &Credentials, max_age_s: u32) -> Result<String, SessionError> {
        let id = Sealer::generate_hex().map_err(|e| SessionError(e.to_string()))?;
        let name = row_name(&id);
        let sealed = sealer(&id)?.seal(&name, creds.encode().as_bytes()).map_err(|e| SessionError(e.to_string()))?;
        let expires_ms = switchyard_contract::wall_clock_ms().saturating_add(i64::from(max_age_s) * 1000);
        self.vault.put(&name, &format!("{expires_ms}:{sealed}")).await.map_err(|e| SessionError(e.message))?;
        Ok(id)
    }

    /// The credentials of the live session `id` (`None`: unknown, signed out, expired, or not
    /// an id at all).
    pub(super) async fn find(&self, id: &str) -> Result<Option<Credentials>, SessionError> {
        if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let name = row_name(id);
        let Some(row) = self.vault.get(&name).await.map_err(|e| SessionError(e.message))? else { return Ok(None) };
        let Some((expires, sealed)) = row.split_once(':') else { return Ok(None) };
        if expires.parse::<i64>().map_or(true, |e| e <= switchyard_contract::wall_clock_ms()) {
            self.close(id).await?;
            return Ok(None);
        }
        let Ok(plain) = sealer(id)?.open(&name, sealed) else { return Ok(None) };
        Ok(String::from_utf8(plain).ok().as_deref().and_then(Credentials::decode))
    }

    /// Ends session `id` (signing out): its row is deleted.
    pub(super) async fn close(&self, id: &str) -> Result<(), SessionError> {
        self.vault.delete(&row_name(id)).await.map_err(|e| SessionError(e.message))
    }
}

/// The row a session is kept under: the SHA-256 of its id, never the id itself.
fn row_name(id: &str) -> String {
    format!("console-session:{}", hex::encode(Sha256::digest(format!("switchyard console session id\n{id}"))))
}

/// The key the session's credential is sealed with: derived from the id, which only the
/// cookie's holder has.
fn sealer(id: &str) -> Result<Sealer, SessionError> {
    let key = hex::encode(Sha256::digest(format!("switchyard console session key\n{id}")));
    Sealer::from_hex(&key).map_err(|e| SessionError(e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_round_trip_and_the_row_names_no_id() {
        let c = Credentials { tenant: "acme".into(), name: "ann".into(), token: "t\nx".into() };
        assert_eq!(Credentials::decode(&c.encode()), Some(c));
        assert!(Credentials::decode("v2\na\nb\nc").is_none());
        let id = "ab".repeat(32);
        assert!(!row_name(&id).contains(&id));
        assert_ne!(row_name(&id), row_name(&"cd".repeat(32)));
    }
}
