//! Wiring: the store, the upstream registry and the engine behind one HTTP listener, with
//! health and readiness endpoints and graceful shutdown (drain, then release leases).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use switchyard_contract::{
    BindingStore, EffectClass, Engine, FaultHook, Ingress, InvocationStore, Invocations, NoFaults, WorkerId,
};
use switchyard_mcp::McpGateway;
use switchyard_store::{StoreOptions, redact_url};
use tower_http::trace::TraceLayer;
use tracing::{info, warn};

use crate::admin::{self, AdminState};
use crate::auth::Gatekeeper;
use crate::config::Config;
use crate::faults::PauseAt;
use crate::keys::{a2a_sealer, admin_token, artifact_links, audit_key, grant_key, mcp_sealer, request_state_key};
use crate::registry::Registry;
use switchyard_oauth::Authenticator;

/// The running parts, for `serve` and for tests that drive a router directly.
#[derive(Clone)]
pub struct App {
    pub engine: Engine,
    pub store: Arc<dyn InvocationStore>,
    /// Where the admin token came from, to tell the operator.
    pub token_source: String,
    /// Authentication for every HTTP face: the admin token, and OAuth when configured.
    pub gate: Gatekeeper,
    /// Artifact bytes and metadata, served at `/artifacts/{id}`.
    pub artifacts: switchyard_artifacts::Artifacts,
    /// Signs and checks the links to an artifact that faces hand its caller.
    links: switchyard_contract::ArtifactLinks,
    /// Upstream MCP servers, their catalog, and the MCP endpoints' routes (before auth).
    pub mcp: Arc<McpGateway>,
    mcp_routes: Router,
    /// Pinned upstream definitions (MCP tool schemas).
    pub bindings: Arc<dyn BindingStore>,
    /// The A2A agents and their face.
    pub a2a: Arc<switchyard_a2a::A2aAgents>,
    a2a_face: switchyard_a2a::face::A2aFace,
    /// With `[audit]` on: the audit store.
    pub audit: Option<Arc<dyn switchyard_contract::AuditStore>>,
    /// With a `[policy]`: where the console mints, lists and revokes grants.
    grants: Option<crate::grants::GrantDesk>,
    /// The engine's counts and timings, served at `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The A2A push outbox (its depth is a metric).
    outbox: Arc<dyn switchyard_contract::PushOutbox>,
    /// The A2A task store (the console's tasks page reads it).
    tasks: Arc<dyn switchyard_contract::TaskStore>,
    /// Sealed secrets (console sessions are kept there).
    vault: Arc<dyn switchyard_contract::SecretVault>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("engine", &self.engine).finish_non_exhaustive()
    }
}

impl App {
    /// Opens (and migrates) the store and builds the engine; does not start recovery.
    pub async fn build(cfg: &Config) -> anyhow::Result<Self> {
        let stores = open_stores(cfg).await?;
        let mcp = Arc::new(McpGateway::new(
            cfg.mcp.clone(),
            stores.bindings.clone(),
            Some((stores.vault.clone(), mcp_sealer(cfg)?)),
        ));
        let artifacts = crate::artifacts_http::open(cfg, stores.artifacts.clone())
            .await
            .context("cannot open the artifact store")?;
        let keeper: Arc<dyn switchyard_contract::ArtifactKeeper> = Arc::new(artifacts.clone());
        let a2a_sealer = a2a_sealer(cfg)?;
        let worker = worker_identity(&cfg.server.data_dir)?;
        let audit_log = cfg.audited().then(|| {
            let partition = cfg.audit.partition.clone().unwrap_or_else(|| worker.to_string());
            audit_log(&stores.audit, partition)
        });
        let metrics = Arc::new(crate::metrics::Metrics::default());
        // The A2A agents submit their own calls (a `tools` agent's tool calls) to the engine that
        // calls them: they are built with its driving port, and it with them.
        let mut agents = None;
        let engine = Engine::builder(stores.invocations.clone(), cfg.engine_config(worker))
            .faults(fault_hook()?)
            .policy(policy_point(cfg, stores.grants.clone())?)
            .audit(audit_log.clone())
            .meter(metrics.clone())
            .feed(stores.feed.clone())
            .build_cyclic(|engine| -> anyhow::Result<Arc<dyn switchyard_contract::UpstreamRegistry>> {
                let ports = switchyard_a2a::A2aPorts {
                    engine,
                    tasks: stores.tasks.clone(),
                    outbox: stores.outbox.clone(),
                    keeper: Some(keeper),
                    catalog: Some(mcp.bridge()),
                    feed: stores.feed.clone(),
                };
                let a2a =
                    switchyard_a2a::A2aAgents::new(cfg.a2a.clone(), ports, a2a_sealer).map_err(anyhow::Error::msg)?;
                let registry = registry(cfg, &mcp, &a2a);
                agents = Some(Arc::new(a2a));
                Ok(Arc::new(registry))
            })?;
        let a2a = agents.ok_or_else(|| anyhow::anyhow!("the A2A agents were not built"))?;
        let grants = match &cfg.policy {
            Some(_) => Some(crate::grants::GrantDesk::new(grant_key(cfg)?, stores.grants.clone(), audit_log.clone())),
            None => None,
        };
        let audit = audit_log.map(|_| stores.audit.clone());
        let (admin_token, token_source) = admin_token(cfg)?;
        let oauth = match &cfg.auth {
            Some(a) => Some(Arc::new(Authenticator::new(a.clone()).map_err(anyhow::Error::msg)?)),
            None => None,
        };
        let invocations: Arc<dyn Invocations> = Arc::new(engine.clone());
        let a2a_face = a2a.face(invocations.clone(), oauth.as_ref().map(|o| a2a_security(o.config())));
        let gate = Gatekeeper::new(admin_token, oauth);
        let agents: Arc<dyn switchyard_contract::Catalog> = a2a.bridge();
        let links = artifact_links(cfg)?;
        let mcp_routes = mcp
            .router(invocations, request_state_key(cfg)?.0.as_bytes(), Some(agents), Some(links.clone()))
            .map_err(anyhow::Error::msg)?;
        Ok(Self {
            engine,
            store: stores.invocations,
            token_source,
            gate,
            artifacts,
            links,
            mcp,
            mcp_routes,
            bindings: stores.bindings,
            a2a,
            a2a_face,
            audit,
            grants,
            metrics,
            outbox: stores.outbox,
            tasks: stores.tasks,
            vault: stores.vault,
        })
    }

    /// Starts the loops every running gateway keeps (recovery, A2A push, audit checkpoints,
    /// artifact collection) in one set, after ending the leases this worker held before a
    /// restart (the first recovery pass takes them).
    pub async fn start_background(&self, cfg: &Config) -> anyhow::Result<tokio::task::JoinSet<()>> {
        let ended = self.store.release_leases(self.engine.worker()).await.context("cannot release earlier leases")?;
        if ended > 0 {
            info!(leases = ended, "taking back this worker's leases from before the restart");
        }
        let mut background = tokio::task::JoinSet::new();
        background.spawn(self.engine.recovery());
        if let Some(push) = self.a2a.background() {
            background.spawn(push);
        }
        if let Some(store) = &self.audit {
            let every = Duration::from_secs(cfg.audit.checkpoint_interval_s);
            background.spawn(audit_checkpoints(store.clone(), audit_key(cfg)?, every));
        }
        if cfg.artifacts.gc_interval_ms > 0 {
            background.spawn(self.artifacts.collector(Duration::from_millis(cfg.artifacts.gc_interval_ms)));
        }
        Ok(background)
    }

    /// After the engine stopped: stops the background loops, signs the audit log's tail since
    /// the last checkpoint, and ends the upstream sessions (stdio children exit).
    pub async fn finish(&self, cfg: &Config, mut background: tokio::task::JoinSet<()>) {
        background.shutdown().await;
        if let (Some(store), Ok(key)) = (&self.audit, audit_key(cfg)) {
            match store.heads().await {
                Ok(heads) => {
                    sign_checkpoint(store.as_ref(), &key, &heads).await;
                }
                Err(e) => warn!(error = %e, "audit heads not read at shutdown; the tail stays unsigned"),
            }
        }
        self.mcp.close().await;
    }

    /// The MCP face on its own, for `switchyard stdio`.
    pub fn mcp_face(&self, cfg: &Config) -> anyhow::Result<switchyard_mcp::McpFace> {
        let invocations: Arc<dyn Invocations> = Arc::new(self.engine.clone());
        let key = request_state_key(cfg)?;
        let agents: Arc<dyn switchyard_contract::Catalog> = self.a2a.bridge();
        self.mcp.face(invocations, key.0.as_bytes(), Some(agents), Some(self.links.clone())).map_err(anyhow::Error::msg)
    }

    /// All HTTP routes.
    pub fn router(&self, cfg: &Config) -> Router {
        let admin = admin::router(AdminState {
            engine: self.engine.clone(),
            gate: self.gate.clone(),
            max_wait_ms: cfg.server.max_wait_ms,
            body_limit: cfg.server.body_limit_bytes,
        });
        Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(ready).with_state(self.store.clone()))
            .merge(admin)
            .merge(self.protected_resource_metadata())
            .merge(crate::artifacts_http::router(crate::artifacts_http::ArtifactsHttp {
                artifacts: self.artifacts.clone(),
                gate: self.gate.clone(),
                links: self.links.clone(),
            }))
            .merge(crate::mcp_http::protect(
                self.mcp_routes.clone(),
                self.gate.clone(),
                cfg.mcp.anonymous,
                &cfg.mcp.effective_servers(),
            ))
            .merge(crate::mcp_http::upstreams_admin(self.mcp.catalog(), self.bindings.clone(), self.gate.clone()))
            .merge(crate::console::router(self.console_state(cfg)))
            .merge(if cfg.server.metrics_listen.is_some() { Router::new() } else { self.metrics_router() })
            .merge(self.a2a_routes(cfg))
            .layer(DefaultBodyLimit::max(cfg.server.body_limit_bytes))
            .layer(TraceLayer::new_for_http())
    }
}

impl App {
    /// The A2A cards (public) and the JSON-RPC, HTTP+JSON and gRPC endpoints (authenticated;
    /// each agent's `scope`, default `a2a:call`).
    fn a2a_routes(&self, cfg: &Config) -> Router {
        if cfg.a2a.agents.is_empty() {
            return Router::new();
        }
        let face = self.a2a_face.clone();
        let scopes: Vec<(String, String)> = cfg
            .a2a
            .agents
            .iter()
            .filter(|a| a.exposed)
            .map(|a| (a.base_path(), a.required_scope().to_string()))
            .collect();
        let api = switchyard_a2a::http::api(face.clone()).merge(switchyard_a2a::grpc::router(face.clone()));
        // gRPC names its agent inside the request: the service checks that agent's scope.
        let deferred = vec![switchyard_a2a::grpc::SERVICE_PATH.to_string()];
        switchyard_a2a::http::cards(face).merge(crate::auth::protect(
            api,
            self.gate.clone(),
            cfg.a2a.anonymous,
            scopes,
            crate::auth::scope::A2A,
            deferred,
        ))
    }

    /// `GET /metrics` (on the main listener, or on `server.metrics_listen`).
    pub fn metrics_router(&self) -> Router {
        crate::metrics::router(self.metrics.clone(), self.gate.clone(), self.probes())
    }

    /// What a scrape of `/metrics` reads besides the engine's counts.
    fn probes(&self) -> crate::metrics::Probes {
        crate::metrics::Probes {
            store: self.store.clone(),
            outbox: self.outbox.clone(),
            mcp: self.mcp.clone(),
            a2a: self.a2a.clone(),
            artifacts: self.artifacts.clone(),
        }
    }

    /// The console serves the hosts the MCP and A2A faces serve.
    fn console_state(&self, cfg: &Config) -> crate::console::ConsoleState {
        let public: Vec<String> = cfg.mcp.public_url.iter().chain(cfg.a2a.public_url.iter()).cloned().collect();
        let hosts: Vec<String> = cfg.mcp.allowed_hosts.iter().chain(cfg.a2a.allowed_hosts.iter()).cloned().collect();
        let pins = crate::console::Pins { catalog: self.mcp.catalog(), bindings: self.bindings.clone() };
        let state = crate::console::ConsoleState::new(
            self.engine.clone(),
            self.gate.clone(),
            self.vault.clone(),
            &public,
            &hosts,
        )
        .over_tls(cfg.server.tls.is_some())
        .with_pins(pins)
        .with_artifacts(self.artifacts.clone())
        .with_protocols(vec![
            ("mcp".into(), cfg.mcp.mcp_servers().map(|u| u.name.clone()).collect()),
            ("a2a".into(), cfg.a2a.agents.iter().map(switchyard_a2a::config::AgentConfig::upstream).collect()),
            ("built-in".into(), cfg.demos().map(|u| u.name.clone()).collect()),
        ]);
        let agents: Vec<String> = cfg.a2a.agents.iter().filter(|a| a.exposed).map(|a| a.name.clone()).collect();
        let state = if agents.is_empty() {
            state
        } else {
            state.with_tasks(crate::console::Tasks { store: self.tasks.clone(), agents: Arc::new(agents) })
        };
        let state = match self.grants.clone() {
            Some(desk) => state.with_grants(desk),
            None => state,
        };
        match (&self.audit, audit_key(cfg), grant_key(cfg)) {
            (Some(store), Ok(key), Ok(legacy)) => state.with_audit(store.clone(), key, legacy),
            _ => state,
        }
    }

    /// RFC 9728 metadata for the gateway as a whole, the admin API and artifacts, when OAuth is on.
    fn protected_resource_metadata(&self) -> Router {
        let Some(oauth) = self.gate.oauth() else { return Router::new() };
        let doc = switchyard_oauth::http::metadata(oauth.config());
        let serve = move || {
            let doc = doc.clone();
            async move { axum::Json(doc) }
        };
        Router::new()
            .route(switchyard_oauth::http::PRM_PATH, get(serve.clone()))
            .route(&format!("{}/admin/v1", switchyard_oauth::http::PRM_PATH), get(serve.clone()))
            .route(&format!("{}/artifacts", switchyard_oauth::http::PRM_PATH), get(serve.clone()))
            .route(&format!("{}/mcp", switchyard_oauth::http::PRM_PATH), get(serve))
    }
}

async fn ready(State(store): State<Arc<dyn InvocationStore>>) -> impl IntoResponse {
    match store.now().await {
        Ok(_) => (StatusCode::OK, "ready\n"),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n"),
    }
}

/// The policy enforcement point `[policy]` configures, else one that allows every call.
pub fn policy_point(
    cfg: &Config,
    grants: Arc<dyn switchyard_contract::GrantStore>,
) -> anyhow::Result<Arc<dyn switchyard_contract::PolicyPoint>> {
    Ok(match &cfg.policy {
        Some(p) => {
            let evaluator = switchyard_policy::Evaluator::new(p.clone())?.with_grants(grant_key(cfg)?, grants);
            tracing::info!(policy = evaluator.version(), "policy enforcement point on");
            Arc::new(evaluator)
        }
        None => Arc::new(switchyard_contract::AllowAll),
    })
}

/// Creates the data dir and opens (and migrates) the store.
async fn open_stores(cfg: &Config) -> anyhow::Result<switchyard_store::Stores> {
    std::fs::create_dir_all(&cfg.server.data_dir)
        .with_context(|| format!("cannot create data dir {}", cfg.server.data_dir.display()))?;
    let url = cfg.store_url();
    let opts = StoreOptions {
        max_connections: cfg.store.max_connections,
        migrate: true,
        acquire_timeout: Duration::from_millis(cfg.store.acquire_timeout_ms),
        change_feed: cfg.store.change_feed,
        group_commit: cfg.store.group_commit,
        pause_before_shared_commit: crate::faults::pauses_shared_commit(),
    };
    let hint = if url.starts_with("postgres") {
        "; is PostgreSQL running and reachable there? Point store.url (or SWITCHYARD__STORE__URL) at a \
         database that answers, or leave it empty for the embedded SQLite"
    } else {
        ""
    };
    switchyard_store::connect(&url, &opts)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open store {}: {e}{hint}", redact_url(&url)))
}

/// The configured upstreams, and those the MCP and A2A faces serve (owned by them).
fn registry(cfg: &Config, mcp: &McpGateway, a2a: &switchyard_a2a::A2aAgents) -> Registry {
    let mut registry = Registry::from_config(cfg.demos(), &cfg.server.data_dir);
    for u in mcp.upstreams() {
        registry.add(u.name, Ingress::Mcp, u.upstream, u.operations, EffectClass::Write);
    }
    for u in a2a.upstreams() {
        registry.add(u.name, Ingress::A2a, u.upstream, [], u.effect);
    }
    registry
}

/// Fault injection for crash tests (`SWITCHYARD_FAULT_PAUSE`), else none.
fn fault_hook() -> anyhow::Result<Arc<dyn FaultHook>> {
    Ok(match PauseAt::from_env().map_err(anyhow::Error::msg)? {
        Some(p) => {
            warn!(point = ?p.0, "FAULT INJECTION IS ON (SWITCHYARD_FAULT_PAUSE): for crash tests only");
            Arc::new(p)
        }
        None => Arc::new(NoFaults),
    })
}

/// This replica's worker id, kept in `<data_dir>/worker-id` so that a restart is the same
/// worker: it ends its predecessor's leases at start-up and recovers them at once (fenced as any
/// takeover) instead of waiting them out. Each replica needs its own data dir.
fn worker_identity(data_dir: &std::path::Path) -> anyhow::Result<WorkerId> {
    let path = data_dir.join("worker-id");
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|e| anyhow::anyhow!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = WorkerId::new();
            std::fs::write(&path, format!("{id}\n")).with_context(|| format!("cannot write {}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))),
    }
}

/// The log of `partition`: in the store's own commits where it has them (SQLite's group
/// commit), else a chain writer that batches appends.
pub fn audit_log(
    store: &Arc<dyn switchyard_contract::AuditStore>,
    partition: String,
) -> Arc<dyn switchyard_contract::AuditLog> {
    store
        .log_in_commits(&partition)
        .unwrap_or_else(|| Arc::new(switchyard_policy::audit::AuditWriter::start(store.clone(), partition)))
}

/// Signs a checkpoint of every audit partition's head when the log moved: every `every`, and
/// as soon as it is [`CHECKPOINT_MAX_BEHIND`](switchyard_policy::audit::CHECKPOINT_MAX_BEHIND)
/// rows past the last one (the heads are read once a second, and signed as read).
async fn audit_checkpoints(
    store: Arc<dyn switchyard_contract::AuditStore>,
    key: switchyard_policy::grants::GrantKey,
    every: Duration,
) {
    let mut last: Vec<switchyard_contract::ChainHead> = Vec::new();
    let mut signed_at = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(every.min(Duration::from_secs(1))).await;
        let heads = match store.heads().await {
            Ok(heads) => heads,
            Err(e) => {
                tracing::warn!(error = %e, "audit heads not read; no checkpoint now");
                continue;
            }
        };
        let due =
            signed_at.elapsed() >= every || behind(&last, &heads) >= switchyard_policy::audit::CHECKPOINT_MAX_BEHIND;
        if heads == last || !due {
            continue;
        }
        signed_at = tokio::time::Instant::now();
        if sign_checkpoint(store.as_ref(), &key, &heads).await {
            last = heads;
        }
    }
}

/// How many rows `now` holds past `signed`, over every partition.
fn behind(signed: &[switchyard_contract::ChainHead], now: &[switchyard_contract::ChainHead]) -> u64 {
    now.iter()
        .map(|h| h.seq.saturating_sub(signed.iter().find(|s| s.partition == h.partition).map_or(0, |s| s.seq)))
        .sum()
}

/// Signs a checkpoint of `heads`; whether one was written.
async fn sign_checkpoint(
    store: &dyn switchyard_contract::AuditStore,
    key: &switchyard_policy::grants::GrantKey,
    heads: &[switchyard_contract::ChainHead],
) -> bool {
    match switchyard_policy::audit::sign_heads(store, key, heads).await {
        Ok(Some(stored)) => {
            tracing::debug!(checkpoint = %stored.id, partitions = heads.len(), "audit checkpoint signed");
            true
        }
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(error = %e, "audit checkpoint not written");
            false
        }
    }
}

/// Runs the gateway until `shutdown` resolves, then drains HTTP and the engine for up to the
/// configured grace period and releases every lease still held.
pub async fn serve(cfg: Config, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    serve_announcing(cfg, shutdown, None).await
}

/// [`serve`], telling `ready` the bound address instead of printing the banner (a gateway run
/// inside another command, e.g. `switchyard conformance --through-gateway`).
pub async fn serve_announcing(
    cfg: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ready: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let app = App::build(&cfg).await?;
    let listener = tokio::net::TcpListener::bind(cfg.server.listen).await.map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                ": another process listens there; stop it, or choose another address with --listen ADDR"
            }
            std::io::ErrorKind::AddrNotAvailable => {
                ": this machine has no such address; use one of its own with --listen ADDR"
            }
            _ => "",
        };
        anyhow::anyhow!("cannot listen on {}: {e}{hint}", cfg.server.listen)
    })?;
    let addr: SocketAddr = listener.local_addr()?;
    let mut background = app.start_background(&cfg).await?;
    let undiscovered = app.mcp.discover().await;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let metrics_addr = match cfg.server.metrics_listen {
        Some(at) => {
            let listener = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("cannot listen on {at} for /metrics"))?;
            let bound = listener.local_addr()?;
            let mut stop = stop_rx.clone();
            let metrics = axum::serve(nodelay(listener), app.metrics_router().into_make_service())
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|s| *s).await;
                });
            background.spawn(async move {
                if let Err(e) = metrics.await {
                    warn!(error = %e, "the metrics listener stopped");
                }
            });
            Some(bound)
        }
        None => None,
    };
    // `into_make_service` resolves the routes once: a router handed to `serve` as it is would be
    // rebuilt for every connection (axum 0.8's `with_state(())` per connection: a copy of the route
    // table and a clone of every route's service, ~35 kB that a long-lived stream keeps).
    let routes = app.router(&cfg).into_make_service();
    let stopped = async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    };
    let server = match &cfg.server.tls {
        Some(tls) => {
            let serve = axum::serve(crate::tls::listen(listener, tls)?, routes).with_graceful_shutdown(stopped);
            tokio::spawn(async move { serve.await })
        }
        None => {
            let serve = axum::serve(nodelay(listener), routes).with_graceful_shutdown(stopped);
            tokio::spawn(async move { serve.await })
        }
    };
    info!(
        %addr,
        store = %redact_url(&cfg.store_url()),
        data_dir = %cfg.server.data_dir.display(),
        worker = %app.engine.worker(),
        startup_ms = started.elapsed().as_millis(),
        "switchyard ready"
    );
    if let Some(ready) = ready {
        let _ = ready.send(addr);
    } else {
        banner(&cfg, &app, addr, metrics_addr, &undiscovered);
    }
    shutdown.await;
    info!("shutting down: draining HTTP and in-flight invocations");
    app.a2a.close();
    stop_tx.send_replace(true);
    let grace = Duration::from_millis(cfg.server.shutdown_grace_ms);
    let (http, engine) = tokio::join!(tokio::time::timeout(grace, server), app.engine.shutdown(grace));
    if http.is_err() {
        warn!("HTTP connections still open after the grace period; closing them");
    }
    app.finish(&cfg, background).await;
    engine?;
    Ok(())
}

/// The listener, its connections with TCP_NODELAY: responses go out as they are written
/// (without it, a response written in two parts waits for the client's delayed ACK, about 40 ms,
/// on a kept-alive connection).
fn nodelay(listener: tokio::net::TcpListener) -> impl axum::serve::Listener<Addr = SocketAddr> {
    use axum::serve::ListenerExt as _;
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    })
}

/// What `switchyard serve` prints on stdout once it listens.
fn banner(cfg: &Config, app: &App, addr: SocketAddr, metrics_addr: Option<SocketAddr>, undiscovered: &[String]) {
    let scheme = if cfg.server.tls.is_some() { "https" } else { "http" };
    println!("switchyard ready: listening on {scheme}://{addr}");
    println!("  store:       {}", redact_url(&cfg.store_url()));
    println!("  data dir:    {}", cfg.server.data_dir.display());
    println!("  admin token: {}", app.token_source);
    if let Some(at) = metrics_addr {
        println!("  metrics:     http://{at}/metrics");
    }
    for server in cfg.mcp.effective_servers() {
        println!("  mcp:         {scheme}://{addr}{}", server.path);
    }
    for agent in cfg.a2a.agents.iter().filter(|a| a.exposed) {
        println!(
            "  a2a:         {scheme}://{addr}{} (card: {scheme}://{addr}{}/.well-known/agent-card.json)",
            agent.base_path(),
            agent.base_path()
        );
    }
    if !undiscovered.is_empty() {
        println!("  mcp upstreams not reachable yet (retrying): {}", undiscovered.join(", "));
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// The cards' security declaration for the configured OAuth resource and issuers.
fn a2a_security(oauth: &switchyard_oauth::AuthConfig) -> (serde_json::Value, serde_json::Value) {
    let issuers: Vec<&str> = oauth.issuers.iter().map(|i| i.issuer.as_str()).collect();
    switchyard_a2a::card::security(&oauth.resource, &issuers, crate::auth::scope::A2A)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_behind_the_last_checkpoint_are_counted_over_every_partition() {
        let head = |p: &str, seq| switchyard_contract::ChainHead { partition: p.into(), seq, hash: String::new() };
        assert_eq!(behind(&[], &[head("a", 5), head("b", 2)]), 7, "nothing signed yet");
        assert_eq!(behind(&[head("a", 3)], &[head("a", 5), head("b", 2)]), 4);
        assert_eq!(behind(&[head("a", 5), head("b", 2)], &[head("a", 5), head("b", 2)]), 0);
    }
}
