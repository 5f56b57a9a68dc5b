//! The MCP side of the bridge: the contract's [`Catalog`] over the upstream MCP servers, so that
//! a face of another protocol (the A2A face's `tools` agents) can call their tools. It applies
//! the MCP face's own checks — the tool is offered and its pins are approved — and one the MCP
//! face leaves to the upstream: the arguments must match the tool's pinned input schema before
//! anything is recorded. Results are read from the stored `CallToolResult` (mapping table in
//! this crate's README).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};
use switchyard_contract::{
    Catalog, Content, EffectClass, Error, Ingress, IngressKey, Invocation, InvocationState, NeedsInput, Operation,
    Part, Principal, Submission,
};

use crate::catalog::{self, ToolEntry};
use crate::upstream::ToolRequest;

/// The upstream MCP servers' tools, for faces of other protocols.
#[derive(Debug)]
pub struct McpCatalog {
    catalog: Arc<catalog::Catalog>,
    /// Each upstream's configured effect classes (an unnamed tool is a `write`).
    effects: HashMap<String, BTreeMap<String, EffectClass>>,
    /// Compiled input schemas by the tool's schema pin: a message is checked when it arrives
    /// and again when its run calls the tool, and a schema compiles once.
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// At most this many compiled schemas are kept (then the cache starts over).
const MAX_VALIDATORS: usize = 1024;

impl McpCatalog {
    pub(crate) fn new(catalog: Arc<catalog::Catalog>, effects: HashMap<String, BTreeMap<String, EffectClass>>) -> Self {
        Self { catalog, effects, validators: Mutex::new(HashMap::new()) }
    }

    /// The compiled input schema of `entry`.
    fn validator(&self, entry: &ToolEntry) -> Result<Arc<jsonschema::Validator>, Error> {
        if let Some(v) = self.validators.lock().ok().and_then(|m| m.get(&entry.digest).cloned()) {
            return Ok(v);
        }
        let schema = Value::Object(entry.tool.input_schema.as_ref().clone());
        let what = format!("the input schema of tool `{}`", entry.tool.name);
        let compiled = Arc::new(compile(&schema, &what)?);
        if let Ok(mut m) = self.validators.lock() {
            if m.len() >= MAX_VALIDATORS {
                m.clear();
            }
            m.insert(entry.digest.clone(), compiled.clone());
        }
        Ok(compiled)
    }

    fn tools(&self, upstream: &str) -> Vec<ToolEntry> {
        self.catalog.offers(|u| u == upstream).into_iter().flat_map(|o| o.tools).collect()
    }

    fn effect(&self, upstream: &str, tool: &str) -> EffectClass {
        self.effects.get(upstream).and_then(|m| m.get(tool)).copied().unwrap_or(EffectClass::Write)
    }
}

#[async_trait::async_trait]
impl Catalog for McpCatalog {
    fn operations(&self, upstream: &str) -> Vec<Operation> {
        self.tools(upstream)
            .into_iter()
            .filter(|t| t.approved)
            .map(|t| Operation {
                upstream: t.upstream.clone(),
                name: t.tool.name.to_string(),
                title: t.tool.title.clone(),
                description: t.tool.description.as_ref().map(ToString::to_string),
                input_schema: Value::Object(t.tool.input_schema.as_ref().clone()),
                output_schema: t.tool.output_schema.as_ref().map(|s| Value::Object(s.as_ref().clone())),
                effect: self.effect(upstream, &t.tool.name),
            })
            .collect()
    }

    /// The caller's key is the ingress key itself (added by the caller): an MCP call has no
    /// other downstream identity.
    async fn prepare(
        &self,
        principal: &Principal,
        upstream: &str,
        operation: &str,
        arguments: Map<String, Value>,
        _key: Option<&IngressKey>,
    ) -> Result<Submission, Error> {
        let entry = self
            .catalog
            .upstream_tool(upstream, operation)
            .ok_or_else(|| Error::not_found(format!("upstream `{upstream}` offers no tool `{operation}`")))?;
        if !entry.approved {
            return Err(Error::invalid_input(format!(
                "tool `{operation}` of `{upstream}` is withheld: its definition changed since it was approved; an \
                 operator must review and run `switchyard upstreams approve {upstream} --tool {operation}`"
            )));
        }
        let validator = self.validator(&entry)?;
        matches(&validator, &arguments, &format!("the input schema of tool `{operation}`"))?;
        let request = ToolRequest {
            tool: operation.to_string(),
            arguments: Some(arguments),
            input_responses: None,
            request_state: None,
            continues: None,
        };
        submission(principal, upstream, &request)
    }

    /// The next MRTR round: the previous round's tool and arguments, its `requestState` passed
    /// back verbatim, and the answer as an accepted elicitation under the round's request key.
    async fn prepare_answer(
        &self,
        principal: &Principal,
        previous: &Invocation,
        answer: Map<String, Value>,
    ) -> Result<Submission, Error> {
        let InvocationState::Succeeded { result, .. } = &previous.state else {
            return Err(Error::conflict("the call did not ask for input"));
        };
        let requests = result.get("inputRequests").and_then(Value::as_object);
        let asked_input = result.get("resultType").and_then(Value::as_str) == Some("input_required");
        let keys: Vec<(&String, &Value)> = match requests {
            Some(m) if asked_input && !m.is_empty() => m.iter().collect(),
            _ => return Err(Error::conflict("the call did not ask for input")),
        };
        let [(key, asked)] = keys.as_slice() else {
            return Err(Error::invalid_input("the tool asked several questions at once; the bridge answers one"));
        };
        if let Some(schema) = asked.get("params").and_then(|p| p.get("requestedSchema")) {
            matches(&compile(schema, "the requested schema")?, &answer, "the requested schema")?;
        }
        let prev: ToolRequest = serde_json::from_value(previous.request.clone())
            .map_err(|e| Error::internal(format!("the previous round is not a tool call: {e}")))?;
        let mut responses = rmcp::model::InputResponses::new();
        responses.insert((*key).clone(), serde_json::json!({"action": "accept", "content": answer}));
        let request = ToolRequest {
            tool: prev.tool,
            arguments: prev.arguments,
            input_responses: Some(responses),
            request_state: result.get("requestState").and_then(Value::as_str).map(str::to_string),
            continues: Some(previous.id.to_string()),
        };
        submission(principal, &previous.target.upstream, &request)
    }

    fn content(&self, _upstream: &str, result: &Value) -> Result<Content, Error> {
        content_of(result)
    }
}

/// At most this many schema errors are named in a refusal.
const MAX_REPORTED: usize = 5;

fn submission(principal: &Principal, upstream: &str, request: &ToolRequest) -> Result<Submission, Error> {
    Ok(Submission {
        principal: principal.clone(),
        upstream: upstream.to_string(),
        operation: request.tool.clone(),
        request: serde_json::to_value(request).map_err(|e| Error::internal(e.to_string()))?,
        ingress_key: None,
        // The MCP face's checks were applied here: the call enters as the MCP face's own.
        ingress: Ingress::Mcp,
        caller: None,
        context: None,
        grant: None,
        parent: None,
        // Made under the span of the run that calls the tool (the `tools` agent's).
        trace: switchyard_contract::trace::outgoing(),
    })
}

/// `schema` compiled (`what` names it in a refusal).
fn compile(schema: &Value, what: &str) -> Result<jsonschema::Validator, Error> {
    jsonschema::validator_for(schema).map_err(|e| Error::invalid_input(format!("{what} cannot be used: {e}")))
}

/// Checks `value` against `validator` (`what` names the schema in the refusal).
fn matches(validator: &jsonschema::Validator, value: &Map<String, Value>, what: &str) -> Result<(), Error> {
    let instance = Value::Object(value.clone());
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .take(MAX_REPORTED)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_input(format!("the value does not match {what}: {}", errors.join("; "))))
}

/// A stored tools/call result as content: a `CallToolResult`, or an MRTR `input_required`
/// round (the upstream asks for input first).
pub fn content_of(result: &Value) -> Result<Content, Error> {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Ok(asked(result));
    }
    let r: CallToolResult = serde_json::from_value(result.clone())
        .map_err(|e| Error::internal(format!("the stored result is not a tool result: {e}")))?;
    let b64 = |data: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| Error::internal(format!("a tool result's base64 content is malformed: {e}")))
    };
    let mut parts = Vec::with_capacity(r.content.len());
    for block in &r.content {
        parts.push(match block {
            ContentBlock::Text(t) => Part::Text { text: t.text.clone() },
            ContentBlock::Image(i) => {
                Part::Bytes { data: b64(&i.data)?, media_type: Some(i.mime_type.clone()), name: None }
            }
            ContentBlock::Audio(a) => {
                Part::Bytes { data: b64(&a.data)?, media_type: Some(a.mime_type.clone()), name: None }
            }
            ContentBlock::Resource(e) => match &e.resource {
                ResourceContents::TextResourceContents { uri, mime_type, text, .. } => Part::Bytes {
                    data: text.clone().into_bytes(),
                    media_type: mime_type.clone().or_else(|| Some("text/plain".into())),
                    name: Some(uri.clone()),
                },
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                    Part::Bytes { data: b64(blob)?, media_type: mime_type.clone(), name: Some(uri.clone()) }
                }
                other => Part::Data { data: serde_json::to_value(other).map_err(|e| Error::internal(e.to_string()))? },
            },
            ContentBlock::ResourceLink(l) => Part::Link {
                uri: l.uri.clone(),
                media_type: l.mime_type.clone(),
                name: Some(l.name.clone()),
                description: l.description.clone(),
            },
            other => Part::Data { data: serde_json::to_value(other).map_err(|e| Error::internal(e.to_string()))? },
        });
    }
    Ok(Content {
        parts,
        structured: r.structured_content.filter(|v| !v.is_null()),
        is_error: r.is_error == Some(true),
        ..Content::default()
    })
}

/// An `input_required` round: an elicitation is a request for input (its message and requested
/// schema); a request for a model completion (`sampling/createMessage`) or the client's roots
/// has no counterpart in a caller of another protocol, so the round is a tool error saying so.
fn asked(result: &Value) -> Content {
    let requests: Vec<&Value> =
        result.get("inputRequests").and_then(Value::as_object).map(|m| m.values().collect()).unwrap_or_default();
    let method = |r: &Value| r.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(other) = requests.iter().map(|r| method(r)).find(|m| m != "elicitation/create") {
        let what = match other.as_str() {
            "sampling/createMessage" => "a model completion (MCP sampling)",
            "roots/list" => "its roots (MCP roots)",
            _ => "something",
        };
        let text = format!(
            "the tool asks its caller for {what} (`{other}`), which a caller of another protocol cannot provide \
             through the bridge"
        );
        return Content { parts: vec![Part::Text { text }], is_error: true, ..Content::default() };
    }
    let params = requests.first().and_then(|r| r.get("params"));
    let message = params.and_then(|p| p.get("message")).and_then(Value::as_str).unwrap_or("the tool needs input");
    let schema = params.and_then(|p| p.get("requestedSchema")).cloned();
    Content { needs_input: Some(NeedsInput { message: message.to_string(), schema }), ..Content::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_block_kind_maps_to_a_neutral_part() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGkh", "mimeType": "image/png"},
                {"type": "audio", "data": "AAE=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "abc"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AQID"}},
                {"type": "resource_link", "uri": "https://x.test/r", "name": "r", "mimeType": "text/csv"},
            ],
            "structuredContent": {"n": 1},
        });
        let c = content_of(&result).unwrap();
        assert_eq!(c.text(), "hello");
        assert_eq!(c.structured, Some(json!({"n": 1})));
        assert!(!c.is_error);
        assert!(
            matches!(&c.parts[1], Part::Bytes { data, media_type: Some(m), .. } if data == b"hi!" && m == "image/png")
        );
        assert!(matches!(&c.parts[2], Part::Bytes { data, .. } if data == &[0, 1]));
        assert!(
            matches!(&c.parts[3], Part::Bytes { data, name: Some(n), .. } if data == b"abc" && n == "file:///a.txt")
        );
        assert!(matches!(&c.parts[4], Part::Bytes { data, .. } if data == &[1, 2, 3]));
        assert!(
            matches!(&c.parts[5], Part::Link { uri, media_type: Some(m), .. } if uri == "https://x.test/r" && m == "text/csv")
        );
    }

    #[test]
    fn errors_and_input_rounds_are_told_apart() {
        let failed = content_of(&json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert!(failed.is_ok_and(|c| c.is_error && c.text() == "no"));
        let asked = json!({"resultType": "input_required", "inputRequests": {"k": {"method": "elicitation/create",
            "params": {"message": "Which city?", "requestedSchema": {"type": "object"}}}}, "requestState": "s"});
        let c = content_of(&asked).unwrap();
        assert_eq!(
            c.needs_input.map(|n| (n.message, n.schema)),
            Some(("Which city?".into(), Some(json!({"type": "object"}))))
        );
        assert!(content_of(&json!({"content": [{"type": "image", "data": "%%", "mimeType": "image/png"}]})).is_err());
        let sample = json!({"resultType": "input_required", "inputRequests": {"s": {"method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 5}}}, "requestState": "s"});
        let c = content_of(&sample).unwrap();
        assert!(c.is_error && c.needs_input.is_none() && c.text().contains("MCP sampling"), "{c:?}");
    }
}
