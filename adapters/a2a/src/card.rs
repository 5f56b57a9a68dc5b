//! Agent cards: built from configuration, served with `Cache-Control`, `ETag` and
//! `Last-Modified`, and `304 Not Modified` on a matching `If-None-Match`.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::agent::{AgentKind, TCK_REQUIRED_EXTENSION};
use crate::config::{A2aConfig, AgentConfig};
use crate::error::A2aError;

/// The cards' `securitySchemes` and `securityRequirements` when callers authenticate with
/// bearer tokens for `resource`: a bearer JWT scheme, and per issuer its OpenID Connect discovery
/// URL with `scope` required.
pub fn security(resource: &str, issuers: &[&str], scope: &str) -> (Value, Value) {
    let mut schemes = json!({
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT",
            "description": format!("An access token for resource {resource}")}},
    });
    let mut requirements = vec![json!({"schemes": {"bearer": {"list": []}}})];
    for (i, issuer) in issuers.iter().enumerate() {
        let name = format!("oidc{}", i + 1);
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        schemes[&name] = json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": url}});
        requirements.push(json!({"schemes": {name: {"list": [scope]}}}));
    }
    (schemes, json!(requirements))
}

/// The base URL cards point at: the configured public URL, else `http(s)://<Host>`.
pub fn base_url(cfg: &A2aConfig, host: Option<&str>) -> String {
    match &cfg.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => format!("{}://{}", if cfg.tls { "https" } else { "http" }, host.unwrap_or("127.0.0.1")),
    }
}

/// The card of `agent` (`extended`: the authenticated variant, with an extra skill), with the
/// gateway's security declaration (`securitySchemes`, `securityRequirements`) when given.
pub fn card_with(
    cfg: &A2aConfig,
    agent: &AgentConfig,
    host: Option<&str>,
    extended: bool,
    security: Option<&(Value, Value)>,
) -> Value {
    let base = base_url(cfg, host);
    let grpc = base.split_once("://").map_or(base.as_str(), |(_, rest)| rest).to_string();
    let mut extensions: Vec<Value> = agent
        .required_extensions
        .iter()
        .map(|u| json!({"uri": u, "required": true, "description": "required by this gateway's configuration"}))
        .collect();
    if agent.kind == AgentKind::Tck {
        extensions.push(json!({
            "uri": TCK_REQUIRED_EXTENSION,
            "required": true,
            "description": "required for messages with the TCK extension-test prefix",
        }));
    }
    let (skill, description) = match agent.kind {
        AgentKind::Tck => ("tck", "The A2A 1.0 TCK test agent: behaves by messageId prefix"),
        AgentKind::Echo => ("echo", "Echoes the text of each message"),
        AgentKind::Upstream => ("proxy", "An internal agent exposed through the gateway; every message is recorded"),
        AgentKind::Tools => ("tools", "MCP tools exposed as an A2A agent; every tool call is a durable invocation"),
    };
    let mut skills = vec![json!({
        "id": skill,
        "name": skill,
        "description": description,
        "tags": ["switchyard", skill],
        "examples": ["hello"],
    })];
    if extended {
        skills.push(json!({
            "id": "task-audit",
            "name": "task audit",
            "description": "Every message and task is recorded as a durable invocation of the gateway",
            "tags": ["switchyard", "audit"],
        }));
    }
    let mut card = json!({
        "name": agent.name,
        "description": agent.description.clone().unwrap_or_else(|| description.to_string()),
        "version": agent.version,
        "supportedInterfaces": [
            {"url": format!("{base}{}", agent.base_path()), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}{}/rest", agent.base_path()), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            // One gRPC service serves every agent: the tenant names this one (see `grpc`).
            {"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": agent.name},
        ],
        "capabilities": {
            "streaming": agent.streaming,
            "pushNotifications": agent.push_notifications,
            "extendedAgentCard": agent.extended_card,
            "extensions": extensions,
        },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    });
    if let Some((schemes, requirements)) = security
        && let Some(obj) = card.as_object_mut()
    {
        obj.insert("securitySchemes".into(), schemes.clone());
        obj.insert("securityRequirements".into(), requirements.clone());
    }
    card
}

/// Puts the identity of an agent behind the gateway (`theirs`) into the gateway's card for it:
/// name, version, provider, skills, default modes and links; its description unless the
/// operator configured one. Interfaces, capabilities and security stay the gateway's.
pub fn keep_identity(
    card: &mut serde_json::Map<String, Value>,
    theirs: &a2a::AgentCard,
    own_description: bool,
) -> Result<(), crate::error::A2aError> {
    let value = |v: Result<Value, serde_json::Error>| v.map_err(|e| crate::error::A2aError::internal(e.to_string()));
    // The gateway's own extended-card skill stays.
    let ours: Vec<Value> = card
        .get("skills")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter(|k| k["id"] == "task-audit").cloned().collect())
        .unwrap_or_default();
    let mut skills = match value(serde_json::to_value(&theirs.skills))? {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    skills.extend(ours);
    card.insert("name".into(), json!(theirs.name));
    card.insert("version".into(), json!(theirs.version));
    if !own_description {
        card.insert("description".into(), json!(theirs.description));
    }
    card.insert("skills".into(), Value::Array(skills));
    card.insert("defaultInputModes".into(), json!(theirs.default_input_modes));
    card.insert("defaultOutputModes".into(), json!(theirs.default_output_modes));
    let links = [
        ("provider", value(serde_json::to_value(&theirs.provider))?),
        ("documentationUrl", json!(theirs.documentation_url)),
        ("iconUrl", json!(theirs.icon_url)),
    ];
    for (key, v) in links {
        if !v.is_null() {
            card.insert(key.into(), v);
        }
    }
    Ok(())
}

/// Signs agent cards (spec §8.4): a JWS with detached payload — the RFC 8785 form of the card
/// without `signatures` — in ES256 (P-256), key from a PKCS#8 PEM file.
pub struct CardSigner {
    key: aws_lc_rs::signature::EcdsaKeyPair,
    kid: String,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner").field("kid", &self.kid).finish_non_exhaustive()
    }
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl CardSigner {
    /// From a PKCS#8 P-256 private key in PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pem(pem: &str, kid: String) -> Result<Self, switchyard_contract::InvalidConfig> {
        use base64::Engine as _;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| format!("card signing key: not PEM: {e}"))?;
        let key = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &der,
        )
        .map_err(|e| format!("card signing key: not a PKCS#8 P-256 key: {e}"))?;
        Ok(Self { key, kid })
    }

    /// Replaces the card's `signatures` with this key's signature.
    pub fn sign(&self, card: &mut Value) -> Result<(), A2aError> {
        let Some(obj) = card.as_object_mut() else { return Err(A2aError::internal("a card is an object")) };
        obj.remove("signatures");
        let payload = serde_json_canonicalizer::to_string(&Value::Object(obj.clone()))
            .map_err(|e| A2aError::internal(e.to_string()))?;
        let protected = b64(json!({"alg": "ES256", "kid": self.kid, "typ": "JOSE"}).to_string().as_bytes());
        let input = format!("{protected}.{}", b64(payload.as_bytes()));
        let sig = self
            .key
            .sign(&aws_lc_rs::rand::SystemRandom::new(), input.as_bytes())
            .map_err(|e| A2aError::internal(format!("signing failed: {e}")))?;
        obj.insert("signatures".into(), json!([{"protected": protected, "signature": b64(sig.as_ref())}]));
        Ok(())
    }
}

/// The card as an HTTP response with caching headers (`last_modified`: when the
/// configuration was loaded).
pub fn respond(
    card: &Value,
    max_age: u64,
    last_modified: chrono::DateTime<chrono::Utc>,
    vary_host: bool,
    req: &HeaderMap,
) -> Response {
    let body = card.to_string();
    // Over the card without its signatures: an ES256 signature differs on every signing.
    let mut unsigned = card.clone();
    if let Some(o) = unsigned.as_object_mut() {
        o.remove("signatures");
    }
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(unsigned.to_string().as_bytes()))[..32]);
    let last_modified = last_modified.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let mut headers = HeaderMap::new();
    let mut put = |name: header::HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    };
    put(header::CACHE_CONTROL, &format!("public, max-age={max_age}"));
    put(header::ETAG, &etag);
    put(header::LAST_MODIFIED, &last_modified);
    if vary_host {
        // The card's URLs come from the request's Host.
        put(header::VARY, "Host");
    }
    let matches = req
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if matches {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    put(header::CONTENT_TYPE, "application/json");
    (StatusCode::OK, headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(cfg: &A2aConfig, agent: &AgentConfig, host: Option<&str>, extended: bool) -> Value {
        card_with(cfg, agent, host, extended, None)
    }

    fn agent() -> AgentConfig {
        serde_json::from_value(json!({"name": "tck", "kind": "tck", "extended_card": true})).unwrap()
    }

    #[test]
    fn signed_cards_verify_over_the_canonical_form() {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
        use base64::Engine as _;
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(der.as_ref())
        );
        let signer = CardSigner::from_pem(&pem, "k1".into()).unwrap();
        let mut c = card(&A2aConfig::default(), &agent(), Some("h:1"), false);
        signer.sign(&mut c).unwrap();
        let sig = &c["signatures"][0];
        let protected = sig["protected"].as_str().unwrap_or_default();
        let mut unsigned = c.clone();
        unsigned.as_object_mut().map(|o| o.remove("signatures"));
        let payload = serde_json_canonicalizer::to_string(&unsigned).unwrap_or_default();
        let input = format!("{protected}.{}", b64(payload.as_bytes()));
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig["signature"].as_str().unwrap_or_default())
            .unwrap_or_default();
        let public = aws_lc_rs::signature::UnparsedPublicKey::new(
            &ECDSA_P256_SHA256_FIXED,
            signer.key.public_key().as_ref().to_vec(),
        );
        assert!(public.verify(input.as_bytes(), &raw).is_ok(), "the signature verifies");
        unsigned["name"] = json!("tampered");
        let forged = format!(
            "{protected}.{}",
            b64(serde_json_canonicalizer::to_string(&unsigned).unwrap_or_default().as_bytes())
        );
        assert!(public.verify(forged.as_bytes(), &raw).is_err(), "a changed card does not");
        assert!(
            CardSigner::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "k".into()).is_err()
        );
    }

    #[test]
    fn the_card_lists_three_interfaces_and_is_cacheable() {
        let cfg = A2aConfig::default();
        let c = card(&cfg, &agent(), Some("127.0.0.1:9"), false);
        let bindings: Vec<_> =
            c["supportedInterfaces"].as_array().into_iter().flatten().map(|i| i["protocolBinding"].clone()).collect();
        assert_eq!(bindings, [json!("JSONRPC"), json!("HTTP+JSON"), json!("GRPC")]);
        assert_eq!(c["supportedInterfaces"][2]["url"], "127.0.0.1:9");
        let when = chrono::DateTime::from_timestamp(0, 0).unwrap_or_default();
        let first = respond(&c, 60, when, false, &HeaderMap::new());
        assert_eq!(first.status(), StatusCode::OK);
        let etag = first.headers().get(header::ETAG).cloned().unwrap_or_else(|| panic!("etag"));
        assert_eq!(
            first.headers().get(header::LAST_MODIFIED).map(|v| v.as_bytes()),
            Some(&b"Thu, 01 Jan 1970 00:00:00 GMT"[..])
        );
        let mut again = HeaderMap::new();
        again.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(respond(&c, 60, when, false, &again).status(), StatusCode::NOT_MODIFIED);
        let ext = card(&cfg, &agent(), Some("h"), true);
        assert!(ext["skills"].as_array().map_or(0, Vec::len) > c["skills"].as_array().map_or(0, Vec::len));
    }
}
