//! The `[a2a]` configuration section.

use serde::Deserialize;

use crate::agent::AgentKind;
use crate::error::Profile;
use crate::push::PushSettings;

#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct A2aConfig {
    /// Error table: `spec` (A2A v1.0.1, default) or `tck` (v1.0.0, as the 1.0 TCK checks).
    pub error_profile: Profile,
    /// Base URL written into agent cards (e.g. `https://agents.example.com`). Unset: the
    /// request's `Host`, over plain HTTP (fine on loopback).
    pub public_url: Option<String>,
    /// The gateway's listener terminates TLS (set from `server.tls`, not a key of its own): cards
    /// name `https://<Host>` when `public_url` is unset.
    #[serde(skip)]
    pub tls: bool,
    /// Serve callers without credentials as tenant `default` (only honoured on loopback).
    pub anonymous: bool,
    /// `Host` names accepted besides loopback names and the host of `public_url`
    /// (DNS-rebinding protection, as for `/mcp`).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides loopback origins and `public_url`'s (`scheme://host`,
    /// `scheme://host:port` or `scheme://host:*`).
    pub allowed_origins: Vec<String>,
    /// How long a blocking SendMessage waits for a terminal or interrupted state (and any send
    /// for its task to start).
    pub call_wait_ms: u64,
    /// Largest request body accepted (then 413).
    pub max_request_body_bytes: usize,
    /// `Cache-Control: max-age` of agent cards.
    pub card_max_age_s: u64,
    /// Artifact parts with more `raw` bytes than this are kept in the artifact store (S3 or the
    /// filesystem) instead of the task row, and read back for clients.
    pub inline_max_bytes: usize,
    /// `tools` agents: the largest tool result (all its parts) a task takes; a larger one fails
    /// the task saying so (the tool call itself succeeded and stays recorded).
    pub tool_result_max_bytes: usize,
    /// Push-notification webhooks: where they may go and how hard to try. A destination is
    /// checked when a configuration is stored, and again after DNS when delivering.
    pub push: PushSettings,
    /// Sign agent cards (ES256) with this PKCS#8 P-256 private key (PEM file).
    pub card_signing_key_file: Option<std::path::PathBuf>,
    /// The `kid` in card signatures (default `switchyard-card-key`).
    pub card_signing_kid: Option<String>,
    /// The gateway's own agents (kinds `echo`, `tck`, `tools`); agents elsewhere are
    /// `[[upstreams]]` of kind `a2a`. (Kind `upstream` here is the older form.)
    pub agents: Vec<AgentConfig>,
    /// The agent also served at `/.well-known/agent-card.json` and to gRPC requests without a
    /// tenant. Unset: the first served of `[[a2a.agents]]`, else of the `[[upstreams]]` of kind
    /// `a2a`.
    pub default_agent: Option<String>,
}

impl Default for A2aConfig {
    fn default() -> Self {
        Self {
            error_profile: Profile::Spec,
            public_url: None,
            tls: false,
            anonymous: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            call_wait_ms: 60_000,
            max_request_body_bytes: 1 << 20,
            card_max_age_s: 300,
            inline_max_bytes: 64 * 1024,
            tool_result_max_bytes: 16 << 20,
            push: PushSettings::default(),
            card_signing_key_file: None,
            card_signing_kid: None,
            agents: Vec::new(),
            default_agent: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// URL-safe name: the agent is served under `/a2a/<name>`.
    pub name: String,
    /// What the agent is: `echo` or `tck` (built in), `tools` (the tools of MCP servers), or
    /// `upstream` (the older form of an `[[upstreams]]` entry of kind `a2a`).
    pub kind: AgentKind,
    /// The card's description. Unset: one saying what the kind does (kind `upstream`: the
    /// agent's own).
    #[serde(default)]
    pub description: Option<String>,
    /// The card's version (kind `upstream`: the agent's own is shown).
    #[serde(default = "default_version")]
    pub version: String,
    /// The card declares streaming. `false`: `SendStreamingMessage` and `SubscribeToTask` are
    /// refused as unsupported.
    #[serde(default = "yes")]
    pub streaming: bool,
    /// The card declares push notifications. `false`: the push configuration methods, and a
    /// message carrying a push configuration, are refused (push notifications not supported).
    #[serde(default = "yes")]
    pub push_notifications: bool,
    /// Serve an extended card to authenticated callers.
    #[serde(default)]
    pub extended_card: bool,
    /// Extension URIs callers must declare in `A2A-Extensions`.
    #[serde(default)]
    pub required_extensions: Vec<String>,
    /// A resent message (same caller, `messageId` and content) is the same message: it attaches
    /// to its first send while that runs, and answers with the same task (or message) for
    /// `message_dedupe_window_s` after it ended, instead of running again. Default: on, except
    /// for kind `tck` (the TCK reuses a `messageId` for new messages).
    #[serde(default)]
    pub message_dedupe: Option<bool>,
    /// How long after its run ended a resent message still answers with that run (default 600).
    #[serde(default)]
    pub message_dedupe_window_s: Option<u64>,
    /// Kind `upstream` (the older form of an `[[upstreams]]` entry of kind `a2a`): the agent card
    /// URL of the agent to expose.
    #[serde(default)]
    pub card_url: Option<String>,
    /// Kind `upstream`: hosts (`host`, or `host:port` for that port only) the card's interfaces
    /// may name besides the card's own host — for an agent whose card is served from one host and
    /// its endpoint from another. Nothing else a card names is followed.
    #[serde(default)]
    pub interface_hosts: Vec<String>,
    /// Kind `upstream`: how long one upstream read may take (default 60 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Kind `tools`: the upstream MCP servers whose tools the agent exposes (by name).
    #[serde(default)]
    pub upstreams: Vec<String>,
    /// Kind `tools`: which of their tools (names, or prefixes ending in `*`); empty: all.
    #[serde(default)]
    pub tools: Vec<String>,
    /// OAuth scope a caller needs (default `a2a:call`).
    #[serde(default)]
    pub scope: Option<String>,
    /// Served on the A2A face (`/a2a/<name>`, its card). `false`: reachable only through the
    /// bridge (an `[[upstreams]]` entry of kind `a2a` naming it as its `agent`).
    #[serde(default = "yes")]
    pub exposed: bool,
}

fn default_version() -> String {
    "1.0.0".into()
}

fn yes() -> bool {
    true
}

/// How long after its run ended a resent message answers with it, by default (10 minutes).
pub const DEDUPE_WINDOW_S: u64 = 600;

/// The OAuth scope an agent needs when its `scope` is not set.
pub const DEFAULT_SCOPE: &str = "a2a:call";

impl AgentConfig {
    /// An agent of `kind` with every other key at its default.
    pub fn new(name: String, kind: AgentKind) -> Self {
        Self {
            name,
            kind,
            description: None,
            version: default_version(),
            streaming: true,
            push_notifications: true,
            extended_card: false,
            required_extensions: Vec::new(),
            message_dedupe: None,
            message_dedupe_window_s: None,
            card_url: None,
            interface_hosts: Vec::new(),
            timeout_ms: None,
            upstreams: Vec::new(),
            tools: Vec::new(),
            scope: None,
            exposed: true,
        }
    }

    /// The OAuth scope a caller of this agent needs.
    pub fn required_scope(&self) -> &str {
        self.scope.as_deref().unwrap_or(DEFAULT_SCOPE)
    }

    /// The engine upstream name of this agent.
    pub fn upstream(&self) -> String {
        format!("a2a-agent-{}", self.name)
    }

    /// Whether a resent message is the same message (see `message_dedupe`).
    pub fn dedupes(&self) -> bool {
        self.message_dedupe.unwrap_or(self.kind != AgentKind::Tck)
    }

    /// How long after its run ended a resent message is still the same message.
    pub fn dedupe_window(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.message_dedupe_window_s.unwrap_or(DEDUPE_WINDOW_S))
    }

    pub fn base_path(&self) -> String {
        format!("/a2a/{}", self.name)
    }

    pub fn validate(&self) -> Result<(), switchyard_contract::InvalidConfig> {
        let ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(format!("a2a agent name `{}` must be 1-64 of [A-Za-z0-9_-]", self.name).into());
        }
        match (self.kind, &self.card_url) {
            (AgentKind::Upstream, None) => {
                Err(format!("a2a agent `{}`: kind upstream needs card_url", self.name).into())
            }
            (AgentKind::Tck | AgentKind::Echo | AgentKind::Tools, Some(_)) => {
                Err(format!("a2a agent `{}`: card_url is only for kind upstream", self.name).into())
            }
            (kind, _) if kind != AgentKind::Upstream && !self.interface_hosts.is_empty() => {
                Err(format!("a2a agent `{}`: interface_hosts is only for kind upstream", self.name).into())
            }
            (AgentKind::Tools, None) if self.upstreams.is_empty() => {
                Err(format!("a2a agent `{}`: kind tools needs upstreams (MCP upstream names)", self.name).into())
            }
            (kind, _) if kind != AgentKind::Tools && !(self.upstreams.is_empty() && self.tools.is_empty()) => {
                Err(format!("a2a agent `{}`: upstreams and tools are only for kind tools", self.name).into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(extra: &str) -> AgentConfig {
        let text = format!("name = \"a\"\nkind = \"upstream\"\ncard_url = \"http://127.0.0.1:1/card\"\n{extra}");
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn message_dedupe_is_on_with_a_ten_minute_window_by_default_and_off_for_the_tck() {
        let default = agent("");
        assert!(default.dedupes());
        assert_eq!(default.dedupe_window(), std::time::Duration::from_secs(600));
        assert!(!agent("message_dedupe = false").dedupes());
        assert_eq!(agent("message_dedupe_window_s = 5").dedupe_window(), std::time::Duration::from_secs(5));
        for bad in ["message_dedupe = \"retries\"", "message_dedupe_window_s = -1"] {
            let text = format!("name = \"a\"\nkind = \"echo\"\n{bad}");
            assert!(toml::from_str::<AgentConfig>(&text).is_err(), "{bad}");
        }
        let tck: AgentConfig = toml::from_str("name = \"t\"\nkind = \"tck\"").unwrap();
        assert!(!tck.dedupes());
        let forced: AgentConfig = toml::from_str("name = \"t\"\nkind = \"tck\"\nmessage_dedupe = true").unwrap();
        assert!(forced.dedupes());
    }
}
