//! One issuer's signing keys: found through discovery (OpenID Connect, then RFC 8414) unless
//! configured, cached for `jwks_ttl_s`, and re-read when a token names a key we do not have
//! (key rotation) — at most once per `jwks_min_refresh_ms`.
//!
//! An identity provider's outage must not become an authentication outage: checks read the
//! cache without waiting on the network, keys past their TTL keep being served while one
//! refresh runs in the background, and a failed refresh keeps the keys it would have replaced.
//! Only a token naming a key the cache does not hold waits, for the one refresh in flight.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::config::IssuerConfig;
use crate::error::AuthError;

/// Largest metadata or JWKS document accepted.
const MAX_DOCUMENT: usize = 256 * 1024;

#[derive(Debug, Clone)]
struct Cached {
    keys: JwkSet,
    fetched: Instant,
}

#[derive(Debug, Default)]
struct State {
    jwks_uri: Option<String>,
    cached: Option<Cached>,
    /// When the last refresh was tried (success or not), for `jwks_min_refresh_ms`.
    tried: Option<Instant>,
}

/// The key cache of one issuer.
#[derive(Debug)]
pub(crate) struct IssuerKeys {
    cfg: IssuerConfig,
    http: reqwest::Client,
    state: std::sync::Mutex<State>,
    /// Held by the one refresh in flight (never while `state` is locked).
    refreshing: Mutex<()>,
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: Option<String>,
}

impl IssuerKeys {
    pub(crate) fn new(cfg: IssuerConfig, http: reqwest::Client) -> Arc<Self> {
        let state = State { jwks_uri: cfg.jwks_uri.clone(), ..State::default() };
        Arc::new(Self { cfg, http, state: std::sync::Mutex::new(state), refreshing: Mutex::new(()) })
    }

    fn cached(&self) -> Option<Cached> {
        self.state.lock().ok().and_then(|s| s.cached.clone())
    }

    /// The key for `kid` (or the only key, when the token names none).
    pub(crate) async fn key(self: &Arc<Self>, kid: Option<&str>) -> Result<Jwk, AuthError> {
        let ttl = Duration::from_secs(self.cfg.jwks_ttl_s);
        if let Some(c) = self.cached()
            && let Some(k) = pick(&c.keys, kid)?
        {
            if c.fetched.elapsed() >= ttl {
                // Stale but still the issuer's last word: serve it, refresh in the background.
                let me = self.clone();
                tokio::spawn(async move { me.refresh(false).await });
            }
            return Ok(k);
        }
        // A key we do not hold (rotation, or nothing fetched yet): wait for one refresh.
        self.refresh(true).await;
        match self.cached() {
            Some(c) => pick(&c.keys, kid)?
                .ok_or_else(|| AuthError::invalid("the token's signing key is unknown to its issuer")),
            None => Err(AuthError::Unavailable("the issuer's keys are not available".into())),
        }
    }

    /// Re-reads the keys, unless another refresh is in flight (then waits for it when `wait`)
    /// or the last try was less than `jwks_min_refresh_ms` ago. A failure keeps the old keys.
    async fn refresh(&self, wait: bool) {
        let _one = match self.refreshing.try_lock() {
            Ok(guard) => guard,
            Err(_) if wait => {
                let _ = self.refreshing.lock().await; // the refresh in flight decides
                return;
            }
            Err(_) => return,
        };
        let min_refresh = Duration::from_millis(self.cfg.jwks_min_refresh_ms);
        let (uri, recent) = match self.state.lock() {
            Ok(s) => (s.jwks_uri.clone(), s.tried.is_some_and(|t| t.elapsed() < min_refresh)),
            Err(_) => return,
        };
        if recent {
            return;
        }
        if let Ok(mut s) = self.state.lock() {
            s.tried = Some(Instant::now());
        }
        let fetched = async {
            let uri = match uri {
                Some(u) => u,
                None => self.discover().await?,
            };
            let keys: JwkSet = self.fetch(&uri).await?;
            Ok::<_, AuthError>((uri, keys))
        }
        .await;
        match fetched {
            Ok((uri, keys)) => {
                tracing::info!(issuer = %self.cfg.issuer, keys = keys.keys.len(), "fetched signing keys");
                if let Ok(mut s) = self.state.lock() {
                    s.jwks_uri = Some(uri);
                    s.cached = Some(Cached { keys, fetched: Instant::now() });
                }
            }
            Err(e) => {
                tracing::warn!(issuer = %self.cfg.issuer, error = %e, "cannot refresh signing keys; keeping the ones held")
            }
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
    use super::*;

    /// A JWKS endpoint on loopback that answers `keys` until `down` is set, then 503 after a
    /// long pause (an identity provider in trouble).
    async fn idp(keys: serde_json::Value, down: Arc<std::sync::atomic::AtomicBool>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(move || {
            let (keys, down) = (keys.clone(), down.clone());
            async move {
                if down.load(std::sync::atomic::Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, String::new())
                } else {
                    (axum::http::StatusCode::OK, keys.to_string())
                }
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/jwks")
    }

    #[tokio::test]
    async fn an_idp_outage_serves_the_keys_held_without_waiting() {
        let jwk = serde_json::json!({"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "k1"});
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let uri = idp(serde_json::json!({"keys": [jwk]}), down.clone()).await;
        let cfg: IssuerConfig = serde_json::from_value(serde_json::json!({
            "issuer": "https://idp.test", "jwks_uri": uri, "jwks_ttl_s": 0, "jwks_min_refresh_ms": 0
        }))
        .unwrap();
        let keys = IssuerKeys::new(cfg, reqwest::Client::new());
        assert!(keys.key(Some("k1")).await.is_ok(), "fetched");
        down.store(true, std::sync::atomic::Ordering::SeqCst);
        // Past the TTL and the IdP hangs: the held key answers at once, many times.
        let t0 = Instant::now();
        for _ in 0..20 {
            assert!(keys.key(Some("k1")).await.is_ok(), "stale keys are served");
        }
        assert!(t0.elapsed() < Duration::from_secs(1), "checks waited on the IdP: {:?}", t0.elapsed());
        tokio::time::sleep(Duration::from_millis(3500)).await; // the background refresh failed
        assert!(keys.key(Some("k1")).await.is_ok(), "a failed refresh keeps the keys");
        let e = keys.key(Some("k2")).await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("unknown"), "{e}");
    }

    #[test]
    fn issuer_paths_split_for_rfc8414() {
        assert_eq!(split_origin("https://as.example.com/t1"), ("https://as.example.com", "/t1"));
        assert_eq!(split_origin("http://127.0.0.1:8080"), ("http://127.0.0.1:8080", ""));
    }
}
