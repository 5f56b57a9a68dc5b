//! The `[mcp]` configuration section: upstream MCP servers and the virtual servers (endpoints)
//! the gateway exposes over them. `validate` names the bad key.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use switchyard_contract::{EffectClass, Secret};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// The MCP servers and A2A agents served on the MCP face, from the gateway's `[[upstreams]]`.
    #[schemars(skip)]
    pub upstreams: Vec<McpUpstreamConfig>,
    /// Endpoints. Empty with upstreams configured: one endpoint at `/mcp` over all of them.
    pub servers: Vec<VirtualServerConfig>,
    /// HMAC key (at least 32 bytes) sealing the `requestState` the gateway hands to clients
    /// during multi-round tools/call. Every replica needs the same key. Empty: a random key is
    /// generated into `<data_dir>/mcp-request-state-key` on first start.
    pub request_state_key: Secret,
    /// How long a sealed `requestState` stays valid.
    pub request_state_ttl_ms: u64,
    /// `Host` header values accepted (DNS-rebinding protection). Loopback names are always
    /// accepted; add the public host names the gateway is reached by.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted. Empty: requests carrying an `Origin` must come from a loopback
    /// origin.
    pub allowed_origins: Vec<String>,
    /// How long a tools/call waits for its invocation to settle before answering with an
    /// `isError` result that names the still-running invocation.
    pub call_wait_ms: u64,
    /// Accept MCP calls without credentials, as tenant `default`, subject `anonymous`. Only
    /// allowed while the gateway listens on loopback.
    pub anonymous: bool,
    /// A tools/call from a client that declared the Tasks extension waits this long for its
    /// outcome; still running then, it is answered with a task (the invocation's id).
    pub task_after_ms: u64,
    /// The poll interval suggested to task clients.
    pub task_poll_interval_ms: u64,
    /// AES-256-GCM key (64 hex characters) sealing upstream OAuth tokens in the store. Every
    /// replica needs the same key. Empty: generated into `<data_dir>/mcp-token-key`.
    pub token_key: Secret,
    /// Largest accepted MCP request body.
    pub max_request_body_bytes: usize,
    /// Items per page of tools/list, prompts/list, resources/list.
    pub page_size: usize,
    /// Connecting to and discovering an upstream at start-up gives up after this long (the
    /// upstream is then retried in the background).
    pub connect_timeout_ms: u64,
    /// Base URL of absolute links the face hands out (artifacts of bridged A2A agents), e.g.
    /// `https://gw.example.com`. Unset: the request's `Host`, over plain HTTP.
    pub public_url: Option<String>,
    /// The gateway's listener terminates TLS (set from `server.tls`, not a key of its own): links
    /// are `https://<Host>/…` when `public_url` is unset.
    #[serde(skip)]
    pub tls: bool,
    /// A held call waits for its decision before it answers (set by `switchyard stdio`, whose
    /// client cannot come back for it; not a key of its own).
    #[serde(skip)]
    pub wait_for_approval: bool,
    /// The largest result of a bridged A2A agent (its parts and structured content; artifacts
    /// in the artifact store count as their links) passed on; a larger one is an `isError`
    /// result saying so (the send itself stays recorded as succeeded).
    pub bridge_result_max_bytes: usize,
    /// Local skills (SEP-2640): directories whose sub-folders holding a `SKILL.md` are skills,
    /// served on the endpoints that include them.
    pub skills: Vec<SkillsConfig>,
}

/// One `[[mcp.skills]]` directory.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// The name endpoints include it by (`skills` of `[[mcp.servers]]`).
    pub name: String,
    /// The directory (relative paths from the working directory). Each folder below it with a
    /// `SKILL.md` is a skill, served at `skill://<path from here>/SKILL.md`; a skill over 512
    /// files or 16 MiB is refused (logged), the others still load.
    pub path: std::path::PathBuf,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            upstreams: Vec::new(),
            servers: Vec::new(),
            request_state_key: Secret::default(),
            request_state_ttl_ms: 10 * 60 * 1000,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            call_wait_ms: 60_000,
            anonymous: false,
            task_after_ms: 250,
            token_key: Secret::default(),
            task_poll_interval_ms: 500,
            max_request_body_bytes: 4 * 1024 * 1024,
            page_size: 100,
            connect_timeout_ms: 15_000,
            public_url: None,
            tls: false,
            wait_for_approval: false,
            bridge_result_max_bytes: 16 << 20,
            skills: Vec::new(),
        }
    }
}

/// The variables every stdio upstream inherits from the gateway (what a program needs to find
/// its tools and locale; the same set the official MCP SDKs pass by default).
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// What an upstream is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamKind {
    /// An MCP server.
    #[default]
    Mcp,
    /// An A2A agent (`agent`): its card skills, and `send_message`, `get_task` and
    /// `cancel_task`, as tools (the bridge).
    A2a,
}

/// One upstream: an MCP server over Streamable HTTP (`url`) or stdio (`command`), or an A2A
/// agent (`kind = "a2a"`, `agent`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpUpstreamConfig {
    pub name: String,
    #[serde(default)]
    pub kind: UpstreamKind,
    /// Kind `a2a`: the name of the A2A agent (`[[a2a.agents]]`) whose skills become tools.
    #[serde(default)]
    pub agent: Option<String>,
    /// Streamable HTTP endpoint; 2026-07-28 is tried first, then the legacy handshake.
    #[serde(default)]
    pub url: Option<String>,
    /// stdio: the program and its arguments; the gateway spawns, supervises and restarts it.
    #[serde(default)]
    pub command: Vec<String>,
    /// Environment for a stdio upstream. The child does not inherit the gateway's environment
    /// (which holds its admin token, database URL and cloud credentials): it gets only
    /// [`BASE_ENV`], the variables named in `inherit_env`, and these.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of the gateway's environment variables a stdio upstream may inherit, besides
    /// [`BASE_ENV`].
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// Prepended to the upstream's tool and prompt names. Default `<name>__`; `""` for none.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Effect class per tool (upstream name), from local configuration only; upstream
    /// annotations are never trusted. Tools not listed are `write`.
    #[serde(default)]
    pub operations: BTreeMap<String, EffectClass>,
    /// Tasks extension, per tool (upstream name): `optional` (the default: a call that takes
    /// longer than `mcp.task_after_ms` answers a client that declared the extension with a
    /// task), `required` (such clients always get a task; others get `-32021`), `forbidden`.
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskSupport>,
    /// HTTP upstream protected by OAuth: the gateway gets its own token (client credentials).
    #[serde(default)]
    pub oauth: Option<UpstreamOAuth>,
    /// Connections (HTTP) or child processes (stdio) kept; each carries one call at a time.
    #[serde(default)]
    pub max_sessions: Option<usize>,
}

impl McpUpstreamConfig {
    pub fn prefix(&self) -> String {
        self.prefix.clone().unwrap_or_else(|| format!("{}__", self.name))
    }

    /// The whole environment of a stdio child: [`BASE_ENV`] and `inherit_env` where the gateway
    /// has them, then `env`.
    pub fn child_env(&self) -> Vec<(String, String)> {
        let inherited = BASE_ENV.iter().copied().chain(self.inherit_env.iter().map(String::as_str));
        let mut vars: Vec<(String, String)> =
            inherited.filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
        vars.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars
    }

    /// Kind `a2a`: the A2A agent it serves (`agent`, else the agent of its own name).
    pub fn agent_name(&self) -> String {
        self.agent.clone().unwrap_or_else(|| self.name.clone())
    }

    pub fn max_sessions(&self) -> usize {
        self.max_sessions.unwrap_or(if self.url.is_some() { 16 } else { 2 })
    }

    /// Checks this upstream on its own (not its name's uniqueness); messages start with `key`.
    pub fn check(&self, key: &str) -> Result<(), switchyard_contract::InvalidConfig> {
        let u = self;
        if u.kind == UpstreamKind::A2a {
            if u.url.is_some() || !u.command.is_empty() || u.oauth.is_some() {
                return Err(format!("{key}: an A2A agent takes no url, command or oauth").into());
            }
        } else if u.agent.is_some() {
            return Err(format!("{key}.agent is only for an A2A agent").into());
        }
        match (&u.url, u.command.is_empty()) {
            _ if u.kind == UpstreamKind::A2a => {}
            (Some(url), true) if url.starts_with("http://") || url.starts_with("https://") => {}
            (Some(_), true) => return Err(format!("{key}.url must start with http:// or https://").into()),
            (None, false) => {}
            _ => return Err(format!("{key}: set exactly one of `url` and `command`").into()),
        }
        if let Some(o) = &u.oauth {
            if u.url.is_none() {
                return Err(format!("{key}.oauth needs an HTTP upstream (`url`)").into());
            }
            if o.flow == OAuthFlow::ClientCredentials {
                if o.client_id.is_empty() {
                    return Err(format!("{key}.oauth.client_id must not be empty").into());
                }
                o.secret().map_err(|e| format!("{key}.oauth: {e}"))?;
            } else {
                o.optional_secret().map_err(|e| format!("{key}.oauth: {e}"))?;
            }
        }
        if !(1..=256).contains(&u.max_sessions()) {
            return Err(format!("{key}.max_sessions must be within 1..=256").into());
        }
        let prefix = u.prefix();
        if !prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)) {
            return Err(format!("{key}.prefix `{prefix}` may use only [A-Za-z0-9_.-]").into());
        }
        Ok(())
    }
}

/// The gateway as an OAuth client of one upstream: the authorization server is discovered from
/// the upstream (RFC 9728 → RFC 8414 / OIDC), tokens are requested for `resource` (RFC 8707)
/// and sent only to that upstream. A client's own token is never forwarded.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOAuth {
    /// `client_credentials` (a service identity, SEP-1046) or `authorization_code` (a user
    /// delegates once with `switchyard auth login <upstream>`; tokens and refresh tokens are
    /// kept encrypted in the store and refreshed).
    #[serde(default)]
    pub flow: OAuthFlow,
    /// Pre-registered client id; empty with `authorization_code`: dynamic registration.
    #[serde(default)]
    pub client_id: String,
    /// The secret itself, or empty to read it from the variable `client_secret_env`.
    #[serde(default)]
    pub client_secret: Secret,
    /// The environment variable holding the client secret, read when `client_secret` is empty.
    /// It must be set whenever the configuration is loaded.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The scopes the gateway asks for, e.g. `["billing:read"]`. Empty with
    /// `authorization_code`: the upstream's challenge's, else its `scopes_supported`.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The upstream's resource identifier; default: its `url`.
    #[serde(default)]
    pub resource: Option<String>,
    /// `authorization_code`: the loopback port `switchyard auth login` receives the redirect on
    /// (`http://127.0.0.1:<port>/callback`).
    #[serde(default = "default_redirect_port")]
    pub redirect_port: u16,
}

fn default_redirect_port() -> u16 {
    8976
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OAuthFlow {
    #[default]
    ClientCredentials,
    AuthorizationCode,
}

impl UpstreamOAuth {
    /// The client secret, if one is configured (public clients have none).
    pub fn optional_secret(&self) -> Result<Option<Secret>, switchyard_contract::InvalidConfig> {
        if self.client_secret.0.is_empty() && self.client_secret_env.is_none() {
            return Ok(None);
        }
        self.secret().map(Some)
    }

    /// The client secret, from the config or the named environment variable.
    pub fn secret(&self) -> Result<Secret, switchyard_contract::InvalidConfig> {
        if !self.client_secret.0.is_empty() {
            return Ok(self.client_secret.clone());
        }
        match &self.client_secret_env {
            Some(var) => {
                std::env::var(var).map(Secret).map_err(|_| format!("environment variable {var} is not set").into())
            }
            None => Err("set client_secret or client_secret_env".into()),
        }
    }
}

/// Whether a tool's calls may become tasks (the `io.modelcontextprotocol/tasks` extension).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    Forbidden,
    #[default]
    Optional,
    Required,
}

/// One MCP endpoint exposing a chosen subset of the upstreams' tools, prompts and resources.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VirtualServerConfig {
    /// URL path, e.g. `/mcp` or `/mcp/partners`.
    pub path: String,
    /// Name reported in `serverInfo`.
    #[serde(default)]
    pub name: Option<String>,
    /// Upstreams exposed here; empty means all.
    #[serde(default)]
    pub upstreams: Vec<String>,
    /// Exposed tool and prompt names (after prefixing): exact names, or patterns ending in `*`.
    /// Empty means all.
    #[serde(default)]
    pub tools: Vec<String>,
    /// The instructions this endpoint gives clients when they initialize. Unset: none.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The OAuth scope a caller needs for this endpoint (default `mcp:call`); the operator's
    /// admin token always passes.
    #[serde(default)]
    pub scope: Option<String>,
    /// `[[mcp.skills]]` served here, by name; empty means all. (Upstream skills follow
    /// `upstreams`.)
    #[serde(default)]
    pub skills: Vec<String>,
}

impl VirtualServerConfig {
    /// Whether `name` (already prefixed) is exposed.
    pub fn exposes(&self, name: &str) -> bool {
        self.tools.is_empty()
            || self.tools.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
    }

    pub fn includes(&self, upstream: &str) -> bool {
        self.upstreams.is_empty() || self.upstreams.iter().any(|u| u == upstream)
    }

    /// Whether the local skills `name` are served here.
    pub fn serves_skills(&self, name: &str) -> bool {
        self.skills.is_empty() || self.skills.iter().any(|s| s == name)
    }
}

impl McpConfig {
    /// The upstreams that are MCP servers.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &McpUpstreamConfig> {
        self.upstreams.iter().filter(|u| u.kind == UpstreamKind::Mcp)
    }

    /// The configured servers, or the default `/mcp` over everything.
    pub fn effective_servers(&self) -> Vec<VirtualServerConfig> {
        if self.servers.is_empty() && !(self.upstreams.is_empty() && self.skills.is_empty()) {
            vec![VirtualServerConfig {
                path: "/mcp".into(),
                name: None,
                upstreams: Vec::new(),
                tools: Vec::new(),
                instructions: None,
                scope: None,
                skills: Vec::new(),
            }]
        } else {
            self.servers.clone()
        }
    }

    /// `taken`: names already used by other kinds of upstreams.
    pub fn validate(&self, taken: &HashSet<String>) -> Result<(), switchyard_contract::InvalidConfig> {
        let mut names = HashSet::new();
        for (i, u) in self.upstreams.iter().enumerate() {
            let key = format!("mcp.upstreams[{i}]");
            if u.name.is_empty() || !u.name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b)) {
                return Err(format!("{key}.name `{}` must be non-empty [A-Za-z0-9_-]", u.name).into());
            }
            if !names.insert(u.name.clone()) || taken.contains(&u.name) {
                return Err(format!("{key}.name `{}` is used twice", u.name).into());
            }
            u.check(&key)?;
        }
        let mut paths = HashSet::new();
        for (i, s) in self.servers.iter().enumerate() {
            let key = format!("mcp.servers[{i}]");
            if !s.path.starts_with('/') || s.path.len() < 2 || s.path.ends_with('/') {
                return Err(format!("{key}.path `{}` must start with `/` and not end with one", s.path).into());
            }
            if s.path.starts_with("/admin") || s.path.starts_with("/artifacts") || s.path.starts_with("/.well-known") {
                return Err(format!("{key}.path `{}` collides with a built-in route", s.path).into());
            }
            if !paths.insert(s.path.clone()) {
                return Err(format!("{key}.path `{}` is used twice", s.path).into());
            }
            if let Some(u) = s.upstreams.iter().find(|u| !names.contains(*u)) {
                return Err(format!("{key}.upstreams names `{u}`, which is not an MCP upstream").into());
            }
            if let Some(k) = s.skills.iter().find(|k| !self.skills.iter().any(|l| &l.name == *k)) {
                return Err(format!("{key}.skills names `{k}`, which is not an [[mcp.skills]] entry").into());
            }
        }
        let mut skill_names = HashSet::new();
        for (i, l) in self.skills.iter().enumerate() {
            if l.name.is_empty() || !skill_names.insert(l.name.clone()) {
                return Err(format!("mcp.skills[{i}].name `{}` must be non-empty and unique", l.name).into());
            }
        }
        if !self.request_state_key.0.is_empty() && self.request_state_key.0.len() < 32 {
            return Err("mcp.request_state_key must be at least 32 bytes".into());
        }
        if self.call_wait_ms == 0
            || self.request_state_ttl_ms == 0
            || self.connect_timeout_ms == 0
            || self.task_poll_interval_ms == 0
        {
            return Err(
                "mcp.call_wait_ms, request_state_ttl_ms, connect_timeout_ms and task_poll_interval_ms must be positive"
                    .into(),
            );
        }
        if self.task_after_ms > self.call_wait_ms {
            return Err("mcp.task_after_ms must be at most mcp.call_wait_ms".into());
        }
        if !(1..=1000).contains(&self.page_size) {
            return Err("mcp.page_size must be within 1..=1000".into());
        }
        if self.bridge_result_max_bytes < 1024 {
            return Err("mcp.bridge_result_max_bytes must be at least 1024".into());
        }
        if self.max_request_body_bytes < 1024 {
            return Err("mcp.max_request_body_bytes must be at least 1024".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(name: &str) -> McpUpstreamConfig {
        McpUpstreamConfig {
            name: name.into(),
            kind: UpstreamKind::Mcp,
            agent: None,
            url: Some("http://127.0.0.1:1/mcp".into()),
            command: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: Vec::new(),
            prefix: None,
            operations: BTreeMap::new(),
            tasks: BTreeMap::new(),
            oauth: None,
            max_sessions: None,
        }
    }

    #[test]
    fn validation_names_the_key() {
        let mut cfg = McpConfig { upstreams: vec![upstream("a"), upstream("a")], ..McpConfig::default() };
        assert!(cfg.validate(&HashSet::new()).is_err_and(|m| m.0.contains("mcp.upstreams[1].name")));
        cfg.upstreams[1].name = "b".into();
        cfg.upstreams[1].command = vec!["x".into()];
        assert!(cfg.validate(&HashSet::new()).is_err_and(|m| m.0.contains("exactly one")));
        cfg.upstreams[1].url = None;
        assert!(cfg.validate(&HashSet::new()).is_ok());
        assert!(cfg.validate(&HashSet::from(["a".to_string()])).is_err());
        cfg.servers = vec![VirtualServerConfig {
            path: "/mcp".into(),
            name: None,
            upstreams: vec!["zz".into()],
            tools: vec![],
            instructions: None,
            scope: None,
            skills: vec![],
        }];
        assert!(cfg.validate(&HashSet::new()).is_err_and(|m| m.0.contains("mcp.servers[0].upstreams")));
    }

    #[test]
    fn tool_patterns() {
        let s = VirtualServerConfig {
            path: "/mcp".into(),
            name: None,
            upstreams: vec![],
            tools: vec!["fs__read*".into(), "git__log".into()],
            instructions: None,
            scope: None,
            skills: vec![],
        };
        assert!(s.exposes("fs__read_file"));
        assert!(s.exposes("git__log"));
        assert!(!s.exposes("git__log2"));
        assert!(!s.exposes("fs__write"));
    }
}
