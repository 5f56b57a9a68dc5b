//! RFC 7662 token introspection for opaque tokens, with a small cache of active answers (keyed
//! by the token's SHA-256, never by the token) so that not every request asks the issuer.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use crate::config::IntrospectionConfig;
use crate::error::AuthError;

/// Cached answers at most; beyond this the cache is cleared.
const MAX_CACHED: usize = 10_000;

type Claims = serde_json::Map<String, Value>;

/// One issuer's introspection endpoint.
#[derive(Debug)]
pub(crate) struct Introspector {
    cfg: IntrospectionConfig,
    http: reqwest::Client,
    /// Active answers by the token's SHA-256, with the instant they stop being reused.
    cache: Mutex<HashMap<[u8; 32], (Claims, Instant)>>,
}

fn now_s() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Introspector {
    pub(crate) fn new(cfg: IntrospectionConfig, http: reqwest::Client) -> Self {
        Self { cfg, http, cache: Mutex::new(HashMap::new()) }
    }

    /// The claims of an active token; `Ok(None)` when the issuer says it is not active.
    pub(crate) async fn claims(&self, token: &str) -> Result<Option<Claims>, AuthError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((claims, until)) = self.cache.lock().await.get(&key)
            && Instant::now() < *until
        {
            return Ok(Some(claims.clone()));
        }
        let fail = |e: String| AuthError::Unavailable(format!("introspection: {e}"));
        let resp = self
            .http
            .post(&self.cfg.endpoint)
            .basic_auth(&self.cfg.client_id, Some(&self.cfg.client_secret.0))
            .header("accept", "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| fail(e.without_url().to_string()))?;
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        let body: Claims = resp.json().await.map_err(|e| fail(e.without_url().to_string()))?;
        if body.get("active") != Some(&Value::Bool(true)) {
            return Ok(None);
        }
        let exp = body.get("exp").and_then(Value::as_i64);
        let lifetime = exp.map_or(self.cfg.cache_s, |e| u64::try_from(e - now_s()).unwrap_or(0).min(self.cfg.cache_s));
        let mut cache = self.cache.lock().await;
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, (body.clone(), Instant::now() + Duration::from_secs(lifetime)));
        Ok(Some(body))
    }
}
