//! Resource-server configuration (the `[auth]` section of the gateway's configuration).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
pub use switchyard_contract::Secret;

/// Algorithms accepted when an issuer does not list its own. Symmetric (HS*) algorithms are
/// never accepted: a resource server must not share a signing secret with the issuer.
pub const DEFAULT_ALGORITHMS: [&str; 4] = ["RS256", "PS256", "ES256", "EdDSA"];

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The gateway's canonical resource URI (RFC 8707), e.g. `https://gw.example.com`. Tokens
    /// must carry it in `aud` (unless an issuer overrides `audience`).
    pub resource: String,
    /// The token issuers trusted: their JWT access tokens, and with `introspection` their opaque
    /// tokens, are accepted. With several issuers, each must list its `tenants`.
    #[serde(default)]
    pub issuers: Vec<IssuerConfig>,
    /// Static API keys. Only each key's SHA-256 is configured; the key itself is never stored.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// Unauthenticated requests act as this principal. Refused unless the gateway listens on
    /// loopback only.
    #[serde(default)]
    pub anonymous: Option<AnonymousConfig>,
    /// Advertised in the protected-resource metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The issuer identifier; a token's `iss` must equal it exactly.
    pub issuer: String,
    /// Where the keys are. Empty: discovered from the issuer's OpenID Connect or RFC 8414
    /// metadata (whose `issuer` must equal `issuer`).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Accepted `alg` values (default: RS256, PS256, ES256, EdDSA).
    #[serde(default)]
    pub algorithms: Vec<String>,
    /// Overrides the expected `aud` (default: `auth.resource`).
    #[serde(default)]
    pub audience: Option<String>,
    /// Allowed clock skew for `exp` and `nbf`, in seconds (at most 300).
    #[serde(default = "default_skew")]
    pub clock_skew_s: u64,
    /// The claim naming the tenant; absent claim → `default_tenant`, else refused.
    #[serde(default = "default_tenant_claim")]
    pub tenant_claim: String,
    /// The tenant of a token without the `tenant_claim` claim. Unset: such tokens are refused.
    #[serde(default)]
    pub default_tenant: Option<String>,
    /// The tenants this issuer's tokens may name; a token for any other tenant is refused.
    /// Empty: any tenant, which is allowed only when this is the one issuer configured (else one
    /// identity provider could mint tokens for another's tenants).
    #[serde(default)]
    pub tenants: Vec<String>,
    /// How often the keys are re-read at most when a token names an unknown `kid`, in ms.
    #[serde(default = "default_min_refresh")]
    pub jwks_min_refresh_ms: u64,
    /// How long fetched keys are used before being re-read, in seconds.
    #[serde(default = "default_jwks_ttl")]
    pub jwks_ttl_s: u64,
    /// RFC 7662 introspection for opaque (non-JWT) tokens from this issuer.
    #[serde(default)]
    pub introspection: Option<IntrospectionConfig>,
}

/// How to ask the issuer about an opaque token (RFC 7662), authenticating with HTTP Basic.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionConfig {
    /// The issuer's introspection endpoint, `http://` or `https://`.
    pub endpoint: String,
    /// Opaque tokens that start with this go to this endpoint, and only those. Required when
    /// more than one issuer introspects: an opaque token names no issuer, and must never be shown
    /// to an issuer that did not mint it.
    #[serde(default)]
    pub token_prefix: Option<String>,
    /// The client id the gateway authenticates to the endpoint with (HTTP Basic).
    pub client_id: String,
    /// That client's secret; never printed.
    pub client_secret: Secret,
    /// An active answer is reused for at most this long (and never past the token's `exp`).
    #[serde(default = "default_introspection_cache")]
    pub cache_s: u64,
}

fn default_introspection_cache() -> u64 {
    60
}

fn default_skew() -> u64 {
    60
}
fn default_tenant_claim() -> String {
    "tenant".into()
}
fn default_min_refresh() -> u64 {
    10_000
}
fn default_jwks_ttl() -> u64 {
    300
}

/// A static API key. Only its SHA-256 is configured; the key itself is never stored.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// A label for logs.
    pub name: String,
    /// Hex SHA-256 of the key (`printf %s "$KEY" | sha256sum`).
    pub sha256: String,
    /// The tenant a caller with this key acts for.
    pub tenant: String,
    /// The subject (principal) a caller with this key acts as.
    pub subject: String,
    /// The scopes the key grants, e.g. `invocations:read`. Default: none.
    #[serde(default)]
    pub scopes: BTreeSet<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnonymousConfig {
    /// The tenant unauthenticated requests act for.
    pub tenant: String,
    /// The subject (principal) they act as.
    #[serde(default = "default_anonymous")]
    pub subject: String,
    /// The scopes they have, e.g. `invocations:read`. Default: none.
    #[serde(default)]
    pub scopes: BTreeSet<String>,
}

fn default_anonymous() -> String {
    "anonymous".into()
}

impl AuthConfig {
    /// Checks what types cannot; messages name the key. `loopback_only` says whether the
    /// gateway listens on loopback addresses only.
    pub fn validate(&self, loopback_only: bool) -> Result<(), switchyard_contract::InvalidConfig> {
        if !(self.resource.starts_with("https://") || self.resource.starts_with("http://")) {
            return Err("auth.resource must be an http(s) URI".into());
        }
        if self.anonymous.is_some() && !loopback_only {
            return Err("auth.anonymous is allowed only when server.listen is a loopback address".into());
        }
        for (i, iss) in self.issuers.iter().enumerate() {
            if iss.issuer.is_empty() {
                return Err(format!("auth.issuers[{i}].issuer is empty").into());
            }
            if let Some(ic) = &iss.introspection
                && !(ic.endpoint.starts_with("https://") || ic.endpoint.starts_with("http://"))
            {
                return Err(format!("auth.issuers[{i}].introspection.endpoint must be an http(s) URL").into());
            }
            if iss.clock_skew_s > 300 {
                return Err(format!("auth.issuers[{i}].clock_skew_s must be at most 300").into());
            }
            for alg in &iss.algorithms {
                if alg.starts_with("HS")
                    || !DEFAULT_ALGORITHMS
                        .iter()
                        .chain(["RS384", "RS512", "PS384", "PS512", "ES384"].iter())
                        .any(|a| a == alg)
                {
                    return Err(format!(
                        "auth.issuers[{i}].algorithms: `{alg}` is not an accepted asymmetric algorithm"
                    )
                    .into());
                }
            }
        }
        if self.issuers.len() > 1
            && let Some(i) = self.issuers.iter().position(|iss| iss.tenants.is_empty())
        {
            return Err(format!(
                "auth.issuers[{i}].tenants is empty: with several issuers, each must list the tenants its tokens may name"
            ).into());
        }
        let introspecting: Vec<(usize, Option<&str>)> = self
            .issuers
            .iter()
            .enumerate()
            .filter_map(|(i, iss)| iss.introspection.as_ref().map(|c| (i, c.token_prefix.as_deref())))
            .collect();
        if introspecting.len() > 1 {
            for (i, prefix) in &introspecting {
                let Some(p) = prefix.filter(|p| !p.is_empty()) else {
                    return Err(format!(
                        "auth.issuers[{i}].introspection.token_prefix is required when several issuers introspect"
                    )
                    .into());
                };
                if introspecting.iter().any(|(j, q)| j != i && q.is_some_and(|q| q.starts_with(p))) {
                    return Err(
                        format!("auth.issuers[{i}].introspection.token_prefix overlaps another issuer's").into()
                    );
                }
            }
        }
        for (i, k) in self.api_keys.iter().enumerate() {
            if k.sha256.len() != 64 || !k.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("auth.api_keys[{i}].sha256 must be 64 hex digits").into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> AuthConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn several_issuers_are_bound_to_tenants_and_to_token_prefixes() {
        let two = |a: &str, b: &str| {
            parse(&format!(
                "resource = \"https://gw.test\"\n[[issuers]]\nissuer = \"https://a\"\n{a}\n[[issuers]]\nissuer = \"https://b\"\n{b}\n"
            ))
        };
        let e = two("", "tenants = [\"b\"]").validate(true).err().unwrap_or_default();
        assert!(e.0.contains("auth.issuers[0].tenants"), "{e}");
        assert!(two("tenants = [\"a\"]", "tenants = [\"b\"]").validate(true).is_ok());
        let intro = |prefix: &str| {
            format!(
                "tenants = [\"x\"]\nintrospection = {{ endpoint = \"https://i\", client_id = \"c\", client_secret = \"s\"{prefix} }}"
            )
        };
        let e = two(&intro(""), &intro(", token_prefix = \"b_\"")).validate(true).err().unwrap_or_default();
        assert!(e.0.contains("auth.issuers[0].introspection.token_prefix is required"), "{e}");
        let e = two(&intro(", token_prefix = \"b\""), &intro(", token_prefix = \"b_\""))
            .validate(true)
            .err()
            .unwrap_or_default();
        assert!(e.0.contains("overlaps"), "{e}");
        assert!(two(&intro(", token_prefix = \"a_\""), &intro(", token_prefix = \"b_\"")).validate(true).is_ok());
    }
}
