//! `switchyard-mcp`: the gateway as an MCP server over upstream MCP servers, on rmcp (the
//! official Rust SDK) as the wire layer.
//!
//! - [`client`]: pooled upstream sessions (Streamable HTTP or a supervised stdio child), one
//!   call per session at a time so that progress, log messages and server→client requests are
//!   relayed to the client that made the call.
//! - [`catalog`]: discovery, namespacing and schema pinning (a changed tool is withheld until
//!   approved again).
//! - [`upstream`]: the contract's `Upstream` for MCP: each attempt is one upstream `tools/call`.
//! - [`face`]: the server face (both eras on one URL), every `tools/call` a durable invocation,
//!   MRTR mediation with sealed `requestState`.
//!
//! [`McpGateway`] wires them: build it before the engine (the engine needs its upstreams), then
//! hand it the engine to get the HTTP routes.

// Sampling, roots and logging are deprecated in 2026-07-28 but still what legacy (2025-11-25)
// clients and upstreams speak; the gateway relays them.
#![allow(deprecated)]

pub mod bridge;
pub mod catalog;
pub mod client;
pub mod config;
pub mod connect;
pub mod error;
pub mod face;
pub mod http;
pub mod oauth;
pub mod sessions;
pub mod skills;
pub mod stdio;
pub mod upstream;
pub mod vault;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::RequestStateCodec;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use switchyard_contract::{BindingStore, EffectClass, Invocations, SecretVault, Upstream};
use tracing::warn;
pub use vault::Sealer;

pub use catalog::{Catalog, ToolStatus};
pub use config::{
    McpConfig, McpUpstreamConfig, OAuthFlow, TaskSupport, UpstreamKind, UpstreamOAuth, VirtualServerConfig,
};
pub use face::{IDEMPOTENCY_KEY, INVOCATION_META, McpFace};
pub use switchyard_contract::Secret;

use crate::client::Pool;
use crate::face::Shared;
use crate::upstream::McpUpstream;

/// Host names always accepted (DNS-rebinding protection lets only these and the configured
/// ones through).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The MCP side of the gateway.
pub struct McpGateway {
    cfg: McpConfig,
    pools: HashMap<String, Arc<Pool>>,
    catalog: Arc<Catalog>,
}

impl std::fmt::Debug for McpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpGateway").field("catalog", &self.catalog).finish_non_exhaustive()
    }
}

/// One upstream as the engine's registry needs it.
#[allow(missing_debug_implementations)]
pub struct RegisteredUpstream {
    pub name: String,
    pub upstream: Arc<dyn Upstream>,
    pub operations: BTreeMap<String, EffectClass>,
}

impl McpGateway {
    /// Creates the pools (no connection yet). `credentials`: where upstream OAuth tokens are
    /// kept (sealed) for the `authorization_code` flow.
    pub fn new(
        cfg: McpConfig,
        bindings: Arc<dyn BindingStore>,
        credentials: Option<(Arc<dyn SecretVault>, Sealer)>,
    ) -> Self {
        let timeout = Duration::from_millis(cfg.connect_timeout_ms);
        let pools: HashMap<String, Arc<Pool>> =
            cfg.mcp_servers().map(|u| (u.name.clone(), Pool::new(u.clone(), timeout, credentials.clone()))).collect();
        let order = cfg.mcp_servers().map(|u| u.name.clone()).collect();
        Self { cfg, pools, catalog: Arc::new(Catalog::new(order, bindings)) }
    }

    pub fn upstreams(&self) -> Vec<RegisteredUpstream> {
        self.cfg
            .upstreams
            .iter()
            .filter_map(|u| {
                let pool = self.pools.get(&u.name)?.clone();
                // Skill file reads are reads, whatever the operations table says of tools.
                let mut operations = u.operations.clone();
                operations.insert(skills::SKILL_READ.to_string(), EffectClass::ReadOnly);
                Some(RegisteredUpstream {
                    name: u.name.clone(),
                    upstream: Arc::new(McpUpstream::new(pool)),
                    operations,
                })
            })
            .collect()
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.clone()
    }

    /// The upstreams' tools for faces of other protocols (the bridge).
    pub fn bridge(&self) -> Arc<bridge::McpCatalog> {
        let effects = self.cfg.upstreams.iter().map(|u| (u.name.clone(), u.operations.clone())).collect();
        Arc::new(bridge::McpCatalog::new(self.catalog.clone(), effects))
    }

    /// Discovers every upstream once (in parallel, each bounded by the connect timeout), then
    /// keeps them current in the background: an upstream that failed is retried every few
    /// seconds, and one that announces a changed list is discovered again. Returns the
    /// upstreams that could not be discovered yet.
    pub async fn discover(&self) -> Vec<String> {
        let runs = self.pools.values().map(|pool| {
            let (pool, catalog) = (pool.clone(), self.catalog.clone());
            async move {
                let ok = catalog
                    .discover(&pool)
                    .await
                    .map_err(|e| warn!(upstream = %pool.spec.name, error = %e, "discovery failed"));
                tokio::spawn(keep_current(pool.clone(), catalog, ok.is_ok()));
                ok.err().map(|_| pool.spec.name.clone())
            }
        });
        futures::future::join_all(runs).await.into_iter().flatten().collect()
    }

    /// The routes of every virtual server, on `engine`. `agents`: the A2A agents' catalog,
    /// for `kind = "a2a"` upstreams; `links`: signs the artifact links results hand out (else
    /// they open only with the caller's own credentials).
    pub fn router(
        &self,
        engine: Arc<dyn Invocations>,
        request_state_key: &[u8],
        agents: Option<Arc<dyn switchyard_contract::Catalog>>,
        links: Option<switchyard_contract::ArtifactLinks>,
    ) -> Result<axum::Router, switchyard_contract::InvalidConfig> {
        let shared = self.shared(engine, request_state_key, agents, links)?;
        let hosts: Vec<String> =
            LOOPBACK_HOSTS.iter().map(|s| s.to_string()).chain(self.cfg.allowed_hosts.iter().cloned()).collect();
        let origins: Vec<String> =
            LOOPBACK_ORIGINS.iter().map(|s| s.to_string()).chain(self.cfg.allowed_origins.iter().cloned()).collect();
        let mut router = axum::Router::new();
        let owners = Arc::new(sessions::SessionOwners::default());
        for server in self.cfg.effective_servers() {
            let path = server.path.clone();
            let face = McpFace::new(shared.clone(), server);
            let http = StreamableHttpServerConfig::default()
                .with_allowed_hosts(hosts.clone())
                .with_allowed_origins(origins.clone())
                .enforce_origin_validation()
                .with_max_request_body_bytes(self.cfg.max_request_body_bytes);
            let service = StreamableHttpService::new(
                move || Ok(face.for_session()),
                Arc::new(LocalSessionManager::default()),
                http,
            );
            router = router.nest_service(&path, service);
        }
        Ok(router.layer(axum::middleware::from_fn_with_state(owners, sessions::bind)))
    }

    /// The default virtual server's face on its own, for a transport of the caller's choosing
    /// (`switchyard stdio`); arguments as for [`router`](Self::router).
    pub fn face(
        &self,
        engine: Arc<dyn Invocations>,
        request_state_key: &[u8],
        agents: Option<Arc<dyn switchyard_contract::Catalog>>,
        links: Option<switchyard_contract::ArtifactLinks>,
    ) -> Result<McpFace, switchyard_contract::InvalidConfig> {
        let shared = self.shared(engine, request_state_key, agents, links)?;
        let server =
            self.cfg.effective_servers().into_iter().next().ok_or_else(|| "no MCP server is configured".to_string())?;
        Ok(McpFace::new(shared, server))
    }

    /// What every face of this gateway shares.
    fn shared(
        &self,
        engine: Arc<dyn Invocations>,
        request_state_key: &[u8],
        agents: Option<Arc<dyn switchyard_contract::Catalog>>,
        links: Option<switchyard_contract::ArtifactLinks>,
    ) -> Result<Arc<Shared>, switchyard_contract::InvalidConfig> {
        // The engine's name for each bridged agent: what its `send_message` targets.
        let mut bridges = Vec::new();
        for u in self.cfg.upstreams.iter().filter(|u| u.kind == UpstreamKind::A2a) {
            let agent = u.agent_name();
            let upstream = agents
                .as_ref()
                .and_then(|a| a.operations(&agent).first().map(|op| op.upstream.clone()))
                .ok_or_else(|| format!("mcp upstream `{}`: no A2A agent `{agent}` to bridge to", u.name))?;
            bridges.push(face::Bridge {
                name: u.name.clone(),
                prefix: u.prefix(),
                agent,
                upstream,
                tasks: u.tasks.clone(),
            });
        }
        let codec = RequestStateCodec::try_new(request_state_key.to_vec())
            .map_err(|e| format!("mcp.request_state_key: {e}"))?;
        Ok(Arc::new(Shared {
            engine,
            catalog: self.catalog.clone(),
            pools: self.pools.clone(),
            codec,
            state_ttl: Duration::from_millis(self.cfg.request_state_ttl_ms),
            call_wait: Duration::from_millis(self.cfg.call_wait_ms),
            task_after: Duration::from_millis(self.cfg.task_after_ms),
            task_poll_ms: self.cfg.task_poll_interval_ms,
            page_size: self.cfg.page_size,
            bridges,
            foreign: agents,
            public_url: self.cfg.public_url.clone(),
            tls: self.cfg.tls,
            artifact_links: links,
            bridge_result_max_bytes: self.cfg.bridge_result_max_bytes,
            held: Arc::default(),
            skills: Arc::new(skills::LocalSkills::load(&self.cfg.skills)?),
            wait_for_approval: self.cfg.wait_for_approval,
        }))
    }

    /// Each upstream's sessions now: (upstream, carrying a call, idle, most allowed), by name.
    pub fn sessions(&self) -> Vec<(String, usize, usize, usize)> {
        let mut all: Vec<_> = self
            .pools
            .iter()
            .map(|(name, pool)| {
                let (in_use, idle, max) = pool.sessions();
                (name.clone(), in_use, idle, max)
            })
            .collect();
        all.sort();
        all
    }

    /// Ends idle upstream sessions (stdio children exit).
    pub async fn close(&self) {
        for pool in self.pools.values() {
            pool.close().await;
        }
    }
}

/// Re-discovers `pool` when it announces a change, and retries it every 5 s until the first
/// discovery succeeds.
async fn keep_current(pool: Arc<Pool>, catalog: Arc<Catalog>, mut discovered: bool) {
    loop {
        if discovered {
            pool.list_changed.notified().await;
        } else {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        match catalog.discover(&pool).await {
            Ok(()) => discovered = true,
            Err(e) => warn!(upstream = %pool.spec.name, error = %e, "discovery failed; retrying"),
        }
    }
}
