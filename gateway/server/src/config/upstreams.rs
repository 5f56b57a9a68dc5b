//! `[[upstreams]]`: everything the gateway calls, one entry each, its protocol as its `kind`;
//! each entry says which faces serve it (`expose`). Lowered on load into the adapters' own
//! settings (`mcp.upstreams`, `a2a.agents`), which the older file form wrote by hand.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchyard_a2a::agent::AgentKind;
use switchyard_a2a::config::AgentConfig;
use switchyard_contract::EffectClass;
use switchyard_mcp::config::{McpUpstreamConfig, TaskSupport, UpstreamKind, UpstreamOAuth};

/// Something the gateway calls. Each kind takes only its own keys: a key of another kind is
/// refused by name.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Upstream {
    /// An MCP server, over Streamable HTTP (`url`) or as a child process speaking stdio
    /// (`command`). Its tools, prompts and resources are served on `/mcp`; with `"a2a"` in
    /// `expose` its tools are also an A2A agent of the same name (one skill per tool).
    Mcp(McpServer),
    /// An A2A agent. With `card_url`, an agent elsewhere: served as `/a2a/<name>` with a card of
    /// the gateway's own, and with `"mcp"` in `expose` its skills (and `send_message`, `get_task`,
    /// `cancel_task`) are MCP tools too — the bridge, in one entry. With `agent`, one of the
    /// gateway's own `[[a2a.agents]]` (an `echo` agent, say) as MCP tools.
    A2a(A2aAgent),
    /// The built-in demo upstream, for trying the admin API without any server: `echo` (a read)
    /// returns its arguments, `count` (a write) appends each physical call to `call_log`.
    Demo(DemoUpstream),
}

/// A face that serves an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Face {
    /// The MCP face (`/mcp` and the `[[mcp.servers]]` endpoints).
    Mcp,
    /// The A2A face (`/a2a/<name>` on JSON-RPC, HTTP+JSON and gRPC, with its card).
    A2a,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// Unique among the upstreams: `[A-Za-z0-9_-]`, used in tool names, policy rules and paths.
    pub name: String,
    /// Streamable HTTP endpoint (`http://` or `https://`); 2026-07-28 is tried first, then the
    /// legacy handshake. Exactly one of `url` and `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// stdio: the program and its arguments; the gateway spawns, supervises and restarts it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// stdio: variables set for the child. It does not inherit the gateway's environment (which
    /// holds its tokens and database URL): only `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`,
    /// `TERM`, `LANG`, `LC_ALL`, `TZ`, `TMPDIR`, the names in `inherit_env`, and these.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// stdio: more of the gateway's variables the child may inherit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherit_env: Vec<String>,
    /// Prepended to its tool and prompt names. Default `<name>__`; `""` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Effect class per tool (its upstream name): `read_only` or `write`. From here only, never
    /// from the server's annotations; a tool not listed is a `write`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operations: BTreeMap<String, EffectClass>,
    /// MCP Tasks per tool: `optional` (default), `required` or `forbidden`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks: BTreeMap<String, TaskSupport>,
    /// An HTTP server protected by OAuth: how the gateway gets its own token for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<UpstreamOAuth>,
    /// Connections (HTTP, default 16) or child processes (stdio, default 2) kept; each carries
    /// one call at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<usize>,
    /// The faces serving it: `["mcp"]` by default; add `"a2a"` for an A2A agent of its tools
    /// (a `tools` agent in `[[a2a.agents]]` chooses tools and names more finely).
    #[serde(default = "mcp_face")]
    pub expose: Vec<Face>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aAgent {
    /// Unique among the upstreams and the `[[a2a.agents]]`: `[A-Za-z0-9_-]`, 1 to 64; the agent is
    /// served under `/a2a/<name>`, its MCP tools are named `<name>__<skill>`.
    pub name: String,
    /// The agent card URL of an agent elsewhere. Exactly one of `card_url` and `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_url: Option<String>,
    /// One of the gateway's own `[[a2a.agents]]` (by name), served as MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The faces serving it: `["a2a"]` by default with `card_url`, `["mcp"]` (the only choice)
    /// with `agent`. `["a2a", "mcp"]` bridges the agent to MCP clients and keeps it for A2A ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose: Option<Vec<Face>>,
    /// Hosts (`host`, or `host:port`) the card's interfaces may name besides the card's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interface_hosts: Vec<String>,
    /// How long one read from the agent may take (default 60 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The card's description on the A2A face (default: the agent's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The card's version on the A2A face (default `1.0.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Offer streaming to A2A callers (default on).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub streaming: bool,
    /// Offer push notifications to A2A callers (default on).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub push_notifications: bool,
    /// Serve an extended card to authenticated callers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extended_card: bool,
    /// Extension URIs A2A callers must declare in `A2A-Extensions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_extensions: Vec<String>,
    /// A resent message (same caller, `messageId` and content) attaches to its first send
    /// instead of running again (default on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_dedupe: Option<bool>,
    /// How long after its run ended a resent message still answers with that run (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_dedupe_window_s: Option<u64>,
    /// The OAuth scope an A2A caller needs (default `a2a:call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// MCP face: prepended to its tool names. Default `<name>__`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// MCP face: effect class per skill (and `send_message`); one not listed is a `write`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operations: BTreeMap<String, EffectClass>,
    /// MCP face: MCP Tasks per skill: `optional` (default), `required` or `forbidden`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks: BTreeMap<String, TaskSupport>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DemoUpstream {
    /// Unique among the upstreams: `[A-Za-z0-9_-]`, 1 to 64; calls and policy rules name it.
    pub name: String,
    /// Effect class per operation; one not listed is a `write`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operations: BTreeMap<String, EffectClass>,
    /// Where `count` logs each physical call (default `<data_dir>/demo-calls.log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_log: Option<PathBuf>,
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_true(b: &bool) -> bool {
    *b
}

fn mcp_face() -> Vec<Face> {
    vec![Face::Mcp]
}

impl DemoUpstream {
    /// The upstream a configuration without `[[upstreams]]` has.
    pub fn builtin() -> Self {
        Self {
            name: "demo".into(),
            operations: BTreeMap::from([("echo".into(), EffectClass::ReadOnly), ("count".into(), EffectClass::Write)]),
            call_log: None,
        }
    }
}

impl Upstream {
    pub fn name(&self) -> &str {
        match self {
            Self::Mcp(u) => &u.name,
            Self::A2a(u) => &u.name,
            Self::Demo(u) => &u.name,
        }
    }
}

/// What one entry becomes in the adapters' settings.
#[derive(Debug, Default)]
pub struct Lowered {
    pub mcp: Option<McpUpstreamConfig>,
    pub agent: Option<AgentConfig>,
}

impl McpServer {
    fn lower(&self, key: &str) -> Result<Lowered, String> {
        let mcp = McpUpstreamConfig {
            name: self.name.clone(),
            kind: UpstreamKind::Mcp,
            agent: None,
            url: self.url.clone(),
            command: self.command.clone(),
            env: self.env.clone(),
            inherit_env: self.inherit_env.clone(),
            prefix: self.prefix.clone(),
            operations: self.operations.clone(),
            tasks: self.tasks.clone(),
            oauth: self.oauth.clone(),
            max_sessions: self.max_sessions,
        };
        mcp.check(key).map_err(|e| e.0)?;
        if !self.expose.contains(&Face::Mcp) {
            return Err(format!(
                "{key}.expose: an MCP server is always served on `mcp` (restrict it with [[mcp.servers]])"
            ));
        }
        let agent = self.expose.contains(&Face::A2a).then(|| {
            let mut agent = AgentConfig::new(self.name.clone(), AgentKind::Tools);
            agent.upstreams = vec![self.name.clone()];
            agent
        });
        Ok(Lowered { mcp: Some(mcp), agent })
    }
}

impl A2aAgent {
    fn lower(&self, key: &str) -> Result<Lowered, String> {
        let faces = self.expose.clone().unwrap_or_else(|| match self.agent {
            Some(_) => vec![Face::Mcp],
            None => vec![Face::A2a],
        });
        let on_a2a = faces.contains(&Face::A2a);
        let agent = match (&self.card_url, &self.agent) {
            (Some(card_url), None) => {
                if !(card_url.starts_with("http://") || card_url.starts_with("https://")) {
                    return Err(format!("{key}.card_url must start with http:// or https://"));
                }
                let mut agent = AgentConfig::new(self.name.clone(), AgentKind::Upstream);
                agent.card_url = Some(card_url.clone());
                agent.interface_hosts = self.interface_hosts.clone();
                agent.timeout_ms = self.timeout_ms;
                agent.description = self.description.clone();
                if let Some(v) = &self.version {
                    agent.version = v.clone();
                }
                agent.streaming = self.streaming;
                agent.push_notifications = self.push_notifications;
                agent.extended_card = self.extended_card;
                agent.required_extensions = self.required_extensions.clone();
                agent.message_dedupe = self.message_dedupe;
                agent.message_dedupe_window_s = self.message_dedupe_window_s;
                agent.scope = self.scope.clone();
                agent.exposed = on_a2a;
                agent.validate().map_err(|e| format!("{key}: {}", e.0))?;
                Some(agent)
            }
            (None, Some(_)) => {
                let agent_only = !self.interface_hosts.is_empty()
                    || self.timeout_ms.is_some()
                    || self.description.is_some()
                    || self.version.is_some()
                    || !self.streaming
                    || !self.push_notifications
                    || self.extended_card
                    || !self.required_extensions.is_empty()
                    || self.message_dedupe.is_some()
                    || self.message_dedupe_window_s.is_some()
                    || self.scope.is_some();
                if on_a2a || agent_only {
                    return Err(format!(
                        "{key}: with `agent` the agent is one of the gateway's own, served on the A2A face by its \
                         [[a2a.agents]] entry: only name, agent, prefix, operations, tasks and expose = [\"mcp\"] apply"
                    ));
                }
                None
            }
            _ => return Err(format!("{key}: set exactly one of `card_url` and `agent`")),
        };
        let mcp = faces.contains(&Face::Mcp).then(|| McpUpstreamConfig {
            name: self.name.clone(),
            kind: UpstreamKind::A2a,
            agent: Some(self.agent.clone().unwrap_or_else(|| self.name.clone())),
            url: None,
            command: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: Vec::new(),
            prefix: self.prefix.clone(),
            operations: self.operations.clone(),
            tasks: self.tasks.clone(),
            oauth: None,
            max_sessions: None,
        });
        if mcp.is_none() && (self.prefix.is_some() || !self.operations.is_empty() || !self.tasks.is_empty()) {
            return Err(format!("{key}: prefix, operations and tasks are for the MCP face: add \"mcp\" to expose"));
        }
        if let Some(m) = &mcp {
            m.check(key).map_err(|e| e.0)?;
        }
        Ok(Lowered { mcp, agent })
    }
}

impl Upstream {
    /// Checks the entry and says what it becomes; messages start with `key`.
    pub fn lower(&self, key: &str) -> Result<Lowered, String> {
        let name = self.name();
        if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        {
            return Err(format!("{key}.name `{name}` must be 1 to 64 of [A-Za-z0-9_-]"));
        }
        match self {
            Self::Mcp(u) => u.lower(key),
            Self::A2a(u) => u.lower(key),
            Self::Demo(_) => Ok(Lowered::default()),
        }
    }
}
