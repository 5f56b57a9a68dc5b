//! Upstream OAuth credentials at rest: rmcp's [`CredentialStore`] on the gateway's store,
//! encrypted with AES-256-GCM (aws-lc-rs) under a key that never enters the database. The row
//! is bound to its name (associated data), so a sealed value cannot be moved to another
//! upstream. Tokens are never logged; `Debug` shows no key material.

use std::sync::Arc;

use async_trait::async_trait;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use switchyard_contract::SecretVault;

use crate::error::SealError;

/// The AES-256-GCM key sealing upstream credentials.
#[derive(Clone)]
pub struct Sealer {
    key: Arc<LessSafeKey>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(***)")
    }
}

const PREFIX: &str = "v1:";

impl Sealer {
    /// From 64 hex characters (32 bytes).
    pub fn from_hex(hex_key: &str) -> Result<Self, switchyard_contract::InvalidConfig> {
        let bytes = hex::decode(hex_key.trim()).ok().ok_or("the token key must be 64 hex characters (32 bytes)")?;
        if bytes.len() != 32 {
            return Err("the token key must be 64 hex characters (32 bytes)".into());
        }
        let key = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| "invalid AES-256 key")?;
        Ok(Self { key: Arc::new(LessSafeKey::new(key)) })
    }

    /// A fresh random key, as 64 hex characters.
    pub fn generate_hex() -> Result<String, SealError> {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).map_err(|_| "no randomness")?;
        Ok(hex::encode(bytes))
    }

    /// `v1:<nonce hex>:<ciphertext+tag hex>`, bound to `name`.
    pub fn seal(&self, name: &str, plaintext: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| "no randomness")?;
        let mut data = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(name.as_bytes()), &mut data)
            .map_err(|_| "encryption failed")?;
        Ok(format!("{PREFIX}{}:{}", hex::encode(nonce), hex::encode(&data)))
    }

    pub fn open(&self, name: &str, sealed: &str) -> Result<Vec<u8>, SealError> {
        let bad = || format!("sealed credentials for `{name}` do not open (wrong key, or altered)");
        let rest = sealed.strip_prefix(PREFIX).ok_or_else(bad)?;
        let (nonce, data) = rest.split_once(':').ok_or_else(bad)?;
        let nonce: [u8; NONCE_LEN] = hex::decode(nonce).ok().and_then(|n| n.try_into().ok()).ok_or_else(bad)?;
        let mut data = hex::decode(data).ok().ok_or_else(bad)?;
        let plain = self
            .key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(name.as_bytes()), &mut data)
            .map_err(|_| bad())?;
        Ok(plain.to_vec())
    }
}

/// The vault name of an upstream's credentials.
pub fn credentials_name(upstream: &str) -> String {
    format!("mcp-upstream-oauth:{upstream}")
}

/// rmcp's credential store for one upstream, sealed into the gateway's store.
#[derive(Clone)]
pub struct VaultStore {
    name: String,
    vault: Arc<dyn SecretVault>,
    sealer: Sealer,
}

impl std::fmt::Debug for VaultStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultStore").field("name", &self.name).finish_non_exhaustive()
    }
}

impl VaultStore {
    pub fn new(upstream: &str, vault: Arc<dyn SecretVault>, sealer: Sealer) -> Self {
        Self { name: credentials_name(upstream), vault, sealer }
    }

    /// Whether credentials are stored (without opening them).
    pub async fn holds_credentials(&self) -> bool {
        self.vault.get(&self.name).await.is_ok_and(|v| v.is_some())
    }

    /// Deletes the stored credentials.
    pub async fn forget(&self) -> Result<(), SealError> {
        self.vault.delete(&self.name).await.map_err(|e| SealError(e.to_string()))
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("credential store: {e}"))
}

#[async_trait]
impl CredentialStore for VaultStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(sealed) = self.vault.get(&self.name).await.map_err(store_error)? else { return Ok(None) };
        let plain = self.sealer.open(&self.name, &sealed).map_err(store_error)?;
        serde_json::from_slice(&plain).map(Some).map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let plain = serde_json::to_vec(&credentials).map_err(store_error)?;
        let sealed = self.sealer.seal(&self.name, &plain).map_err(store_error)?;
        self.vault.put(&self.name, &sealed).await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.vault.delete(&self.name).await.map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_name() {
        let key = Sealer::generate_hex().unwrap();
        let s = Sealer::from_hex(&key).unwrap();
        let sealed = s.seal("a", b"refresh-token-123").unwrap();
        assert!(!sealed.contains("refresh-token-123"));
        assert_eq!(s.open("a", &sealed).ok().as_deref(), Some(&b"refresh-token-123"[..]));
        assert!(s.open("b", &sealed).is_err(), "bound to its name");
        let other = Sealer::from_hex(&Sealer::generate_hex().unwrap_or_default()).unwrap();
        assert!(other.open("a", &sealed).is_err(), "another key does not open it");
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push('0');
        assert!(s.open("a", &tampered).is_err() || tampered == sealed);
        assert!(Sealer::from_hex("abc").is_err());
        assert_ne!(s.seal("a", b"x").ok(), s.seal("a", b"x").ok(), "fresh nonce every time");
    }
}
