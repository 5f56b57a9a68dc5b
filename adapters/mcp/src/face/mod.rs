//! The MCP server face: one [`McpFace`] per virtual server, behind rmcp's Streamable HTTP service
//! (both eras on one URL). Lists come from the [`Catalog`]; every `tools/call` is a durable
//! invocation of the engine; prompts, resources and completion pass through unjournaled.
//!
//! **MRTR.** When an upstream answers `input_required`, a 2026-07-28 client gets the input
//! requests with the gateway's own `requestState`: an HMAC-sealed record naming the previous
//! invocation, the upstream's state, the caller and the tool, with an expiry — so any replica can
//! take the retry and a tampered state is refused. Each round is its own invocation, linked by
//! `continues`. A legacy (initialize) client cannot take `input_required`, so the gateway asks it
//! through server→client requests and answers the upstream itself.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ClientRequest,
    CompleteRequest, CompleteRequestParams, CompleteResult, ContentBlock, ErrorCode, ErrorData, GetPromptRequest,
    GetPromptRequestParams, GetPromptResponse, Implementation, InputRequiredResult, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse, Reference,
    ServerCapabilities, ServerInfo, ServerResult, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, GetTaskParams, GetTaskResult, LoggingLevel, RequestStateCodec,
    TASKS_EXTENSION_ID, UpdateTaskParams,
};
use rmcp::model::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, SKILLS_EXTENSION_ID, SkillsCapability,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};
use switchyard_contract::{
    CallContext, FailureCode, Ingress, IngressKey, InvocationId, InvocationState, Invocations, Passage, Principal,
    Submission,
};
use tracing::warn;

use crate::catalog::Catalog;
use crate::client::{Pool, request_meta};
use crate::config::{TaskSupport, VirtualServerConfig};
use crate::upstream::ToolRequest;
use relay::McpRelay;

mod bridged;
mod bridged_task;
mod call;
mod gone;
mod held;
mod mrtr;
mod relay;
mod served;
mod skills;
mod tasks;
pub use bridged::{A2A_META, Bridge};
use gone::{Cancels, pending_result};
use mrtr::Sealed;
use tasks::asks_input;

/// The `_meta` key a client sets to make a tools/call idempotent: a retry with the same key
/// (and the same arguments) attaches to the original invocation instead of calling again.
pub const IDEMPOTENCY_KEY: &str = "dev.switchyard/idempotencyKey";
/// The `_meta` key on every tools/call result naming the invocation that carried it.
pub const INVOCATION_META: &str = "dev.switchyard/invocation";

/// A call asks its client for input at most this many rounds (a legacy client asked directly, or a
/// legacy upstream's questions held for a 2026-07-28 client).
const MAX_ROUNDS: u32 = 10;

/// Everything the faces share.
pub struct Shared {
    pub engine: Arc<dyn Invocations>,
    pub catalog: Arc<Catalog>,
    pub pools: std::collections::HashMap<String, Arc<Pool>>,
    pub codec: RequestStateCodec,
    pub state_ttl: Duration,
    pub call_wait: Duration,
    /// With the Tasks extension: how long a call waits before it is answered with a task.
    pub task_after: Duration,
    pub task_poll_ms: u64,
    pub page_size: usize,
    /// The `kind = "a2a"` upstreams, and the other protocol's catalog that serves them.
    pub bridges: Vec<Bridge>,
    pub foreign: Option<Arc<dyn switchyard_contract::Catalog>>,
    /// Base of absolute links the face hands out (artifacts); unset: the request's `Host`.
    pub public_url: Option<String>,
    /// The request reached the gateway over TLS: links without `public_url` are `https://`.
    pub tls: bool,
    /// Signs the artifact links results hand out, for the caller they answer.
    pub artifact_links: Option<switchyard_contract::ArtifactLinks>,
    pub bridge_result_max_bytes: usize,
    /// 2026-07-28 calls whose legacy upstream waits for the client's answer.
    pub held: Arc<held::Held>,
    /// The local skill directories (`[[mcp.skills]]`).
    pub skills: Arc<crate::skills::LocalSkills>,
    /// A held call waits for its decision before it answers (a client that cannot come back
    /// for it: `switchyard stdio`), instead of answering at once that it is held.
    pub wait_for_approval: bool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("catalog", &self.catalog).finish_non_exhaustive()
    }
}

/// One virtual server, as one legacy session (or one stateless request) sees it.
#[derive(Clone, Debug)]
pub struct McpFace {
    shared: Arc<Shared>,
    server: Arc<VirtualServerConfig>,
    /// A legacy session's `logging/setLevel`; upstream log messages are asked for at this level.
    level: Arc<std::sync::Mutex<LoggingLevel>>,
    /// A legacy session's resource subscriptions; they end with the session.
    subscriptions: Arc<Subscriptions>,
    /// A session's detached calls and explicit cancellations.
    cancels: Arc<Cancels>,
}

/// Tasks relaying resource updates (URI → task), aborted when the session (the last clone of
/// its face) goes away.
#[derive(Debug, Default)]
struct Subscriptions(std::sync::Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>);

impl Subscriptions {
    fn insert(&self, uri: String, task: tokio::task::AbortHandle) {
        if let Ok(mut m) = self.0.lock()
            && let Some(old) = m.insert(uri, task)
        {
            old.abort();
        }
    }

    fn remove(&self, uri: &str) {
        if let Some(task) = self.0.lock().ok().and_then(|mut m| m.remove(uri)) {
            task.abort();
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        if let Ok(m) = self.0.lock() {
            for task in m.values() {
                task.abort();
            }
        }
    }
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

fn internal(message: impl Into<String>) -> ErrorData {
    ErrorData::internal_error(message.into(), None)
}

/// The authenticated caller, put into the HTTP request's extensions by the server's auth layer.
fn principal(ctx: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<Principal>())
        .cloned()
        .ok_or_else(|| internal("no authenticated caller on this request"))
}

/// Whether the request comes from a 2026-07-28 (stateless) client.
fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.meta.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

fn page<T: Clone>(items: &[T], cursor: Option<&str>, size: usize) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let start = match cursor {
        None | Some("") => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= items.len())
            .ok_or_else(|| invalid("cursor is invalid: pass back nextCursor unchanged"))?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

impl McpFace {
    pub fn new(shared: Arc<Shared>, server: VirtualServerConfig) -> Self {
        Self {
            shared,
            server: Arc::new(server),
            level: Arc::new(std::sync::Mutex::new(LoggingLevel::Info)),
            subscriptions: Arc::default(),
            cancels: Arc::default(),
        }
    }

    /// A copy with its own session state (rmcp makes one per legacy session).
    pub fn for_session(&self) -> Self {
        Self {
            level: Arc::new(std::sync::Mutex::new(LoggingLevel::Info)),
            subscriptions: Arc::default(),
            cancels: Arc::default(),
            ..self.clone()
        }
    }

    /// The gateway's identity as this virtual server.
    fn identity(&self) -> Implementation {
        let name = self.server.name.clone().unwrap_or_else(|| "switchyard".into());
        Implementation::new(name, env!("CARGO_PKG_VERSION"))
    }

    /// The client's era as [`served`] renders answers: the identity a 2026-07-28 result names,
    /// `None` for a legacy client.
    fn era(&self, ctx: &RequestContext<RoleServer>) -> Option<Implementation> {
        modern(ctx).then(|| self.identity())
    }

    /// A tools/call's relay: a 2026-07-28 client's also queues the upstream's questions.
    fn call_relay(&self, ctx: &RequestContext<RoleServer>) -> Arc<McpRelay> {
        self.relay_with(ctx, true)
    }

    fn relay(&self, ctx: &RequestContext<RoleServer>) -> Arc<McpRelay> {
        self.relay_with(ctx, false)
    }

    fn relay_with(&self, ctx: &RequestContext<RoleServer>, asks: bool) -> Arc<McpRelay> {
        let legacy = !modern(ctx);
        // A legacy session gets log messages at its `logging/setLevel` (default info); a modern
        // request only when its `_meta` asks.
        let log_level = if legacy { self.level.lock().ok().map(|l| *l) } else { ctx.meta.log_level() };
        let mut relay = McpRelay::new(
            ctx.peer.clone(),
            ctx.meta.get_progress_token(),
            legacy,
            ctx.client_capabilities(),
            log_level,
        );
        if asks && !legacy {
            relay.questions = Some(Arc::default());
        }
        Arc::new(relay)
    }

    fn includes(&self) -> impl Fn(&str) -> bool + '_ {
        |u: &str| self.server.includes(u)
    }

    /// The included upstream that listed `uri`, else one whose template matches it.
    fn resource_upstream(&self, uri: &str) -> Result<String, ErrorData> {
        self.shared.catalog.resource_upstream(uri, self.includes()).ok_or_else(|| resource_not_found(uri))
    }

    fn pool(&self, upstream: &str) -> Result<&Arc<Pool>, ErrorData> {
        self.shared.pools.get(upstream).ok_or_else(|| internal(format!("upstream `{upstream}` is not running")))
    }

    /// The policy enforcement point's decision on a request that goes to `upstream` without an
    /// invocation of its own (a resource read or subscription, a prompt, a completion): `Ok`
    /// lets it through; a denial (or a hold: such a request cannot wait) is the caller's error,
    /// and nothing is sent. The decision is audited.
    pub(super) async fn decide(
        &self,
        ctx: &RequestContext<RoleServer>,
        upstream: &str,
        operation: String,
        request: Value,
    ) -> Result<(), ErrorData> {
        let grant = ctx.meta.get(call::GRANT_META).and_then(Value::as_str).map(str::to_string);
        let passage = Passage {
            principal: principal(ctx)?,
            ingress: switchyard_contract::Ingress::Mcp,
            upstream: upstream.to_string(),
            operation,
            request,
            grant,
        };
        self.shared.engine.decide_passage(&passage).await.map_err(|e| crate::error::rpc_error(&e, None))
    }

    /// Sends one non-journaled request to an upstream on a pooled session, relaying to `ctx`.
    async fn forward(
        &self,
        upstream: &str,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let pool = self.pool(upstream)?;
        let lease = pool.acquire().await.map_err(|e| ErrorData::internal_error(e.0, None))?;
        let peer = lease.peer().cloned().ok_or_else(|| internal("no upstream session"))?;
        let relay = self.relay(ctx);
        let meta = request_meta(relay.as_ref());
        lease.attach(Some(relay));
        lease.reuse_connection(true); // lists, reads, completions: nothing of effect
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::default().with_meta(meta))
            .await
            .map_err(|e| ErrorData::internal_error(format!("upstream `{upstream}` unavailable: {e}"), None))?;
        lease.in_flight(handle.id.clone(), handle.progress_token.clone());
        match handle.await_response().await {
            Ok(r) => Ok(crate::client::from_upstream(r)),
            Err(rmcp::ServiceError::McpError(e)) => Err(e),
            Err(e) => {
                lease.discard();
                Err(ErrorData::internal_error(format!("upstream `{upstream}` failed: {e}"), None))
            }
        }
    }
}

fn error_result(id: InvocationId, text: &str) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(text.to_string())]);
    let mut meta = MetaObject::new();
    meta.0.insert(INVOCATION_META.into(), json!(id.to_string()));
    r.meta = Some(meta);
    r
}

/// The answer for a call whose outcome is unknown: an error result that says so and names the
/// invocation, never a success.
pub(super) fn unknown_result(id: InvocationId, reason: &str) -> CallToolResult {
    let mut r = error_result(
        id,
        &format!(
            "the outcome of this call is UNKNOWN: {reason}. The tool may or may not have taken effect; the gateway \
             did not retry it. Invocation {id}: an operator can resolve it with `switchyard reconcile {id} \
             applied|not-applied`."
        ),
    );
    r.structured_content = Some(json!({ "invocation": id.to_string(), "state": "unknown" }));
    r
}

/// `resources/read` of a URI nothing here serves (SEP-2164: invalid params, with the URI).
fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::invalid_params(format!("resource not found: {uri}"), Some(json!({ "uri": uri })))
}

fn unexpected(what: &str) -> ErrorData {
    internal(format!("the upstream answered {what} with another kind of result"))
}

impl ServerHandler for McpFace {
    fn get_info(&self) -> ServerInfo {
        let mut caps = ServerCapabilities::default();
        caps.tools = Some(Default::default());
        caps.prompts = Some(Default::default());
        caps.resources = Some(Default::default());
        caps.completions = Some(Default::default());
        let mut extensions: rmcp::model::ExtensionCapabilities =
            [(TASKS_EXTENSION_ID.to_string(), Default::default())].into_iter().collect();
        if self.offers_skills()
            && let Ok(Value::Object(settings)) = serde_json::to_value(SkillsCapability::new().with_directory_read())
        {
            extensions.insert(SKILLS_EXTENSION_ID.to_string(), settings);
        }
        caps.extensions = Some(extensions);
        #[allow(deprecated)]
        {
            caps.logging = Some(Default::default());
        }
        let mut info = ServerInfo::new(caps).with_server_info(self.identity());
        info.instructions = self.server.instructions.clone();
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.shared.catalog.refresh_approvals().await;
        self.refresh_bridges().await;
        let mut tools: Vec<_> = self
            .shared
            .catalog
            .offers(self.includes())
            .into_iter()
            .flat_map(|o| o.tools)
            .filter(|t| t.approved && self.server.exposes(&t.exposed))
            .map(|t| {
                let mut tool = t.tool;
                tool.name = t.exposed.into();
                tool
            })
            .collect();
        tools.extend(self.bridged_tools());
        let (items, next) = page(&tools, request.as_ref().and_then(|r| r.cursor.as_deref()), self.shared.page_size)?;
        let mut r = ListToolsResult::with_all_items(items);
        r.next_cursor = next;
        Ok(served::in_era!(r, self.era(&ctx).as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use tracing::Instrument as _;
        let tenant = principal(&context).map(|p| p.tenant.to_string()).unwrap_or_default();
        let era = if modern(&context) { "2026-07-28" } else { "legacy" };
        let span = tracing::info_span!(
            "mcp",
            protocol = "mcp",
            binding = "streamable-http",
            era,
            method = "tools/call",
            tool = %request.name,
            tenant = %tenant,
            invocation.id = tracing::field::Empty,
        );
        let modern_as = self.era(&context);
        let answer = self.call(request, context).instrument(span).await?;
        Ok(served::call(answer, modern_as.as_ref()))
    }

    /// The exposed tool (rmcp checks `Mcp-Param-*` headers against its schema).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        if self.bridged(name).is_some() {
            return self.bridged_tools().into_iter().find(|t| t.name == name);
        }
        let entry = self
            .shared
            .catalog
            .tool(name, self.includes())
            .filter(|t| t.approved && self.server.exposes(&t.exposed))?;
        let mut tool = entry.tool;
        tool.name = entry.exposed.into();
        Some(tool)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts: Vec<_> = self
            .shared
            .catalog
            .offers(self.includes())
            .into_iter()
            .flat_map(|o| o.prompts)
            .filter(|p| self.server.exposes(&p.exposed))
            .map(|p| {
                let mut prompt = p.prompt;
                prompt.name = p.exposed;
                prompt
            })
            .collect();
        let (items, next) = page(&prompts, request.as_ref().and_then(|r| r.cursor.as_deref()), self.shared.page_size)?;
        let mut r = ListPromptsResult::with_all_items(items);
        r.next_cursor = next;
        Ok(served::in_era!(r, self.era(&ctx).as_ref()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let entry = self
            .shared
            .catalog
            .prompt(&request.name, self.includes())
            .filter(|p| self.server.exposes(&p.exposed))
            .ok_or_else(|| invalid(format!("unknown prompt `{}`", request.name)))?;
        let upstream_name = entry.prompt.name.clone();
        let args = request.arguments.clone();
        let decided = json!({ "name": upstream_name, "arguments": args });
        self.decide(&context, &entry.upstream, format!("prompt:{upstream_name}"), decided).await?;
        let make = |responses: Option<InputResponses>, state: Option<String>| {
            let mut p = GetPromptRequestParams::new(upstream_name.clone());
            p.arguments = args.clone();
            p.input_responses = responses;
            p.request_state = state;
            ClientRequest::GetPromptRequest(GetPromptRequest::new(p))
        };
        let answer = self
            .forward_mrtr(
                &entry.upstream,
                "prompt",
                &request.name,
                make,
                (request.request_state.as_deref(), request.input_responses),
                &context,
            )
            .await?;
        let answer = match answer {
            Ok(ServerResult::GetPromptResult(r)) => GetPromptResponse::Complete(r),
            Ok(_) => return Err(unexpected("prompts/get")),
            Err(asked) => GetPromptResponse::InputRequired(asked),
        };
        Ok(served::prompt(answer, self.era(&context).as_ref()))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // An upstream's own skill files are served under its scoped URIs, never its own.
        let upstream = self.shared.catalog.offers(self.includes()).into_iter().flat_map(|o| o.resources);
        let all: Vec<_> =
            self.skill_resources().into_iter().chain(upstream.filter(|r| !r.uri.starts_with("skill://"))).collect();
        let (items, next) = page(&all, request.as_ref().and_then(|r| r.cursor.as_deref()), self.shared.page_size)?;
        let mut r = ListResourcesResult::with_all_items(items);
        r.next_cursor = next;
        Ok(served::in_era!(r, self.era(&ctx).as_ref()))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let all: Vec<_> = self.shared.catalog.offers(self.includes()).into_iter().flat_map(|o| o.templates).collect();
        let (items, next) = page(&all, request.as_ref().and_then(|r| r.cursor.as_deref()), self.shared.page_size)?;
        let mut r = ListResourceTemplatesResult::with_all_items(items);
        r.next_cursor = next;
        Ok(served::in_era!(r, self.era(&ctx).as_ref()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        if uri.starts_with("skill://") {
            // Only an approved skill's file, checked against its manifest: never the upstream's
            // own (unscoped, unverified) URI.
            return match self.read_skill_file(&uri, &context).await {
                Some(read) => read,
                None => Err(resource_not_found(&uri)),
            };
        }
        let upstream = self.resource_upstream(&uri)?;
        self.decide(&context, &upstream, format!("resource:{uri}"), json!({ "uri": uri })).await?;
        let make = |responses: Option<InputResponses>, state: Option<String>| {
            let mut p = ReadResourceRequestParams::new(uri.clone());
            p.input_responses = responses;
            p.request_state = state;
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(p))
        };
        let answer = self
            .forward_mrtr(
                &upstream,
                "resource",
                &request.uri,
                make,
                (request.request_state.as_deref(), request.input_responses),
                &context,
            )
            .await?;
        let answer = match answer {
            Ok(ServerResult::ReadResourceResult(r)) => ReadResourceResponse::Complete(r),
            Ok(_) => return Err(unexpected("resources/read")),
            Err(asked) => ReadResourceResponse::InputRequired(asked),
        };
        Ok(served::read(answer, self.era(&context).as_ref()))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.list_skills_here(request, &ctx).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.get_skill_here(request, &ctx).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.read_skill_directory(request, &ctx).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let mut request = request;
        let upstream = match &mut request.r#ref {
            Reference::Prompt(p) => {
                let entry = self
                    .shared
                    .catalog
                    .prompt(&p.name, self.includes())
                    .ok_or_else(|| invalid(format!("unknown prompt `{}`", p.name)))?;
                p.name = entry.prompt.name.clone();
                entry.upstream
            }
            Reference::Resource(r) => self
                .shared
                .catalog
                .resource_upstream(&r.uri, self.includes())
                .ok_or_else(|| invalid(format!("unknown resource template `{}`", r.uri)))?,
            _ => return Err(invalid("unknown completion reference kind")),
        };
        let named = match &request.r#ref {
            Reference::Prompt(p) => p.name.clone(),
            Reference::Resource(r) => r.uri.clone(),
            _ => String::new(),
        };
        let decided =
            json!({ "ref": named, "argument": { "name": request.argument.name, "value": request.argument.value } });
        self.decide(&context, &upstream, format!("completion:{named}"), decided).await?;
        request.meta = None;
        match self.forward(&upstream, ClientRequest::CompleteRequest(CompleteRequest::new(request)), &context).await? {
            ServerResult::CompleteResult(mut r) => {
                served::stamp(&mut r.meta, self.era(&context).as_ref());
                Ok(r)
            }
            _ => Err(unexpected("completion/complete")),
        }
    }

    async fn set_level(&self, request: SetLevelRequestParams, _: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.level.lock() {
            *level = request.level;
        }
        Ok(())
    }

    /// Legacy `resources/subscribe`: the gateway subscribes at the upstream serving the URI, on
    /// a session of its own, and relays `resources/updated` to this client until it
    /// unsubscribes or its session ends.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = request.uri;
        if uri.starts_with("skill://") {
            return Err(resource_not_found(&uri)); // skill files are read, checked, one at a time
        }
        let upstream = self.resource_upstream(&uri)?;
        self.decide(&ctx, &upstream, format!("resource:{uri}"), json!({ "uri": uri })).await?;
        let pool = self.pool(&upstream)?.clone();
        let relay = self.relay(&ctx);
        let (task_uri, log_uri) = (uri.clone(), uri.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = pool.relay_resource_updates(task_uri, relay).await {
                warn!(uri = %log_uri, error = %e, "resource subscription ended");
            }
        });
        self.subscriptions.insert(uri, task.abort_handle());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.remove(&request.uri);
        Ok(())
    }

    /// `tasks/get`: the invocation behind the task, as a DetailedTask.
    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.task_detail(&request.task_id, &ctx).await
    }

    /// `tasks/cancel`: cancels the invocation; acknowledged even when it already ended.
    async fn cancel_task(&self, request: CancelTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.cancel_task_of(&request.task_id, &ctx).await
    }

    /// `tasks/update`: the answer to a bridged task's question; refused for any other task.
    async fn update_task(&self, request: UpdateTaskParams, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.update_task_of(&request.task_id, request.input_responses, &ctx).await
    }

    /// rmcp has already canceled the request's token (the waiting tools/call stops waiting);
    /// this makes a keyed call's cancellation explicit, which a closed stream is not.
    async fn on_cancelled(&self, n: CancelledNotificationParam, _: rmcp::service::NotificationContext<RoleServer>) {
        if let Some(id) = n.request_id {
            self.cancels.explicit(&self.shared, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_bounded_and_cursors_checked() {
        let items: Vec<u32> = (0..5).collect();
        assert_eq!(page(&items, None, 2).ok(), Some((vec![0, 1], Some("2".into()))));
        assert_eq!(page(&items, Some("4"), 2).ok(), Some((vec![4], None)));
        assert_eq!(page(&items, Some(""), 10).ok(), Some((items.clone(), None)));
        assert!(page(&items, Some("6"), 2).is_err());
        assert!(page(&items, Some("x"), 2).is_err());
    }
}
