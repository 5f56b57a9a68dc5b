//! One issuer's signing keys: found through discovery (OpenID Connect, then RFC 8414) unless
//! configured, cached for `jwks_ttl_s`, and re-read when a token names a key we do not have
//! (key rotation) — at most once per `jwks_min_refresh_ms`.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::config::IssuerConfig;
use crate::error::AuthError;

/// Largest metadata or JWKS document accepted.
const MAX_DOCUMENT: usize = 256 * 1024;

#[derive(Debug)]
struct Cached {
    keys: JwkSet,
    fetched: Instant,
}

/// The key cache of one issuer.
#[derive(Debug)]
pub(crate) struct IssuerKeys {
    cfg: IssuerConfig,
    http: reqwest::Client,
    state: Mutex<(Option<String>, Option<Cached>)>,
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: Option<String>,
}

impl IssuerKeys {
    pub(crate) fn new(cfg: IssuerConfig, http: reqwest::Client) -> Self {
        let jwks_uri = cfg.jwks_uri.clone();
        Self { cfg, http, state: Mutex::new((jwks_uri, None)) }
    }

    /// The key for `kid` (or the only key, when the token names none).
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Jwk, AuthError> {
        let mut state = self.state.lock().await;
        let ttl = Duration::from_secs(self.cfg.jwks_ttl_s);
        let min_refresh = Duration::from_millis(self.cfg.jwks_min_refresh_ms);
        if let Some(c) = &state.1
            && c.fetched.elapsed() < ttl
            && let Some(k) = pick(&c.keys, kid)?
        {
            return Ok(k);
        }
        let may_refresh = state.1.as_ref().is_none_or(|c| c.fetched.elapsed() >= min_refresh);
        if may_refresh {
            let uri = match &state.0 {
                Some(u) => u.clone(),
                None => {
                    let u = self.discover().await?;
                    state.0 = Some(u.clone());
                    u
                }
            };
            let keys: JwkSet = self.fetch(&uri).await?;
            tracing::info!(issuer = %self.cfg.issuer, keys = keys.keys.len(), "fetched signing keys");
            state.1 = Some(Cached { keys, fetched: Instant::now() });
        }
        match &state.1 {
            Some(c) => pick(&c.keys, kid)?
                .ok_or_else(|| AuthError::invalid("the token's signing key is unknown to its issuer")),
            None => Err(AuthError::Unavailable("the issuer's keys are not available".into())),
        }
    }

    /// `jwks_uri` from the issuer's metadata, whose `issuer` must equal the configured one.
    async fn discover(&self) -> Result<String, AuthError> {
        let base = self.cfg.issuer.trim_end_matches('/');
        let (origin, path) = split_origin(base);
        let candidates = [
            format!("{base}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut last = String::new();
        for url in candidates {
            match self.fetch::<Metadata>(&url).await {
                Ok(m) if m.issuer == self.cfg.issuer => {
                    return m.jwks_uri.ok_or_else(|| AuthError::Unavailable(format!("{url} has no jwks_uri")));
                }
                Ok(m) => last = format!("{url} names issuer `{}`, not `{}`", m.issuer, self.cfg.issuer),
                Err(e) => last = e.to_string(),
            }
        }
        Err(AuthError::Unavailable(format!("issuer discovery failed: {last}")))
    }

    async fn fetch<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, AuthError> {
        let fail = |e: String| AuthError::Unavailable(format!("{url}: {e}"));
        let resp = self.http.get(url).send().await.map_err(|e| fail(e.to_string()))?;
        if !resp.status().is_success() {
            return Err(fail(format!("HTTP {}", resp.status())));
        }
        if resp.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
            return Err(fail("document too large".into()));
        }
        let body = resp.bytes().await.map_err(|e| fail(e.to_string()))?;
        if body.len() > MAX_DOCUMENT {
            return Err(fail("document too large".into()));
        }
        serde_json::from_slice(&body).map_err(|e| fail(e.to_string()))
    }
}

/// The key named `kid`, or the single key when `kid` is absent.
fn pick(keys: &JwkSet, kid: Option<&str>) -> Result<Option<Jwk>, AuthError> {
    match kid {
        Some(k) => Ok(keys.find(k).cloned()),
        None if keys.keys.len() == 1 => Ok(keys.keys.first().cloned()),
        None => Err(AuthError::invalid("the token names no key (kid) and its issuer has several")),
    }
}

/// `https://as.example.com/tenant1` → (`https://as.example.com`, `/tenant1`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::split_origin;

    #[test]
    fn issuer_paths_split_for_rfc8414() {
        assert_eq!(split_origin("https://as.example.com/t1"), ("https://as.example.com", "/t1"));
        assert_eq!(split_origin("http://127.0.0.1:8080"), ("http://127.0.0.1:8080", ""));
    }
}
