//! Era-agnostic "ask the client" helpers.
//!
//! On 2026-07-28 a server never sends JSON-RPC requests: it answers `tools/call` / `prompts/get`
//! / `resources/read` with `resultType: "input_required"` (SEP-2322 MRTR) and the client retries
//! with `inputResponses`. In a legacy (2025-11-25) session the same question is a server→client
//! request (`elicitation/create`, `sampling/createMessage`, `roots/list`). [`Ask`] models one
//! question so a tool can be written once for both eras.

// Sampling and roots are deprecated by SEP-2577 but still reachable through MRTR and legacy sessions.
#![allow(deprecated)]

use std::collections::BTreeMap;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, ErrorData, InputRequest, InputRequests, InputResponses, ListRootsRequest, SamplingMessage,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value};

/// One question for the client.
#[derive(Debug, Clone)]
pub enum Ask {
    /// A form elicitation; `schema` is the `requestedSchema` object.
    Elicit { message: String, schema: Value },
    /// A sampling request with a single user text message.
    Sample { prompt: String, max_tokens: u32 },
    /// A `roots/list` request.
    Roots,
}

/// The outcome of asking.
#[derive(Debug)]
pub enum Answer {
    /// The client's result object (`ElicitResult`, `CreateMessageResult` or `ListRootsResult`).
    Got(Value),
    /// Modern request without a usable answer yet: return this `input_required` result.
    Need(InputRequests),
    /// Legacy server→client request failed (reported to the caller as a tool error).
    Failed(String),
}

impl Ask {
    pub fn elicit(message: impl Into<String>, schema: Value) -> Self {
        Self::Elicit { message: message.into(), schema }
    }

    pub fn sample(prompt: impl Into<String>) -> Self {
        Self::Sample { prompt: prompt.into(), max_tokens: 100 }
    }

    /// The client capability this question needs, if `declared` lacks it.
    pub fn missing_capability(&self, declared: &ClientCapabilities) -> Option<ClientCapabilities> {
        match self {
            Self::Elicit { .. } if declared.elicitation.is_none() => {
                Some(ClientCapabilities::builder().enable_elicitation().build())
            }
            Self::Sample { .. } if declared.sampling.is_none() => {
                Some(ClientCapabilities::builder().enable_sampling().build())
            }
            Self::Roots if declared.roots.is_none() => Some(ClientCapabilities::builder().enable_roots().build()),
            _ => None,
        }
    }

    fn elicit_params(message: &str, schema: &Value) -> Result<ElicitRequestParams, ErrorData> {
        let requested_schema: ElicitationSchema = serde_json::from_value(schema.clone())
            .map_err(|e| ErrorData::internal_error(format!("fixture elicitation schema: {e}"), None))?;
        Ok(ElicitRequestParams::FormElicitationParams { meta: None, message: message.to_owned(), requested_schema })
    }

    fn sample_params(prompt: &str, max_tokens: u32) -> CreateMessageRequestParams {
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens)
    }

    /// The MRTR `inputRequests` entry for this question.
    pub fn input_request(&self) -> Result<InputRequest, ErrorData> {
        Ok(match self {
            Self::Elicit { message, schema } => {
                InputRequest::Elicitation(ElicitRequest::new(Self::elicit_params(message, schema)?))
            }
            Self::Sample { prompt, max_tokens } => {
                InputRequest::CreateMessage(CreateMessageRequest::new(Self::sample_params(prompt, *max_tokens)))
            }
            Self::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
        })
    }

    /// Ask through a legacy server→client request.
    pub async fn ask_peer(&self, peer: &Peer<RoleServer>) -> Answer {
        let result = match self {
            Self::Elicit { message, schema } => match Self::elicit_params(message, schema) {
                Ok(params) => peer.create_elicitation(params).await.map(serde_json::to_value),
                Err(e) => return Answer::Failed(e.message.to_string()),
            },
            Self::Sample { prompt, max_tokens } => {
                peer.create_message(Self::sample_params(prompt, *max_tokens)).await.map(serde_json::to_value)
            }
            Self::Roots => peer.list_roots().await.map(serde_json::to_value),
        };
        match result {
            Ok(Ok(value)) => Answer::Got(value),
            Ok(Err(e)) => Answer::Failed(format!("cannot encode client result: {e}")),
            Err(e) => Answer::Failed(e.to_string()),
        }
    }
}

/// The answer stored under `key`, if it is an object (anything else counts as missing, so the
/// server asks again).
pub fn response<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Map<String, Value>> {
    responses?.get(key)?.as_object()
}

/// Several questions at once, as one `inputRequests` map.
pub fn requests(questions: &[(&str, &Ask)]) -> Result<InputRequests, ErrorData> {
    let mut map = BTreeMap::new();
    for (key, ask) in questions {
        map.insert((*key).to_owned(), ask.input_request()?);
    }
    Ok(map)
}

/// `content.<field>` of an `ElicitResult` when the user accepted.
pub fn elicited_string(result: &Value, field: &str) -> Option<String> {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    result.get("content")?.get(field)?.as_str().map(str::to_owned)
}

/// The elicitation `action` (`accept`, `decline`, `cancel`).
pub fn elicit_action(result: &Value) -> &str {
    result.get("action").and_then(Value::as_str).unwrap_or("unknown")
}

/// The first text of a `CreateMessageResult` (content may be one block or an array).
pub fn sampled_text(result: &Value) -> Option<String> {
    let content = result.get("content")?;
    let block = match content {
        Value::Array(blocks) => blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("text"))?,
        other => other,
    };
    block.get("text")?.as_str().map(str::to_owned)
}

/// The root URIs of a `ListRootsResult`.
pub fn root_uris(result: &Value) -> Vec<String> {
    result
        .get("roots")
        .and_then(Value::as_array)
        .map(|roots| roots.iter().filter_map(|r| r.get("uri")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// A deterministic rendering of `value` with object keys sorted, for binding sealed state to the
/// request parameters regardless of the JSON map's key order.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys() {
        assert_eq!(canonical_json(&json!({"b": 1, "a": {"d": [2, {"z": 0, "y": 1}], "c": null}})), {
            r#"{"a":{"c":null,"d":[2,{"y":1,"z":0}]},"b":1}"#
        });
    }

    #[test]
    fn reads_answers() {
        let elicit = json!({"action": "accept", "content": {"name": "Ada"}});
        assert_eq!(elicited_string(&elicit, "name").as_deref(), Some("Ada"));
        assert_eq!(elicited_string(&json!({"action": "decline"}), "name"), None);
        let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        assert_eq!(sampled_text(&sampled).as_deref(), Some("Paris"));
        let sampled = json!({"role": "assistant", "content": [{"type": "text", "text": "Lyon"}], "model": "m"});
        assert_eq!(sampled_text(&sampled).as_deref(), Some("Lyon"));
        assert_eq!(root_uris(&json!({"roots": [{"uri": "file:///a"}, {"name": "x"}]})), vec!["file:///a"]);
    }

    #[test]
    fn input_requests_serialize_with_their_method() {
        let ask = Ask::elicit("Name?", json!({"type": "object", "properties": {"name": {"type": "string"}}}));
        let value = ask.input_request().ok().and_then(|r| serde_json::to_value(r).ok());
        assert_eq!(value.as_ref().and_then(|v| v.get("method")), Some(&json!("elicitation/create")));
        let value = Ask::Roots.input_request().ok().and_then(|r| serde_json::to_value(r).ok());
        assert_eq!(value.as_ref().and_then(|v| v.get("method")), Some(&json!("roots/list")));
    }
}
