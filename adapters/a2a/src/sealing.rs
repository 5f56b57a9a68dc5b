//! Webhook credentials at rest: a push configuration's `authentication.credentials` and
//! `token` are sealed (AES-256-GCM, aws-lc-rs) before they reach the task store, the push outbox
//! or an invocation's stored request, and opened only to deliver a notification or to answer
//! the owning tenant. A sealed value is bound to its task (associated data), so it cannot be
//! moved to another task. The nonce is derived from the key, the task and the value (HMAC-SHA256),
//! so the same credential seals to the same text: a resent message keeps its digest, and the
//! only thing that leaks is whether two sealed values are equal.

use std::sync::Arc;

use a2a::TaskPushNotificationConfig;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hmac;
use base64::Engine as _;

use crate::error::A2aError;

const PREFIX: &str = "sealed:v1:";

/// The key sealing webhook credentials (`a2a.push.credentials_key`, shared by replicas).
#[derive(Clone)]
pub struct CredentialSealer {
    key: Arc<LessSafeKey>,
    nonces: hmac::Key,
}

impl std::fmt::Debug for CredentialSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialSealer(***)")
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

impl CredentialSealer {
    /// From 64 hex characters (32 bytes).
    pub fn from_hex(hex_key: &str) -> Result<Self, switchyard_contract::InvalidConfig> {
        let bytes = hex::decode(hex_key.trim()).ok().filter(|b| b.len() == 32);
        let bytes = bytes.ok_or("a2a.push.credentials_key must be 64 hex characters (32 bytes)")?;
        let key = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| "invalid AES-256 key")?;
        let derived = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &bytes), b"switchyard push credential nonces");
        Ok(Self { key: Arc::new(LessSafeKey::new(key)), nonces: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()) })
    }

    fn seal(&self, task_id: &str, plain: &str) -> Result<String, A2aError> {
        if plain.starts_with(PREFIX) {
            return Ok(plain.to_string()); // already sealed (for this task: opening checks it)
        }
        let tag = hmac::sign(&self.nonces, format!("{task_id}\0{plain}").as_bytes());
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&tag.as_ref()[..NONCE_LEN]);
        let mut data = plain.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(task_id.as_bytes()), &mut data)
            .map_err(|_| A2aError::internal("cannot seal a webhook credential"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{PREFIX}{}", b64().encode(out)))
    }

    fn open(&self, task_id: &str, value: &str) -> Result<String, A2aError> {
        let Some(body) = value.strip_prefix(PREFIX) else { return Ok(value.to_string()) }; // stored before sealing
        let bad = || A2aError::internal("a sealed webhook credential does not open (wrong key or task)");
        let bytes = b64().decode(body).map_err(|_| bad())?;
        if bytes.len() < NONCE_LEN {
            return Err(bad());
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad())?;
        let mut data = sealed.to_vec();
        let plain = self.key.open_in_place(nonce, Aad::from(task_id.as_bytes()), &mut data).map_err(|_| bad())?;
        String::from_utf8(plain.to_vec()).map_err(|_| bad())
    }

    /// `cfg` with its credentials sealed for task `task_id`.
    pub fn seal_config(
        &self,
        task_id: &str,
        cfg: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        map_credentials(cfg, |v| self.seal(task_id, v))
    }

    /// `cfg` (of task `task_id`) with its credentials opened.
    pub fn open_config(
        &self,
        task_id: &str,
        cfg: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        map_credentials(cfg, |v| self.open(task_id, v))
    }
}

/// `cfg` with `f` applied to its `token` and `authentication.credentials`.
fn map_credentials(
    mut cfg: TaskPushNotificationConfig,
    f: impl Fn(&str) -> Result<String, A2aError>,
) -> Result<TaskPushNotificationConfig, A2aError> {
    cfg.token = cfg.token.as_deref().map(&f).transpose()?;
    if let Some(a) = cfg.authentication.as_mut() {
        a.credentials = a.credentials.as_deref().map(&f).transpose()?;
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TaskPushNotificationConfig {
        serde_json::from_value(serde_json::json!({"url": "https://h.example/x", "token": "tok-123",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}))
        .unwrap()
    }

    #[test]
    fn credentials_seal_deterministically_per_task_and_open_only_there() {
        let s = CredentialSealer::from_hex(&"ab".repeat(32)).unwrap();
        let sealed = s.seal_config("t1", cfg()).unwrap_or_else(|e| panic!("{e:?}"));
        let text = serde_json::to_string(&sealed).unwrap_or_default();
        assert!(!text.contains("s3cret") && !text.contains("tok-123"), "{text}");
        assert_eq!(sealed, s.seal_config("t1", cfg()).unwrap_or_else(|e| panic!("{e:?}")), "deterministic");
        assert_eq!(s.seal_config("t1", sealed.clone()).ok(), Some(sealed.clone()), "sealing twice is sealing once");
        assert_eq!(s.open_config("t1", sealed.clone()).ok(), Some(cfg()));
        assert!(s.open_config("t2", sealed.clone()).is_err(), "bound to its task");
        let other = CredentialSealer::from_hex(&"cd".repeat(32)).unwrap();
        assert!(other.open_config("t1", sealed).is_err(), "another key does not open it");
        assert_eq!(s.open_config("t1", cfg()).ok(), Some(cfg()), "values stored before sealing read as they are");
        assert!(CredentialSealer::from_hex("00").is_err());
    }
}
