//! Agent cards: built from configuration, served with `Cache-Control`, `ETag` and
//! `Last-Modified`, and `304 Not Modified` on a matching `If-None-Match`.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::agent::{AgentKind, TCK_REQUIRED_EXTENSION};
use crate::config::{A2aConfig, AgentConfig};

/// The base URL cards point at: the configured public URL, else `http://<Host>`.
pub fn base_url(cfg: &A2aConfig, host: Option<&str>) -> String {
    match &cfg.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => format!("http://{}", host.unwrap_or("127.0.0.1")),
    }
}

/// The card of `agent` (`extended`: the authenticated variant, with the operator skills).
pub fn card(cfg: &A2aConfig, agent: &AgentConfig, host: Option<&str>, extended: bool) -> Value {
    card_with(cfg, agent, host, extended, None)
}

/// The card with the gateway's security declaration (`securitySchemes`, `securityRequirements`).
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
        "provider": {"organization": "Switchyard", "url": "https://github.com/switchyard"},
        "supportedInterfaces": [
            {"url": format!("{base}{}", agent.base_path()), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}{}/rest", agent.base_path()), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
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

/// The card as an HTTP response with caching headers (`last_modified`: when the
/// configuration was loaded).
pub fn respond(card: &Value, max_age: u64, last_modified: chrono::DateTime<chrono::Utc>, req: &HeaderMap) -> Response {
    let body = card.to_string();
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(body.as_bytes()))[..32]);
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

    fn agent() -> AgentConfig {
        toml_agent()
    }

    fn toml_agent() -> AgentConfig {
        serde_json::from_value(json!({"name": "tck", "kind": "tck", "extended_card": true}))
            .unwrap_or_else(|e| panic!("{e}"))
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
        let first = respond(&c, 60, when, &HeaderMap::new());
        assert_eq!(first.status(), StatusCode::OK);
        let etag = first.headers().get(header::ETAG).cloned().unwrap_or_else(|| panic!("etag"));
        assert_eq!(
            first.headers().get(header::LAST_MODIFIED).map(|v| v.as_bytes()),
            Some(&b"Thu, 01 Jan 1970 00:00:00 GMT"[..])
        );
        let mut again = HeaderMap::new();
        again.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(respond(&c, 60, when, &again).status(), StatusCode::NOT_MODIFIED);
        let ext = card(&cfg, &agent(), Some("h"), true);
        assert!(ext["skills"].as_array().map_or(0, Vec::len) > c["skills"].as_array().map_or(0, Vec::len));
    }
}
