//! Upstream MCP sessions on rmcp's client. Each upstream has a pool of sessions (HTTP
//! connections, or child processes for stdio); a session carries one call at a time, so every
//! notification or server→client request an upstream sends during a call belongs to that call
//! and is relayed to the client that made it (its [`CallRelay`]). A dead session is dropped and a
//! new one started on demand; start-up failures back off exponentially (100 ms … 30 s), counted
//! once per failure episode (starts that were already under way when one failed do not add to
//! it), and after a wait one probe start goes first while the others keep failing fast.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientInfo, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorCode, ErrorData, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    RequestMetaObject, ResourceUpdatedNotificationParam, ServerNotification, SubscribeRequestParams,
    SubscriptionFilter,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, Peer, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info, warn};

use switchyard_contract::{CallRelay, Interim, Progress, Question, RelayError, SecretVault};

use crate::config::{McpUpstreamConfig, OAuthFlow};
use crate::http::UpstreamHttp;
use crate::oauth::OAuthHttp;
use crate::vault::{Sealer, VaultStore};

/// `_meta` for an upstream request made on a client's behalf: its declared capabilities (so
/// the upstream asks only for what it can answer) and log level.
pub fn request_meta(relay: &dyn CallRelay) -> RequestMetaObject {
    let mut meta = RequestMetaObject::default();
    if let Some(caps) = relay.capabilities().and_then(|c| serde_json::from_value::<ClientCapabilities>(c).ok()) {
        meta.set_client_capabilities(caps);
    }
    if let Some(level) =
        relay.log_level().and_then(|l| serde_json::from_value::<LoggingLevel>(serde_json::Value::String(l)).ok())
    {
        meta.set_log_level(level);
    }
    meta
}

fn resource_updated(params: ResourceUpdatedNotificationParam) -> Interim {
    Interim::ResourceUpdated { uri: params.uri, meta: params.meta.and_then(|m| serde_json::to_value(m).ok()) }
}

fn to_json<T: serde::Serialize>(params: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(params).map_err(|e| ErrorData::internal_error(format!("cannot encode the request: {e}"), None))
}

/// The client's refusal, as the upstream sees it: its own JSON-RPC error, unchanged.
fn error_data(e: RelayError) -> ErrorData {
    let code = i32::try_from(e.code).unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    ErrorData::new(ErrorCode(code), e.message, e.data)
}

/// An upstream's result in the form every client era is answered from: a 2025-11-25 upstream
/// sends no `resultType`, which 2026-07-28 clients require (the SDKs reject such a result), so an
/// absent one is `complete` — what the 2026-07-28 specification reads it as (rmcp drops a
/// `complete` again when it answers a legacy client); and the upstream's `serverInfo` is not
/// passed on as the gateway's.
pub fn from_upstream(mut r: rmcp::model::ServerResult) -> rmcp::model::ServerResult {
    use rmcp::model::{ResultType, ServerResult as R};
    let (slot, meta) = match &mut r {
        R::CompleteResult(r) => (&mut r.result_type, &mut r.meta),
        R::GetPromptResult(r) => (&mut r.result_type, &mut r.meta),
        R::ListPromptsResult(r) => (&mut r.result_type, &mut r.meta),
        R::ListResourcesResult(r) => (&mut r.result_type, &mut r.meta),
        R::ListResourceTemplatesResult(r) => (&mut r.result_type, &mut r.meta),
        R::ReadResourceResult(r) => (&mut r.result_type, &mut r.meta),
        R::ListToolsResult(r) => (&mut r.result_type, &mut r.meta),
        R::CallToolResult(r) => (&mut r.result_type, &mut r.meta),
        R::ListSkillsResult(r) => (&mut r.result_type, &mut r.meta),
        R::GetSkillResult(r) => (&mut r.result_type, &mut r.meta),
        _ => return r,
    };
    slot.get_or_insert(ResultType::COMPLETE);
    // The upstream's `serverInfo` describes the upstream, not the server the client talks to
    // (the gateway, whose own is in its discovery and initialize answers).
    if let Some(m) = meta.as_mut() {
        m.remove(SERVER_INFO_META);
    }
    r
}

/// Where a 2026-07-28 server names itself in a result's `_meta`.
pub(crate) const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

pub(crate) fn service_error(e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("the client did not answer: {other}"), None),
    }
}

/// The client side of one upstream session: relays to whichever call is current.
#[derive(Clone)]
pub(crate) struct RelayHandler {
    current: Arc<Mutex<Option<Arc<dyn CallRelay>>>>,
    /// The current call's upstream request (its id and progress token): progress for another
    /// token, or an upstream request that arrived on another request's response stream (a late
    /// one of an earlier call on this session), is not the current client's.
    in_flight: Arc<Mutex<Option<(RequestId, ProgressToken)>>>,
    list_changed: Arc<Notify>,
    /// The pool's tool-list generation, raised when the upstream says its tools changed.
    generation: Arc<AtomicU64>,
    /// The generation of the tool list this session holds.
    seen: Arc<AtomicU64>,
    /// This session announced a change: it lists the tools again before its next call (an HTTP
    /// session learns its tools' `x-mcp-header` parameters from a tools/list).
    relist: Arc<std::sync::atomic::AtomicBool>,
    /// The current call may go on a kept-alive HTTP connection (a read: [`crate::http`]).
    reuse: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for RelayHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayHandler").finish_non_exhaustive()
    }
}

impl RelayHandler {
    fn relay(&self) -> Option<Arc<dyn CallRelay>> {
        self.current.lock().ok().and_then(|c| c.clone())
    }

    fn set(&self, relay: Option<Arc<dyn CallRelay>>) {
        if let Ok(mut c) = self.current.lock() {
            *c = relay;
        }
        if let Ok(mut t) = self.in_flight.lock() {
            *t = None;
        }
    }

    /// Whether progress with `token` may belong to the current call: not when the call's own
    /// token is known and differs. (rmcp picks the token as it queues the request, so for a
    /// moment after a call starts its token is not known yet.)
    fn expects(&self, token: &ProgressToken) -> bool {
        self.in_flight.lock().is_ok_and(|t| t.as_ref().is_none_or(|(_, mine)| mine == token))
    }

    /// The relay for an upstream request (sampling, elicitation, roots), unless it came on the
    /// response stream of a request that is not the current call's (HTTP upstreams say which).
    fn relay_for(&self, ctx: &RequestContext<RoleClient>) -> Result<Arc<dyn CallRelay>, ErrorData> {
        if let Some(InboundStreamOrigin::OutboundRequest(origin)) = ctx.extensions.get::<InboundStreamOrigin>()
            && self.in_flight.lock().is_ok_and(|t| t.as_ref().is_some_and(|(mine, _)| mine != origin))
        {
            return Err(Self::no_client());
        }
        self.relay().ok_or_else(Self::no_client)
    }

    fn no_client() -> ErrorData {
        ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "no client is attached to this call", None)
    }
}

impl ClientHandler for RelayHandler {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(Default::default());
        // Both modes: a URL elicitation is passed on as asked (a client that cannot open URLs
        // refuses it itself).
        let mut elicitation = ElicitationCapability::new();
        (elicitation.form, elicitation.url) = (Some(Default::default()), Some(Default::default()));
        caps.elicitation = Some(elicitation);
        caps.roots = Some(Default::default());
        let mut info = ClientInfo::default();
        info.capabilities = caps;
        info.client_info = Implementation::new("switchyard", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        ctx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let relay = self.relay_for(&ctx)?;
        let answer = relay.ask(Question::Sample(to_json(&params)?)).await.map_err(error_data)?;
        serde_json::from_value(answer)
            .map_err(|_| ErrorData::internal_error("the client answered sampling with another result", None))
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let relay = self.relay_for(&ctx)?;
        let answer = relay.ask(Question::Input(to_json(&params)?)).await.map_err(error_data)?;
        serde_json::from_value(answer)
            .map_err(|_| ErrorData::internal_error("the client answered elicitation with another result", None))
    }

    async fn list_roots(&self, ctx: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        let relay = self.relay_for(&ctx)?;
        let answer = relay.ask(Question::Roots).await.map_err(error_data)?;
        serde_json::from_value(answer)
            .map_err(|_| ErrorData::internal_error("the client answered roots/list with another result", None))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        if !self.expects(&params.progress_token) {
            debug!("progress for another call on this session dropped");
            return;
        }
        if let Some(relay) = self.relay() {
            let progress = Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
                meta: params.meta.and_then(|m| serde_json::to_value(m).ok()),
            };
            let _ = relay.notify(Interim::Progress(progress)).await;
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(&self, params: LoggingMessageNotificationParam, _: NotificationContext<RoleClient>) {
        if let Some(relay) = self.relay() {
            let level = serde_json::to_value(params.level).ok().and_then(|v| v.as_str().map(str::to_string));
            let line = Interim::Log {
                level: level.unwrap_or_else(|| "info".into()),
                logger: params.logger,
                data: params.data,
                meta: params.meta.and_then(|m| serde_json::to_value(m).ok()),
            };
            let _ = relay.notify(line).await;
        }
    }

    async fn on_resource_updated(&self, params: ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        if let Some(relay) = self.relay() {
            let _ = relay.notify(resource_updated(params)).await;
        }
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        // Other sessions hold a stale tool list (rmcp mirrors `x-mcp-header` parameters from
        // it): they are retired. This one said so itself, so it stays, and lists the tools again
        // before its next call — retiring it too would respawn, on every call, an upstream that
        // announces a change right after it starts (server-everything does).
        let now = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.seen.fetch_max(now, Ordering::SeqCst);
        self.relist.store(true, Ordering::SeqCst);
        self.list_changed.notify_waiters();
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.list_changed.notify_waiters();
    }
}

struct Session {
    service: RunningService<RoleClient, RelayHandler>,
    handler: RelayHandler,
}

impl Session {
    /// Whether this session's tool list is older than the pool's.
    fn stale(&self, pool: &AtomicU64) -> bool {
        self.handler.seen.load(Ordering::SeqCst) < pool.load(Ordering::SeqCst)
    }
}

pub use crate::error::SessionError;

/// Start-up failures: how many episodes in a row, when the last began, and whether a probe
/// start is under way.
#[derive(Debug, Default)]
struct Backoff {
    n: u32,
    at: Option<Instant>,
    probing: bool,
}

impl Backoff {
    fn wait(&self) -> Duration {
        Duration::from_millis(100u64.saturating_mul(1 << self.n.min(9))).min(Duration::from_secs(30))
    }

    /// Whether a start may go now (and if it is the probe, marks it).
    fn admit(&mut self) -> Result<(), SessionError> {
        let Some(at) = self.at else { return Ok(()) };
        let wait = self.wait();
        if at.elapsed() < wait {
            return Err(format!(
                "failed to start {} time(s); next attempt in {} ms",
                self.n,
                (wait - at.elapsed()).as_millis()
            )
            .into());
        }
        if self.probing {
            return Err("failed to start; a probe start is under way".into());
        }
        self.probing = true;
        Ok(())
    }

    /// Records the result of a start that began at `began`.
    fn record(&mut self, began: Instant, ok: bool) {
        if ok {
            *self = Self::default();
            return;
        }
        // A start that began before the episode's last failure is part of that episode.
        if self.at.is_none_or(|at| began >= at) {
            self.n = self.n.saturating_add(1);
            self.at = Some(Instant::now());
        }
        self.probing = false;
    }
}

/// The sessions of one upstream.
pub struct Pool {
    pub spec: McpUpstreamConfig,
    idle: Mutex<Vec<Session>>,
    permits: Arc<Semaphore>,
    /// Start-up failures of the current episode.
    failures: Mutex<Backoff>,
    connect_timeout: Duration,
    /// The HTTP clients of an HTTP upstream's sessions, built on first use: its sessions share
    /// the kept-alive connections.
    http: std::sync::OnceLock<UpstreamHttp>,
    /// The OAuth-authorized HTTP client, once obtained.
    auth: Mutex<Option<OAuthHttp>>,
    /// Where `authorization_code` tokens are kept (sealed).
    credentials: Option<(Arc<dyn SecretVault>, Sealer)>,
    /// Woken when the upstream says its tool or prompt list changed.
    pub list_changed: Arc<Notify>,
    generation: Arc<AtomicU64>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("upstream", &self.spec.name).finish_non_exhaustive()
    }
}

/// One session taken from the pool for one call; goes back when dropped, unless it died.
pub struct Lease {
    pool: Arc<Pool>,
    session: Option<Session>,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("upstream", &self.pool.spec.name).finish_non_exhaustive()
    }
}

impl Lease {
    pub fn peer(&self) -> Option<&Peer<RoleClient>> {
        self.session.as_ref().map(|s| s.service.peer())
    }

    pub fn attach(&self, relay: Option<Arc<dyn CallRelay>>) {
        if let Some(s) = &self.session {
            s.handler.set(relay);
        }
    }

    /// Whether the call this session carries may go on a kept-alive HTTP connection: only a
    /// read's (see [`crate::http`]).
    pub fn reuse_connection(&self, read_only: bool) {
        if let Some(s) = &self.session {
            s.handler.reuse.store(read_only, Ordering::SeqCst);
        }
    }

    /// The upstream request now in flight on this session: its id and progress token.
    pub fn in_flight(&self, id: RequestId, token: ProgressToken) {
        if let Some(s) = &self.session
            && let Ok(mut t) = s.handler.in_flight.lock()
        {
            *t = Some((id, token));
        }
    }

    /// The session lists the upstream's tools again before its next call (its tool list, from
    /// which rmcp mirrors `x-mcp-header` parameters, disagreed with the upstream's).
    /// The idle sessions' lists are as old as this one's: they list again too.
    pub fn relist(&self) {
        if let Some(s) = &self.session {
            s.handler.relist.store(true, Ordering::SeqCst);
        }
        if let Ok(idle) = self.pool.idle.lock() {
            idle.iter().for_each(|s| s.handler.relist.store(true, Ordering::SeqCst));
        }
    }

    /// Drops the session instead of returning it (its transport failed mid-call).
    pub fn discard(mut self) {
        self.session = None;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            s.handler.set(None);
            if !s.service.is_closed()
                && let Ok(mut idle) = self.pool.idle.lock()
            {
                idle.push(s);
            }
        }
    }
}

impl Pool {
    pub fn new(
        spec: McpUpstreamConfig,
        connect_timeout: Duration,
        credentials: Option<(Arc<dyn SecretVault>, Sealer)>,
    ) -> Arc<Self> {
        let permits = Arc::new(Semaphore::new(spec.max_sessions()));
        Arc::new(Self {
            spec,
            idle: Mutex::new(Vec::new()),
            permits,
            failures: Mutex::new(Backoff::default()),
            connect_timeout,
            http: std::sync::OnceLock::new(),
            auth: Mutex::new(None),
            credentials,
            list_changed: Arc::new(Notify::new()),
            generation: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Sessions now: (carrying a call, idle, the most the upstream may have).
    pub fn sessions(&self) -> (usize, usize, usize) {
        let max = self.spec.max_sessions();
        let in_use = max.saturating_sub(self.permits.available_permits());
        let idle = self.idle.lock().map_or(0, |i| i.len());
        (in_use, idle, max)
    }

    /// A session for one call: an idle one, or a new one (waiting for a free slot).
    pub async fn acquire(self: &Arc<Self>) -> Result<Lease, SessionError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SessionError(format!("upstream `{}` is shutting down", self.spec.name)))?;
        loop {
            let next = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            match next {
                Some(s) if s.service.is_closed() || s.stale(&self.generation) => continue,
                Some(s) => {
                    if s.handler.relist.swap(false, Ordering::SeqCst) && self.spec.url.is_some() {
                        self.list_tools_on(&s.service).await;
                    }
                    return Ok(Lease { pool: self.clone(), session: Some(s), _permit: permit });
                }
                None => break,
            }
        }
        let session = self.start().await?;
        Ok(Lease { pool: self.clone(), session: Some(session), _permit: permit })
    }

    /// Lists the upstream's tools on `service` (so that rmcp knows their header parameters).
    /// The session's response cache is cleared first: a listing it answered (within the
    /// upstream's `ttlMs`) would never reach the transport, which learns the headers.
    async fn list_tools_on(&self, service: &RunningService<RoleClient, RelayHandler>) {
        service.peer().clear_response_cache().await;
        if let Err(e) = service.peer().list_all_tools().await {
            warn!(upstream = %self.spec.name, error = %e, "tools/list on an upstream session failed");
        }
    }

    fn backoff(&self) -> Result<(), SessionError> {
        let Ok(mut f) = self.failures.lock() else { return Ok(()) };
        f.admit().map_err(|why| SessionError(format!("upstream `{}` {why}", self.spec.name)))
    }

    async fn start(&self) -> Result<Session, SessionError> {
        self.backoff()?;
        let began = Instant::now();
        let handler = RelayHandler {
            current: Arc::new(Mutex::new(None)),
            in_flight: Arc::new(Mutex::new(None)),
            list_changed: self.list_changed.clone(),
            generation: self.generation.clone(),
            seen: Arc::new(AtomicU64::new(self.generation.load(Ordering::SeqCst))),
            relist: Arc::default(),
            reuse: Arc::default(),
        };
        let started = tokio::time::timeout(self.connect_timeout, self.connect(handler.clone())).await;
        let result = match started {
            Ok(r) => r,
            Err(_) => Err(SessionError(format!(
                "upstream `{}` did not finish the MCP handshake within {} ms",
                self.spec.name,
                self.connect_timeout.as_millis()
            ))),
        };
        if let Ok(mut f) = self.failures.lock() {
            f.record(began, result.is_ok());
        }
        match result {
            Ok(service) => {
                // rmcp's HTTP transport learns each tool's `x-mcp-header` parameters from a
                // tools/list it has seen; without one it would not mirror them into headers.
                if self.spec.url.is_some() {
                    handler.relist.store(false, Ordering::SeqCst);
                    self.list_tools_on(&service).await;
                }
                let version = service.peer().peer_info().map(|i| i.protocol_version.to_string());
                info!(upstream = %self.spec.name, version = version.as_deref().unwrap_or("2026-07-28"), "upstream session started");
                Ok(Session { service, handler })
            }
            Err(e) => {
                warn!(upstream = %self.spec.name, error = %e, "upstream session failed to start");
                Err(e)
            }
        }
    }

    async fn connect(&self, handler: RelayHandler) -> Result<RunningService<RoleClient, RelayHandler>, SessionError> {
        let lifecycle = rmcp::service::ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        };
        let fail = |e: String| SessionError(format!("upstream `{}`: {e}", self.spec.name));
        if let Some(url) = &self.spec.url {
            let auth = match self.spec.oauth {
                Some(_) => Some(self.oauth_client(url).await.map_err(|e| fail(e.0))?),
                None => None,
            };
            let http = match self.http.get() {
                Some(http) => http,
                None => {
                    let built = UpstreamHttp::new().map_err(fail)?;
                    self.http.get_or_init(|| built)
                }
            }
            .for_session(handler.reuse.clone());
            let served = crate::oauth::connect_http(handler, url, http, auth, lifecycle).await;
            if served.is_err()
                && let Ok(mut cached) = self.auth.lock()
            {
                // Perhaps the token: get a new one for the next session.
                *cached = None;
            }
            return served.map_err(|e| fail(e.to_string()));
        }
        let Some((program, args)) = self.spec.command.split_first() else {
            return Err(fail("no url and no command configured".into()));
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).env_clear().envs(self.spec.child_env()).kill_on_drop(true);
        let (transport, _) =
            TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::NotFound {
                    " (not found: install it, put it on the gateway's PATH, or give its full path in `command`)"
                } else {
                    ""
                };
                fail(format!("cannot start `{program}`: {e}{hint}"))
            })?;
        rmcp::service::serve_client_with_lifecycle(handler, transport, lifecycle).await.map_err(|e| fail(e.to_string()))
    }

    /// The OAuth-authorized HTTP client of this upstream, shared by its sessions.
    async fn oauth_client(&self, url: &str) -> Result<OAuthHttp, SessionError> {
        if let Some(c) = self.auth.lock().ok().and_then(|c| c.clone()) {
            return Ok(c);
        }
        let Some(o) = &self.spec.oauth else { return Err("no oauth configured".into()) };
        let client = match o.flow {
            OAuthFlow::ClientCredentials => crate::oauth::client_credentials(url, o).await?,
            OAuthFlow::AuthorizationCode => {
                let Some((vault, sealer)) = &self.credentials else {
                    return Err("no credential store configured".into());
                };
                let store = VaultStore::new(&self.spec.name, vault.clone(), sealer.clone());
                crate::oauth::stored_authorization(url, store)
                    .await?
                    .ok_or_else(|| format!("not authorized yet: run `switchyard auth login {}` once", self.spec.name))?
            }
        };
        if let Ok(mut cached) = self.auth.lock() {
            *cached = Some(client.clone());
        }
        info!(upstream = %self.spec.name, flow = ?o.flow, "OAuth authorization for the upstream ready");
        Ok(client)
    }

    /// Relays `resources/updated` for `uri` to `relay`'s client until the returned future is
    /// dropped, on a session of its own (outside the pool: it lives as long as the
    /// subscription). A 2026-07-28 upstream is asked through `subscriptions/listen`, a legacy
    /// one through `resources/subscribe`.
    pub async fn relay_resource_updates(&self, uri: String, relay: Arc<dyn CallRelay>) -> Result<(), SessionError> {
        let Session { service, handler, .. } = self.start().await?;
        handler.set(Some(relay.clone()));
        let peer = service.peer().clone();
        let modern = peer.peer_info().is_none_or(|i| i.protocol_version >= ProtocolVersion::V_2026_07_28);
        let fail = |e: rmcp::ServiceError| SessionError(format!("upstream `{}`: subscribe {uri}: {e}", self.spec.name));
        if !modern {
            peer.subscribe(SubscribeRequestParams::new(uri.clone())).await.map_err(fail)?;
            // Updates arrive through the handler; keep the session until dropped.
            std::future::pending::<()>().await;
        }
        let filter = SubscriptionFilter::builder().resource_subscription(uri.clone()).build();
        let mut subscription = peer.listen(filter).await.map_err(fail)?;
        while let Ok(Some(n)) = subscription.next().await {
            if let ServerNotification::ResourceUpdatedNotification(u) = n
                && relay.notify(resource_updated(u.params)).await.is_err()
            {
                break;
            }
        }
        drop(service);
        Ok(())
    }

    /// Closes idle sessions (stdio children exit).
    pub async fn close(&self) {
        let idle: Vec<Session> = self.idle.lock().map(|mut i| i.drain(..).collect()).unwrap_or_default();
        for mut s in idle {
            let _ = s.service.close_with_timeout(Duration::from_secs(2)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_result_gets_a_result_type_and_loses_its_server_info() {
        let legacy: rmcp::model::CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "hi"}],
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up", "version": "1"}, "x.example/keep": 1},
        }))
        .unwrap();
        assert!(legacy.result_type.is_none());
        let out = from_upstream(rmcp::model::ServerResult::CallToolResult(legacy));
        let v = serde_json::to_value(&out).unwrap_or_default();
        assert_eq!(v["resultType"], "complete", "{v}");
        assert_eq!(v["_meta"], serde_json::json!({"x.example/keep": 1}), "{v}");
    }

    #[test]
    fn progress_of_an_earlier_call_on_the_session_is_not_relayed() {
        let handler = RelayHandler {
            current: Arc::new(Mutex::new(None)),
            in_flight: Arc::new(Mutex::new(None)),
            list_changed: Arc::new(Notify::new()),
            generation: Arc::new(AtomicU64::new(0)),
            seen: Arc::new(AtomicU64::new(0)),
            relist: Arc::default(),
            reuse: Arc::default(),
        };
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        assert!(handler.expects(&token(1)), "before the call's token is known");
        *handler.in_flight.lock().unwrap_or_else(|e| e.into_inner()) = Some((RequestId::Number(7), token(2)));
        assert!(handler.expects(&token(2)));
        assert!(!handler.expects(&token(1)), "a late notification of the previous call");
        handler.set(None);
        assert!(handler.expects(&token(3)), "a new call starts unknown again");
    }

    #[test]
    fn concurrent_failures_are_one_episode_and_one_probe_goes_first() {
        let mut b = Backoff::default();
        let began = Instant::now();
        for _ in 0..8 {
            assert!(b.admit().is_ok(), "no failure yet: every start may go");
        }
        b.probing = false;
        for _ in 0..8 {
            b.record(began, false); // eight starts under way at once, all failing
        }
        assert_eq!(b.n, 1, "one episode, not eight");
        assert_eq!(b.wait(), Duration::from_millis(200));
        assert!(b.admit().is_err(), "backing off");
        b.at = Some(Instant::now() - Duration::from_secs(1));
        assert!(b.admit().is_ok(), "the probe");
        assert!(b.admit().is_err(), "others wait for the probe");
        let probe = Instant::now();
        b.record(probe, false);
        assert_eq!((b.n, b.probing), (2, false), "a failed probe extends the episode");
        b.at = Some(Instant::now() - Duration::from_secs(1));
        assert!(b.admit().is_ok());
        b.record(Instant::now(), true);
        assert_eq!((b.n, b.at.is_none(), b.probing), (0, true, false), "a success ends it");
    }
}
