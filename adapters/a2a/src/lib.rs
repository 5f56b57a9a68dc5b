//! `switchyard-a2a`: the A2A 1.0 face of the gateway. One face ([`face`]) behind
//! three bindings: JSON-RPC and HTTP+JSON with SSE ([`http`]) and gRPC ([`grpc`]). Tasks are
//! durable rows of the contract's task store, changed only through the [`hub`]; every message
//! to an agent is an invocation of the engine, so it is recorded before the agent runs, and a
//! resent message (same caller, `messageId` and content) is the same invocation while it runs and
//! for a window after it ended (`message_dedupe`).
//! Internal agents behind the gateway are reached with [`client`] and mirrored by [`proxy`].

pub mod agent;
pub mod bridge;
mod cancel;
pub mod card;
pub mod client;
pub mod config;
pub mod error;
pub mod face;
pub mod grpc;
pub mod http;
pub mod hub;
pub mod operation;
pub mod origin;
pub mod proxy;
pub mod push;
pub mod run;
pub mod sealing;
#[cfg(test)]
mod testing;
pub mod tools;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use switchyard_contract::{ArtifactKeeper, Catalog, EffectClass, Invocations, PushOutbox, TaskStore, Upstream};

pub use config::{A2aConfig, AgentConfig};
pub use error::{A2aError, Profile};

/// An agent as an engine upstream, for the registry.
pub struct RegisteredAgent {
    pub name: String,
    pub upstream: Arc<dyn Upstream>,
    /// The effect of every operation: the A2A face's `SendMessage`, the bridge's `send_message`
    /// and skills.
    pub effect: EffectClass,
}

impl std::fmt::Debug for RegisteredAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredAgent").field("name", &self.name).finish_non_exhaustive()
    }
}

/// What the agents work with, all present before they are built.
pub struct A2aPorts {
    /// The driving port the `tools` agents and the bridge submit through (the engine that calls
    /// the agents, held weakly: see `EngineBuilder::build_cyclic`).
    pub engine: Arc<dyn Invocations>,
    pub tasks: Arc<dyn TaskStore>,
    /// Where the hub's task changes queue push deliveries.
    pub outbox: Arc<dyn PushOutbox>,
    /// Where large artifact parts go (the gateway's artifact store).
    pub keeper: Option<Arc<dyn ArtifactKeeper>>,
    /// The upstream tools `tools` agents expose.
    pub catalog: Option<Arc<dyn Catalog>>,
    /// (PostgreSQL) task followers are woken by other replicas' changes heard there.
    pub feed: Option<Arc<dyn switchyard_contract::ChangeFeed>>,
}

impl std::fmt::Debug for A2aPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aPorts").finish_non_exhaustive()
    }
}

/// The configured agents, built before the engine that calls them (with its driving port).
pub struct A2aAgents {
    config: Arc<A2aConfig>,
    hub: hub::Hub,
    /// Where the hub's task changes queue push deliveries.
    outbox: Arc<dyn PushOutbox>,
    /// The upstream agents, by agent name.
    proxies: Arc<HashMap<String, Arc<proxy::Proxy>>>,
    /// The `tools` agents, by agent name.
    tools: Arc<HashMap<String, Arc<tools::ToolsAgent>>>,
    /// The driving port (the `tools` agents and the bridge call through it).
    engine: Arc<dyn Invocations>,
    signer: Option<Arc<card::CardSigner>>,
}

impl std::fmt::Debug for A2aAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgents").field("agents", &self.config.agents.len()).finish_non_exhaustive()
    }
}

impl A2aAgents {
    /// `sealer`: the key for webhook credentials at rest.
    pub fn new(
        config: A2aConfig,
        ports: A2aPorts,
        sealer: sealing::CredentialSealer,
    ) -> Result<Self, switchyard_contract::InvalidConfig> {
        let A2aPorts { engine, tasks, outbox, keeper, catalog, feed } = ports;
        let mut seen = std::collections::HashSet::new();
        for a in &config.agents {
            a.validate()?;
            if !seen.insert(a.name.clone()) {
                return Err(format!("a2a agent `{}` is configured twice", a.name).into());
            }
        }
        let proxies = config
            .agents
            .iter()
            .filter_map(|a| {
                let url = a.card_url.clone()?;
                let timeout = std::time::Duration::from_millis(a.timeout_ms.unwrap_or(60_000));
                Some((a.name.clone(), proxy::Proxy::new(url, timeout, a.interface_hosts.clone())))
            })
            .collect();
        let mut tools = HashMap::new();
        for a in config.agents.iter().filter(|a| a.kind == agent::AgentKind::Tools) {
            let Some(catalog) = catalog.clone() else {
                return Err(format!("a2a agent `{}`: kind tools needs the MCP upstreams' catalog", a.name).into());
            };
            let agent = tools::ToolsAgent::new(
                catalog,
                tools::Exposed { upstreams: a.upstreams.clone(), tools: a.tools.clone() },
                config.tool_result_max_bytes,
                engine.clone(),
            );
            tools.insert(a.name.clone(), Arc::new(agent));
        }
        let signer = match &config.card_signing_key_file {
            // A signed card must not carry whatever Host a request named: it needs a fixed URL.
            Some(_) if config.public_url.is_none() => {
                return Err("a2a.card_signing_key_file needs a2a.public_url: a signed card names a fixed URL, \
                            never the request's Host"
                    .into());
            }
            Some(path) => {
                let pem = std::fs::read_to_string(path)
                    .map_err(|e| format!("a2a.card_signing_key_file {}: {e}", path.display()))?;
                let kid = config.card_signing_kid.clone().unwrap_or_else(|| "switchyard-card-key".into());
                Some(Arc::new(card::CardSigner::from_pem(&pem, kid)?))
            }
            None => None,
        };
        let hub = hub::Hub::new(tasks, keeper, config.inline_max_bytes, sealer).with_feed(feed);
        Ok(Self {
            config: Arc::new(config),
            hub,
            outbox,
            proxies: Arc::new(proxies),
            tools: Arc::new(tools),
            engine,
            signer,
        })
    }

    /// The agents' engine upstreams, for the registry. A built-in agent's run is replay-safe
    /// (it resumes from its last recorded step), so its `SendMessage` is `read_only`: a run lost
    /// in a crash is driven again (a `tools` agent's tool call is keyed by the run, so the run
    /// driven again attaches to it). An upstream agent's is a `write`: never resent blindly.
    pub fn upstreams(&self) -> Vec<RegisteredAgent> {
        self.config
            .agents
            .iter()
            .map(|a| {
                let proxy = self.proxies.get(&a.name).cloned();
                let effect = if proxy.is_some() { EffectClass::Write } else { EffectClass::ReadOnly };
                let tools = self.tools.get(&a.name).cloned();
                let up: Arc<dyn Upstream> =
                    agent::AgentUpstream::new(a.name.clone(), a.kind, self.hub.clone(), proxy, tools);
                RegisteredAgent { name: a.upstream(), upstream: up, effect }
            })
            .collect()
    }

    /// The agents, for faces of other protocols (the bridge): every agent but `tools` ones.
    pub fn bridge(&self) -> Arc<bridge::A2aCatalog> {
        Arc::new(bridge::A2aCatalog::new(
            &self.config.agents,
            self.proxies.clone(),
            self.hub.clone(),
            self.engine.clone(),
        ))
    }

    /// What this process's A2A side did: open streams, push deliveries.
    pub fn stats(&self) -> hub::StatsNow {
        self.hub.stats.now()
    }

    /// The face, once the engine runs. `security`: the cards' `securitySchemes` and
    /// `securityRequirements`.
    pub fn face(&self, engine: Arc<dyn Invocations>, security: Option<(Value, Value)>) -> face::A2aFace {
        let agents: HashMap<_, _> = self
            .config
            .agents
            .iter()
            .filter(|a| a.exposed)
            .map(|a| {
                let entry = face::AgentEntry { config: a.clone(), tools: self.tools.get(&a.name).cloned() };
                (a.name.clone(), Arc::new(entry))
            })
            .collect();
        face::A2aFace {
            engine,
            hub: self.hub.clone(),
            config: self.config.clone(),
            agents: Arc::new(agents),
            proxies: self.proxies.clone(),
            signer: self.signer.clone(),
            security: security.map(Arc::new),
        }
    }

    /// The background work of the agents, to run until shutdown: push delivery from the outbox
    /// (when any agent is configured). (Upstream agents' lost sends are resolved by the engine's
    /// recovery, through their upstreams.)
    pub fn background(&self) -> Option<futures::future::BoxFuture<'static, ()>> {
        use futures::FutureExt as _;
        (!self.config.agents.is_empty())
            .then(|| push::run(self.hub.clone(), self.outbox.clone(), self.config.push.clone()).boxed())
    }

    /// Ends open streams so the listener can drain at shutdown.
    pub fn close(&self) {
        self.hub.close();
    }
}
