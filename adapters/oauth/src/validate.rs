//! Credentials → [`Caller`].

use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::time::Duration;

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_contract::secret::constant_time_eq;
use switchyard_contract::{Principal, TenantId};

use crate::config::{AuthConfig, DEFAULT_ALGORITHMS, IssuerConfig};
use crate::error::AuthError;
use crate::introspect::Introspector;
use crate::jwks::IssuerKeys;

/// How a caller authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// An access token from `issuer`, a JWT or an introspected opaque token.
    Token {
        issuer: String,
    },
    ApiKey {
        name: String,
    },
    Anonymous,
}

/// An authenticated caller: who (the contract principal) and what they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub principal: Principal,
    pub scopes: BTreeSet<String>,
    pub method: Method,
}

impl Caller {
    /// The scopes in `needed` the caller lacks.
    pub fn missing<'a>(&self, needed: &[&'a str]) -> Vec<&'a str> {
        needed.iter().copied().filter(|s| !self.scopes.contains(*s)).collect()
    }
}

struct Issuer {
    cfg: IssuerConfig,
    algorithms: Vec<Algorithm>,
    keys: std::sync::Arc<IssuerKeys>,
    introspector: Option<Introspector>,
}

/// Checks bearer credentials against the configuration.
pub struct Authenticator {
    cfg: AuthConfig,
    issuers: HashMap<String, Issuer>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").field("resource", &self.cfg.resource).finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Builds the authenticator; fetches nothing until the first token arrives.
    pub fn new(cfg: AuthConfig) -> Result<Self, switchyard_contract::InvalidConfig> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let mut issuers = HashMap::new();
        for ic in &cfg.issuers {
            let names: Vec<&str> = if ic.algorithms.is_empty() {
                DEFAULT_ALGORITHMS.to_vec()
            } else {
                ic.algorithms.iter().map(String::as_str).collect()
            };
            let algorithms = names
                .iter()
                .map(|a| Algorithm::from_str(a).map_err(|_| format!("unknown algorithm {a}")))
                .collect::<Result<Vec<_>, _>>()?;
            let keys = IssuerKeys::new(ic.clone(), http.clone());
            let introspector = ic.introspection.clone().map(|c| Introspector::new(c, http.clone()));
            issuers.insert(ic.issuer.clone(), Issuer { cfg: ic.clone(), algorithms, keys, introspector });
        }
        Ok(Self { cfg, issuers })
    }

    pub fn config(&self) -> &AuthConfig {
        &self.cfg
    }

    /// The caller for a bearer credential; `None` means no credential was presented.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<Caller, AuthError> {
        let Some(token) = bearer else {
            return match &self.cfg.anonymous {
                Some(a) => Ok(Caller {
                    principal: Principal::new(tenant(&a.tenant)?, a.subject.clone()),
                    scopes: a.scopes.clone(),
                    method: Method::Anonymous,
                }),
                None => Err(AuthError::Missing),
            };
        };
        if let Some(caller) = self.api_key(token)? {
            return Ok(caller);
        }
        if token.split('.').count() == 3 {
            return self.jwt(token).await;
        }
        self.opaque(token).await
    }

    /// An opaque token: asked of the one issuer that introspects (RFC 7662), or of the one
    /// whose `token_prefix` it carries — never shown to an issuer that did not mint it.
    async fn opaque(&self, token: &str) -> Result<Caller, AuthError> {
        let introspecting: Vec<&Issuer> = self.issuers.values().filter(|i| i.introspector.is_some()).collect();
        let prefix = |i: &Issuer| i.cfg.introspection.as_ref().and_then(|c| c.token_prefix.clone());
        let chosen = match introspecting.as_slice() {
            [only] => prefix(only).is_none_or(|p| token.starts_with(&p)).then_some(*only),
            many => many.iter().copied().find(|i| prefix(i).is_some_and(|p| token.starts_with(&p))),
        };
        if let Some(issuer) = chosen
            && let Some(introspector) = &issuer.introspector
        {
            let Some(claims) = introspector.claims(token).await? else {
                return Err(AuthError::invalid("the bearer token is not recognized"));
            };
            if claims.get("iss").and_then(Value::as_str).is_some_and(|i| i != issuer.cfg.issuer) {
                return Err(AuthError::invalid("the token's issuer is not trusted"));
            }
            let audience = issuer.cfg.audience.as_deref().unwrap_or(&self.cfg.resource);
            let aud_ok = match claims.get("aud") {
                Some(Value::String(a)) => a == audience,
                Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(audience)),
                _ => false,
            };
            if !aud_ok {
                return Err(AuthError::invalid("the token is for another audience"));
            }
            let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap_or(i64::MAX);
            let skew = i64::try_from(issuer.cfg.clock_skew_s).unwrap_or(0);
            if claims.get("exp").and_then(Value::as_i64).is_some_and(|e| e + skew < now) {
                return Err(AuthError::invalid("the token has expired"));
            }
            if claims.get("nbf").and_then(Value::as_i64).is_some_and(|n| n - skew > now) {
                return Err(AuthError::invalid("the token is not valid yet"));
            }
            return caller(issuer, &claims);
        }
        Err(AuthError::invalid("the bearer token is not recognized"))
    }

    fn api_key(&self, token: &str) -> Result<Option<Caller>, AuthError> {
        let digest = hex::encode(Sha256::digest(token.as_bytes()));
        for k in &self.cfg.api_keys {
            if constant_time_eq(digest.as_bytes(), k.sha256.to_ascii_lowercase().as_bytes()) {
                return Ok(Some(Caller {
                    principal: Principal::new(tenant(&k.tenant)?, k.subject.clone()),
                    scopes: k.scopes.clone(),
                    method: Method::ApiKey { name: k.name.clone() },
                }));
            }
        }
        Ok(None)
    }

    async fn jwt(&self, token: &str) -> Result<Caller, AuthError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| AuthError::invalid("the token is not a valid JWT"))?;
        // The issuer picks the keys; the signature check below makes the choice binding.
        let iss = unverified_issuer(token)?;
        let issuer = self.issuers.get(&iss).ok_or_else(|| AuthError::invalid("the token's issuer is not trusted"))?;
        if !issuer.algorithms.contains(&header.alg) {
            return Err(AuthError::invalid(format!("algorithm {:?} is not accepted", header.alg)));
        }
        let jwk = issuer.keys.key(header.kid.as_deref()).await?;
        if jwk.common.key_algorithm.is_some_and(|ka| ka.to_string() != format!("{:?}", header.alg)) {
            return Err(AuthError::invalid("the token's algorithm does not match its key"));
        }
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|_| AuthError::Unavailable("the issuer published an unusable key".into()))?;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&issuer.cfg.issuer]);
        v.set_audience(&[issuer.cfg.audience.as_deref().unwrap_or(&self.cfg.resource)]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.leeway = issuer.cfg.clock_skew_s;
        v.validate_nbf = true;
        let data = jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &v).map_err(reason)?;
        caller(issuer, &data.claims)
    }
}

/// Verified claims → the caller: `sub`, the tenant claim (or the issuer's default tenant) and
/// the granted scopes.
fn caller(issuer: &Issuer, claims: &serde_json::Map<String, Value>) -> Result<Caller, AuthError> {
    let subject = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty());
    let subject = subject.ok_or_else(|| AuthError::invalid("the token has no subject"))?.to_string();
    let tenant_name = match claims.get(&issuer.cfg.tenant_claim).and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => issuer
            .cfg
            .default_tenant
            .clone()
            .ok_or_else(|| AuthError::invalid(format!("the token has no `{}` claim", issuer.cfg.tenant_claim)))?,
    };
    if !issuer.cfg.tenants.is_empty() && !issuer.cfg.tenants.contains(&tenant_name) {
        return Err(AuthError::invalid(format!("the token's issuer may not name tenant `{tenant_name}`")));
    }
    let method = Method::Token { issuer: issuer.cfg.issuer.clone() };
    Ok(Caller { principal: Principal::new(tenant(&tenant_name)?, subject), scopes: scopes(claims), method })
}

fn tenant(name: &str) -> Result<TenantId, AuthError> {
    TenantId::new(name).map_err(|_| AuthError::invalid("the token's tenant is not a valid tenant name"))
}

/// `scope` (space-separated) or `scp` (array or string).
fn scopes(claims: &serde_json::Map<String, Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for key in ["scope", "scp"] {
        match claims.get(key) {
            Some(Value::String(s)) => out.extend(s.split_whitespace().map(str::to_string)),
            Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str).map(str::to_string)),
            _ => {}
        }
    }
    out
}

fn unverified_issuer(token: &str) -> Result<String, AuthError> {
    let payload = token.split('.').nth(1).unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| AuthError::invalid("the token is not a valid JWT"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| AuthError::invalid("the token is not a valid JWT"))?;
    v.get("iss")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| AuthError::invalid("the token has no issuer"))
}

fn reason(e: jsonwebtoken::errors::Error) -> AuthError {
    use jsonwebtoken::errors::ErrorKind as K;
    AuthError::invalid(match e.kind() {
        K::ExpiredSignature => "the token has expired",
        K::ImmatureSignature => "the token is not valid yet",
        K::InvalidAudience => "the token is for another audience",
        K::InvalidIssuer => "the token's issuer is not trusted",
        K::InvalidSignature => "the token's signature is invalid",
        K::MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud, sub)",
        K::InvalidAlgorithm => "the token's algorithm does not match its key",
        _ => "the token is invalid",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AnonymousConfig, ApiKeyConfig};

    fn cfg() -> AuthConfig {
        AuthConfig {
            resource: "http://127.0.0.1:1".into(),
            issuers: Vec::new(),
            api_keys: vec![ApiKeyConfig {
                name: "ci".into(),
                sha256: hex::encode(Sha256::digest(b"sk_live_123")),
                tenant: "acme".into(),
                subject: "ci-bot".into(),
                scopes: ["a".to_string()].into(),
            }],
            anonymous: None,
            scopes_supported: Vec::new(),
        }
    }

    #[tokio::test]
    async fn api_keys_match_by_hash_and_nothing_else_passes() {
        let auth = Authenticator::new(cfg()).unwrap();
        let caller = auth.authenticate(Some("sk_live_123")).await.unwrap();
        assert_eq!(caller.principal.subject, "ci-bot");
        assert_eq!(caller.missing(&["a", "b"]), vec!["b"]);
        assert!(matches!(auth.authenticate(Some("sk_live_124")).await, Err(AuthError::InvalidToken(_))));
        assert_eq!(auth.authenticate(None).await, Err(AuthError::Missing));
        // A JWT from an issuer nobody configured.
        let fake = "eyJhbGciOiJFZERTQSJ9.eyJpc3MiOiJodHRwczovL2V2aWwifQ.c2ln";
        assert!(
            matches!(auth.authenticate(Some(fake)).await, Err(AuthError::InvalidToken(m)) if m.contains("not trusted"))
        );
    }

    #[test]
    fn anonymous_only_on_loopback_and_no_symmetric_algorithms() {
        let mut c = cfg();
        c.anonymous = Some(AnonymousConfig { tenant: "dev".into(), subject: "anon".into(), scopes: BTreeSet::new() });
        assert!(c.validate(true).is_ok());
        assert!(c.validate(false).is_err_and(|e| e.0.contains("loopback")));
        c.anonymous = None;
        c.issuers.push(IssuerConfig {
            issuer: "https://as".into(),
            jwks_uri: None,
            algorithms: vec!["HS256".into()],
            audience: None,
            clock_skew_s: 60,
            tenant_claim: "tenant".into(),
            default_tenant: None,
            tenants: Vec::new(),
            jwks_min_refresh_ms: 0,
            jwks_ttl_s: 300,
            introspection: None,
        });
        assert!(c.validate(true).is_err_and(|e| e.0.contains("HS256")));
    }
}
