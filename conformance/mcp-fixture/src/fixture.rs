//! The [`ServerHandler`]: conformance fixtures for both protocol eras.
//!
//! Era detection: [`is_modern`] — the request's own `_meta` protocol version (2026-07-28 is
//! stateless and carries it on every request) or, failing that, the version the legacy session
//! negotiated at `initialize`.

// Logging, sampling and roots are deprecated by SEP-2577 but still part of both eras' fixtures.
#![allow(deprecated)]

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    AudioContent, CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InputRequiredResult, InputResponses, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, PromptMessage, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, RequestStateCodec, ResourceContents, Role, SealOptions,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::catalog::{self, CACHE_TTL_MS, PNG_BASE64, WAV_BASE64};
use crate::mrtr::{self, Answer, Ask};

/// Built-in HMAC key for `requestState`; override with `FIXTURE_REQUEST_STATE_KEY`.
const DEFAULT_REQUEST_STATE_KEY: &[u8] = b"switchyard-mcp-fixture/request-state/test-key-0001";
/// Lifetime of a sealed `requestState`.
const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

/// State shared by every handler instance of one process.
struct Shared {
    codec: RequestStateCodec,
    listeners: Mutex<HashMap<u64, SubscriptionSink>>,
    next_listener: AtomicU64,
}

/// One handler instance. The HTTP transport creates one per stateless request and one per legacy
/// session (via [`Fixture::clone`]); `session_*` fields are per instance, so a legacy session's
/// log level and resource subscriptions are its own.
#[derive(Clone)]
pub struct Fixture {
    shared: Arc<Shared>,
    session_log_level: Arc<Mutex<LoggingLevel>>,
    session_subscriptions: Arc<Mutex<BTreeSet<String>>>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture").finish_non_exhaustive()
    }
}

/// Whether this request speaks 2026-07-28 (stateless, MRTR) rather than a legacy session.
pub fn is_modern(cx: &RequestContext<RoleServer>) -> bool {
    cx.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::text(s.into())
}

fn complete(blocks: Vec<ContentBlock>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(blocks).into())
}

fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn tampered() -> McpError {
    // One client-facing error for every opening failure (bad MAC, expiry, other request).
    McpError::invalid_params("requestState failed integrity verification", None)
}

impl Fixture {
    pub fn from_env() -> anyhow::Result<Self> {
        let key = std::env::var("FIXTURE_REQUEST_STATE_KEY")
            .map(String::into_bytes)
            .unwrap_or_else(|_| DEFAULT_REQUEST_STATE_KEY.to_vec());
        let codec = RequestStateCodec::try_new(key)
            .map_err(|e| anyhow::anyhow!("FIXTURE_REQUEST_STATE_KEY: {e} (needs at least 32 bytes)"))?;
        Ok(Self {
            shared: Arc::new(Shared { codec, listeners: Mutex::new(HashMap::new()), next_listener: AtomicU64::new(0) }),
            session_log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
            session_subscriptions: Arc::new(Mutex::new(BTreeSet::new())),
        })
    }

    /// A handler for a new session (or stateless request): shared state, fresh session state.
    pub fn for_session(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            session_log_level: Arc::new(Mutex::new(LoggingLevel::Debug)),
            session_subscriptions: Arc::new(Mutex::new(BTreeSet::new())),
        }
    }

    // ----- request state ---------------------------------------------------------------------

    /// Associated data binding a sealed state to this exact request (method, name, arguments).
    fn binding(method: &str, name: &str, arguments: Option<&JsonObject>) -> Vec<u8> {
        let args = arguments.map(|a| mrtr::canonical_json(&Value::Object(a.clone()))).unwrap_or_default();
        format!("{method}\n{name}\n{args}").into_bytes()
    }

    fn seal(&self, binding: &[u8], state: &Value) -> Result<String, McpError> {
        let options = SealOptions::new().associated_data(binding).ttl(REQUEST_STATE_TTL);
        self.shared.codec.seal_json_with(state, &options).map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    /// Opens `sealed` (if any). `Ok(None)` = no state; a bad state is a `-32602` error.
    fn open(&self, binding: &[u8], sealed: Option<&str>) -> Result<Option<Value>, McpError> {
        match sealed {
            None => Ok(None),
            Some(sealed) => self.shared.codec.open_json_with(sealed, binding).map(Some).map_err(|_| tampered()),
        }
    }

    // ----- asking the client -----------------------------------------------------------------

    /// Ask one question in whichever way the request's era allows (MRTR or server→client).
    async fn ask(
        &self,
        cx: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        key: &str,
        ask: Ask,
    ) -> Result<Answer, McpError> {
        if !is_modern(cx) {
            return Ok(ask.ask_peer(&cx.peer).await);
        }
        if let Some(answer) = mrtr::response(responses, key) {
            return Ok(Answer::Got(Value::Object(answer.clone())));
        }
        let declared = cx.client_capabilities().unwrap_or_default();
        if let Some(required) = ask.missing_capability(&declared) {
            return Err(McpError::missing_required_client_capability(required));
        }
        Ok(Answer::Need(mrtr::requests(&[(key, &ask)])?))
    }

    /// Ask, then turn the answer into a tool result with `render`.
    async fn ask_tool(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
        key: &str,
        ask: Ask,
        render: impl FnOnce(&Value) -> String,
    ) -> Result<CallToolResponse, McpError> {
        match self.ask(cx, request.input_responses.as_ref(), key, ask).await? {
            Answer::Got(value) => complete(vec![text(render(&value))]),
            Answer::Need(requests) => Ok(InputRequiredResult::from_input_requests(requests).into()),
            Answer::Failed(error) => {
                Ok(CallToolResult::error(vec![text(format!("client request failed: {error}"))]).into())
            }
        }
    }

    // ----- notifications ---------------------------------------------------------------------

    async fn log(&self, cx: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        let threshold = if is_modern(cx) {
            // 2026-07-28: log only when this request asked for it (`_meta…/logLevel`).
            match cx.meta.log_level() {
                Some(level) => level,
                None => return,
            }
        } else {
            *self.session_log_level.lock().await
        };
        if level_rank(level) < level_rank(threshold) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, json!(message)).with_logger("switchyard-mcp-fixture");
        if let Err(e) = cx.peer.notify_logging_message(param).await {
            tracing::debug!(error = %e, "logging notification not delivered");
        }
    }

    async fn progress(&self, cx: &RequestContext<RoleServer>, progress: f64, total: f64, message: String) {
        let Some(token) = cx.meta.get_progress_token() else { return };
        let param = ProgressNotificationParam::new(token, progress).with_total(total).with_message(message);
        if let Err(e) = cx.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not delivered");
        }
    }

    async fn listeners(&self) -> Vec<SubscriptionSink> {
        self.shared.listeners.lock().await.values().cloned().collect()
    }

    // ----- tools -----------------------------------------------------------------------------

    async fn conformance_tool(
        &self,
        request: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let args = request.arguments.clone().unwrap_or_default();
        let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(match request.name.as_ref() {
            "test_simple_text" => complete(vec![text("This is a simple text response for testing.")]),
            "test_image_content" => complete(vec![ContentBlock::image(PNG_BASE64, "image/png")]),
            "test_audio_content" => complete(vec![ContentBlock::Audio(AudioContent::new(WAV_BASE64, "audio/wav"))]),
            "test_embedded_resource" => {
                complete(vec![ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: "test://embedded-resource".into(),
                    mime_type: Some("text/plain".into()),
                    text: "This is an embedded resource content.".into(),
                    meta: None,
                })])
            }
            "test_multiple_content_types" => complete(vec![
                text("Multiple content types test:"),
                ContentBlock::image(PNG_BASE64, "image/png"),
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: "test://mixed-content-resource".into(),
                    mime_type: Some("application/json".into()),
                    text: r#"{"test":"data","value":123}"#.into(),
                    meta: None,
                }),
            ]),
            "test_error_handling" => {
                Ok(CallToolResult::error(vec![text("This tool intentionally returns an error for testing")]).into())
            }
            "test_tool_with_progress" => {
                for (step, label) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")] {
                    self.progress(cx, step, 100.0, label.into()).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                complete(vec![text("Progress test completed")])
            }
            "test_tool_with_logging" => {
                for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                    self.log(cx, LoggingLevel::Info, message).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                complete(vec![text("Logging test completed")])
            }
            "test_logging_tool" => {
                self.log(cx, LoggingLevel::Info, "logLevel was requested").await;
                complete(vec![text("Logging tool completed")])
            }
            "test_sampling" => {
                let prompt = arg("prompt").unwrap_or_else(|| "Hello".into());
                self.ask_tool(cx, request, "sampling", Ask::sample(prompt), |v| {
                    format!("LLM response: {}", mrtr::sampled_text(v).unwrap_or_else(|| "No text response".into()))
                })
                .await
            }
            "test_elicitation" => {
                let message = arg("message").unwrap_or_else(|| "Please provide your information".into());
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "User's response" },
                        "email": { "type": "string", "description": "User's email address" }
                    },
                    "required": ["username", "email"]
                });
                self.ask_tool(cx, request, "elicitation", Ask::elicit(message, schema), |v| {
                    let content = v.get("content").cloned().unwrap_or(Value::Null);
                    format!("User response: action={}, content={content}", mrtr::elicit_action(v))
                })
                .await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "User's name", "default": "John Doe" },
                        "age": { "type": "integer", "description": "User's age", "default": 30 },
                        "score": { "type": "number", "description": "User's score", "default": 95.5 },
                        "status": {
                            "type": "string",
                            "description": "User's status",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": { "type": "boolean", "description": "Whether user is verified", "default": true }
                    }
                });
                let ask = Ask::elicit("Please provide values (all have defaults)", schema);
                self.ask_tool(cx, request, "defaults", ask, |v| {
                    let content = v.get("content").cloned().unwrap_or(Value::Null);
                    format!("Elicitation completed: action={}, content={content}", mrtr::elicit_action(v))
                })
                .await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                        "titledSingle": {
                            "type": "string",
                            "oneOf": [
                                { "const": "value1", "title": "First Option" },
                                { "const": "value2", "title": "Second Option" },
                                { "const": "value3", "title": "Third Option" }
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                        },
                        "titledMulti": {
                            "type": "array",
                            "items": {
                                "anyOf": [
                                    { "const": "value1", "title": "First Choice" },
                                    { "const": "value2", "title": "Second Choice" },
                                    { "const": "value3", "title": "Third Choice" }
                                ]
                            }
                        }
                    }
                });
                self.ask_tool(cx, request, "enums", Ask::elicit("Test enum schema improvements", schema), |v| {
                    format!("Enum elicitation completed: action={}", mrtr::elicit_action(v))
                })
                .await
            }
            "test_streaming_elicitation" => {
                let schema = json!({
                    "type": "object",
                    "properties": { "value": { "type": "string" } },
                    "required": ["value"]
                });
                self.ask_tool(cx, request, "streaming_elicitation", Ask::elicit("Provide a value", schema), |v| {
                    format!("Received value: {}", mrtr::elicited_string(v, "value").unwrap_or_default())
                })
                .await
            }
            "test_trigger_tool_change" => {
                for sink in self.listeners().await {
                    let _ = sink.notify_tool_list_changed().await;
                }
                if !is_modern(cx) {
                    let _ = cx.peer.notify_tool_list_changed().await;
                }
                complete(vec![text("Tool list change triggered")])
            }
            "test_trigger_prompt_change" => {
                for sink in self.listeners().await {
                    let _ = sink.notify_prompt_list_changed().await;
                }
                if !is_modern(cx) {
                    let _ = cx.peer.notify_prompt_list_changed().await;
                }
                complete(vec![text("Prompt list change triggered")])
            }
            "test_trigger_resource_update" => {
                for sink in self.listeners().await {
                    let _ = sink.notify_resource_updated(catalog::WATCHED_URI).await;
                }
                if !is_modern(cx) && self.session_subscriptions.lock().await.contains(catalog::WATCHED_URI) {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(catalog::WATCHED_URI);
                    let _ = cx.peer.notify_resource_updated(param).await;
                }
                complete(vec![text("Resource update triggered")])
            }
            "test_missing_capability" => {
                let declared = cx.client_capabilities().unwrap_or_default();
                if declared.sampling.is_none() {
                    return Some(Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_sampling().build(),
                    )));
                }
                complete(vec![text("Required capability declared")])
            }
            "test_reconnection" => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                complete(vec![text("Reconnection test completed")])
            }
            "json_schema_2020_12_tool" => {
                complete(vec![text(format!("Hello, {}!", arg("name").unwrap_or_else(|| "world".into())))])
            }
            catalog::X_MCP_HEADER_TOOL => match arg("value") {
                Some(value) => complete(vec![text(value)]),
                None => Err(McpError::invalid_params("value must be a string", None)),
            },
            _ => return None,
        })
    }

    /// SEP-2322 tools (`test_input_required_result_*`), 2026-07-28 only.
    async fn mrtr_tool(
        &self,
        request: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let name = request.name.as_ref();
        if !name.starts_with("test_input_required_result_") {
            return None;
        }
        if !is_modern(cx) {
            return Some(Err(McpError::invalid_request(
                format!("{name} needs protocol 2026-07-28 (input_required results)"),
                None,
            )));
        }
        Some(self.mrtr_tool_modern(request, cx).await)
    }

    async fn mrtr_tool_modern(
        &self,
        request: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let responses = request.input_responses.as_ref();
        let binding = Self::binding("tools/call", name, request.arguments.as_ref());
        let ask_name = || {
            Ask::elicit(
                "What is your name?",
                json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
            )
        };
        let greeting = || Ask::Sample { prompt: "Generate a greeting".into(), max_tokens: 50 };
        match name {
            "test_input_required_result_elicitation" => {
                self.ask_tool(cx, request, "user_name", ask_name(), |v| {
                    let name = v.get("content").and_then(|c| c.get("name")).and_then(Value::as_str);
                    format!("Hello, {}!", name.unwrap_or("friend"))
                })
                .await
            }
            "test_input_required_result_sampling" => {
                self.ask_tool(cx, request, "capital_question", Ask::sample("What is the capital of France?"), |v| {
                    format!("Sampling response: {}", mrtr::sampled_text(v).unwrap_or_else(|| "(no text)".into()))
                })
                .await
            }
            "test_input_required_result_list_roots" => {
                self.ask_tool(cx, request, "client_roots", Ask::Roots, |v| {
                    format!("Client roots: [{}]", mrtr::root_uris(v).join(", "))
                })
                .await
            }
            "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
                let state = self.open(&binding, request.request_state.as_deref())?;
                let confirm = Ask::elicit(
                    "Please confirm",
                    json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] }),
                );
                if state.is_some() && mrtr::response(responses, "confirm").is_some() {
                    return complete(vec![text("Confirmed: state-ok")]);
                }
                let sealed = self.seal(&binding, &json!({ "stage": "confirm" }))?;
                Ok(InputRequiredResult::new(Some(mrtr::requests(&[("confirm", &confirm)])?), Some(sealed)).into())
            }
            "test_input_required_result_multiple_inputs" => {
                let state = self.open(&binding, request.request_state.as_deref())?;
                let keys = ["user_name", "greeting", "client_roots"];
                if state.is_some() && keys.iter().all(|k| mrtr::response(responses, k).is_some()) {
                    return complete(vec![text("All inputs received")]);
                }
                let (name_q, greeting_q) = (ask_name(), greeting());
                let requests = mrtr::requests(&[
                    ("user_name", &name_q),
                    ("greeting", &greeting_q),
                    ("client_roots", &Ask::Roots),
                ])?;
                let sealed = self.seal(&binding, &json!({ "stage": "gather" }))?;
                Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
            }
            "test_input_required_result_multi_round" => {
                let round = self
                    .open(&binding, request.request_state.as_deref())?
                    .and_then(|s| s.get("round").and_then(Value::as_u64))
                    .unwrap_or(0);
                // Advance only when the answer to the current round's question is present.
                let round = match round {
                    1 if mrtr::response(responses, "step1").is_some() => 2,
                    2 if mrtr::response(responses, "step2").is_some() => 3,
                    0 => 1,
                    same => same,
                };
                let (key, question) = match round {
                    1 => (
                        "step1",
                        Ask::elicit(
                            "Step 1: What is your name?",
                            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
                        ),
                    ),
                    2 => (
                        "step2",
                        Ask::elicit(
                            "Step 2: What is your favorite color?",
                            json!({ "type": "object", "properties": { "color": { "type": "string" } }, "required": ["color"] }),
                        ),
                    ),
                    _ => return complete(vec![text("Multi-round flow complete")]),
                };
                let sealed = self.seal(&binding, &json!({ "round": round }))?;
                Ok(InputRequiredResult::new(Some(mrtr::requests(&[(key, &question)])?), Some(sealed)).into())
            }
            "test_input_required_result_capabilities" => {
                if responses.is_some_and(|r| !r.is_empty()) {
                    return complete(vec![text("Capability-aware flow complete")]);
                }
                let declared = cx.client_capabilities().unwrap_or_default();
                let (name_q, greeting_q) = (ask_name(), greeting());
                let candidates = [("user_name", &name_q), ("greeting", &greeting_q), ("client_roots", &Ask::Roots)];
                let wanted: Vec<_> =
                    candidates.into_iter().filter(|(_, ask)| ask.missing_capability(&declared).is_none()).collect();
                if wanted.is_empty() {
                    return complete(vec![text("The request declared no capability to ask with")]);
                }
                Ok(InputRequiredResult::from_input_requests(mrtr::requests(&wanted)?).into())
            }
            other => Err(McpError::invalid_params(format!("unknown tool: {other}"), None)),
        }
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("switchyard-mcp-fixture", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Switchyard MCP test fixture: conformance fixtures plus echo/count_write/slow/drift_tool/ask_name.",
            )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        catalog::find_tool(name)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(catalog::tools())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(result) = self.conformance_tool(&request, &cx).await {
            return result;
        }
        if let Some(result) = self.mrtr_tool(&request, &cx).await {
            return result;
        }
        if let Some(result) = crate::extra::call(self, &request, &cx).await {
            return result;
        }
        Err(McpError::invalid_params(format!("unknown tool: {}", request.name), None))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(catalog::resources())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(catalog::resource_templates())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.as_str();
        let contents = match uri {
            catalog::STATIC_TEXT_URI => ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some("text/plain".into()),
                text: "This is the content of the static text resource.".into(),
                meta: None,
            },
            catalog::STATIC_BINARY_URI => ResourceContents::BlobResourceContents {
                uri: uri.into(),
                mime_type: Some("image/png".into()),
                blob: PNG_BASE64.into(),
                meta: None,
            },
            catalog::WATCHED_URI => ResourceContents::TextResourceContents {
                uri: uri.into(),
                mime_type: Some("text/plain".into()),
                text: "Watched resource content.".into(),
                meta: None,
            },
            _ => match catalog::template_id(uri) {
                Some(id) => ResourceContents::TextResourceContents {
                    uri: uri.into(),
                    mime_type: Some("application/json".into()),
                    text: json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
                    meta: None,
                },
                // rmcp turns -32002 into -32602 for 2026-07-28 requests and keeps it for legacy.
                None => {
                    return Err(McpError::resource_not_found(
                        format!("Resource not found: {uri}"),
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents])
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public)
            .into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session_subscriptions.lock().await.insert(request.uri.to_string());
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session_subscriptions.lock().await.remove(request.uri.as_str());
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let id = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
        self.shared.listeners.lock().await.insert(id, context.sink().clone());
        context.cancelled().await;
        self.shared.listeners.lock().await.remove(&id);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(catalog::prompts())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = request.arguments.clone().unwrap_or_default();
        let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let result = match request.name.as_str() {
            "test_simple_prompt" => {
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "This is a simple prompt for testing.")])
                    .with_description("A simple prompt")
            }
            "test_prompt_with_arguments" => GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2")),
            )])
            .with_description("A prompt with arguments"),
            "test_prompt_with_embedded_resource" => {
                let uri = Some(arg("resourceUri"))
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| "test://example-resource".into());
                GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(ResourceContents::TextResourceContents {
                            uri,
                            mime_type: Some("text/plain".into()),
                            text: "Embedded resource content for testing.".into(),
                            meta: None,
                        }),
                    ),
                    PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
                ])
                .with_description("A prompt with an embedded resource")
            }
            "test_prompt_with_image" => GetPromptResult::new(vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG_BASE64, "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ])
            .with_description("A prompt with an image"),
            "test_input_required_result_prompt" => {
                if !is_modern(&cx) {
                    return Err(McpError::invalid_request("this prompt needs protocol 2026-07-28", None));
                }
                let ask = Ask::elicit(
                    "What context should the prompt use?",
                    json!({ "type": "object", "properties": { "context": { "type": "string" } }, "required": ["context"] }),
                );
                return match self.ask(&cx, request.input_responses.as_ref(), "user_context", ask).await? {
                    Answer::Got(v) => {
                        let context = mrtr::elicited_string(&v, "context").unwrap_or_else(|| "(none)".into());
                        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                            Role::User,
                            format!("Prompt with elicited context: {context}"),
                        )])
                        .with_description("A prompt built from elicited context")
                        .into())
                    }
                    Answer::Need(requests) => Ok(InputRequiredResult::from_input_requests(requests).into()),
                    Answer::Failed(e) => Err(McpError::internal_error(e, None)),
                };
            }
            other => return Err(McpError::invalid_params(format!("unknown prompt: {other}"), None)),
        };
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Resource(_), "id") => &["1", "2", "3", "123"],
            (Reference::Prompt(_), "arg1" | "arg2") => &["paris", "park", "party"],
            (Reference::Prompt(_), "resourceUri") => &["test://example-resource", "test://static-text"],
            _ => &[],
        };
        let prefix = request.argument.value.as_str();
        let values = candidates.iter().filter(|v| v.starts_with(prefix)).map(|v| (*v).to_owned()).collect();
        let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn set_level(&self, request: SetLevelRequestParams, _cx: RequestContext<RoleServer>) -> Result<(), McpError> {
        *self.session_log_level.lock().await = request.level;
        Ok(())
    }
}

/// Exposed for [`crate::extra`].
impl Fixture {
    pub(crate) async fn ask_for(
        &self,
        cx: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
        key: &str,
        ask: Ask,
        render: impl FnOnce(&Value) -> String,
    ) -> Result<CallToolResponse, McpError> {
        self.ask_tool(cx, request, key, ask, render).await
    }

    pub(crate) async fn send_progress(
        &self,
        cx: &RequestContext<RoleServer>,
        progress: f64,
        total: f64,
        message: String,
    ) {
        self.progress(cx, progress, total, message).await;
    }
}
