//! Configuration: defaults → TOML file → `SWITCHYARD__SECTION__KEY` environment variables →
//! CLI flags, then [`Config::validate`], whose messages name the bad key. Secrets never print.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchyard_contract::{EngineConfig, WorkerId, engine::RetryPolicy};

pub use switchyard_contract::Secret;
pub use upstreams::{DemoUpstream, Face, Upstream};

pub mod migrate;
pub mod reference;
pub mod upstreams;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub store: StoreConfig,
    pub engine: EngineSection,
    pub admin: AdminConfig,
    pub log: LogConfig,
    /// Everything the gateway calls, one entry each (`[[upstreams]]`), its protocol as its
    /// `kind`. Without any, the built-in `demo` upstream.
    pub upstreams: Vec<Upstream>,
    /// OAuth resource server: who may call, besides the operator's admin token.
    pub auth: Option<switchyard_oauth::AuthConfig>,
    /// Artifact bytes (filesystem or S3), retention classes and the collector.
    pub artifacts: switchyard_artifacts::ArtifactsConfig,
    /// MCP: upstream MCP servers and the endpoints exposing them.
    pub mcp: switchyard_mcp::McpConfig,
    /// A2A: the agents exposed over JSON-RPC, HTTP+JSON and gRPC.
    pub a2a: switchyard_a2a::A2aConfig,
    /// The policy enforcement point (`[policy]`): without it every call runs.
    pub policy: Option<switchyard_policy::PolicyConfig>,
    /// The hash-chained audit log of decisions, approvals, grants and reconciliations.
    pub audit: AuditConfig,
    /// OpenTelemetry traces over OTLP (`[telemetry]`): off unless `otlp_endpoint` is set.
    pub telemetry: TelemetryConfig,
    /// What an older file form became: one line each, then the new form (printed as a warning).
    #[serde(skip)]
    pub deprecations: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            server: ServerConfig::default(),
            store: StoreConfig::default(),
            engine: EngineSection::default(),
            admin: AdminConfig::default(),
            log: LogConfig::default(),
            upstreams: vec![Upstream::Demo(DemoUpstream::builtin())],
            auth: None,
            artifacts: switchyard_artifacts::ArtifactsConfig::default(),
            mcp: switchyard_mcp::McpConfig::default(),
            a2a: switchyard_a2a::A2aConfig::default(),
            policy: None,
            audit: AuditConfig::default(),
            telemetry: TelemetryConfig::default(),
            deprecations: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Record every policy decision, approval step, grant mint or revocation and
    /// reconciliation. Default: on when a `[policy]` is configured.
    pub enabled: Option<bool>,
    /// How often a replica signs a checkpoint of every partition's chain head (when the log
    /// moved since its last one), with the audit key (`key_file`).
    pub checkpoint_interval_s: u64,
    /// The Ed25519 key (PKCS#8, hex) checkpoints are signed and verified with; default
    /// `<data_dir>/audit-signing-key`, generated once. Replicas share it. It must not be the grant
    /// key: whoever mints grants must not be able to re-sign history.
    pub key_file: Option<PathBuf>,
    /// This replica's chain. Default: the worker id (one chain per replica, so replicas
    /// never wait for each other's appends).
    pub partition: Option<String>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { enabled: None, checkpoint_interval_s: 60, key_file: None, partition: None }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Where the HTTP listener binds. Loopback by default: the admin API is not for the internet.
    pub listen: SocketAddr,
    /// Holds the SQLite database, the generated admin token and the demo upstream's call log.
    pub data_dir: PathBuf,
    /// How long a graceful shutdown lets in-flight calls finish before releasing their leases.
    pub shutdown_grace_ms: u64,
    /// Largest accepted request body.
    pub body_limit_bytes: usize,
    /// Longest a client may ask a submission to wait for its outcome (`wait_ms`).
    pub max_wait_ms: u64,
    /// Serve `GET /metrics` on a listener of its own at this address (still behind the admin
    /// token or `metrics:read`), and not on `listen`. Unset: on `listen`.
    pub metrics_listen: Option<SocketAddr>,
    /// Terminate TLS on `listen` with this certificate and key (PEM files; replaced files are
    /// served to the next connection). Unset: plain HTTP, for loopback or behind a proxy.
    pub tls: Option<crate::tls::TlsConfig>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            data_dir: PathBuf::from(".switchyard"),
            shutdown_grace_ms: 10_000,
            body_limit_bytes: 1024 * 1024,
            max_wait_ms: 60_000,
            metrics_listen: None,
            tls: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://…` or `sqlite://…`; empty means `sqlite://<data_dir>/switchyard.db`.
    pub url: Secret,
    /// Connections in the pool, 1 to 1000: PostgreSQL's pool; with SQLite, the read
    /// connections beside its one writer (at most 8 are used).
    pub max_connections: u32,
    /// How long a call waits for a database connection before it is refused as "store
    /// unavailable, nothing changed".
    pub acquire_timeout_ms: u64,
    /// PostgreSQL: replicas tell each other about changes with `LISTEN/NOTIFY`, so a waiter or
    /// watcher on one replica sees another's commit at once (else at its next poll, every
    /// 250 ms; with the feed, that poll runs every 10 s as a fallback). Turn off behind a pooler
    /// that cannot `LISTEN` (PgBouncer in transaction mode).
    pub change_feed: bool,
    /// SQLite: one commit carries the admissions and transitions of many calls (one `fsync`
    /// for all of them). Off only to measure what it saves.
    pub group_commit: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: Secret::default(),
            max_connections: 16,
            acquire_timeout_ms: 2000,
            change_feed: true,
            group_commit: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// How long a worker's claim (lease) on an invocation lasts without renewal; it is renewed
    /// every third of this. At least 300.
    pub lease_ttl_ms: u64,
    /// How often recovery looks for expired leases (it also runs at start). Positive.
    pub recovery_interval_ms: u64,
    /// How many expired invocations one recovery pass takes. Positive.
    pub recovery_batch: u32,
    /// An attempt with no reply by then is lost (a `write` becomes `unknown`). Positive. A
    /// `tools` agent's run waits for its tool call instead, which has its own attempts.
    pub attempt_timeout_ms: u64,
    /// Attempts in all of a `read_only` call, the first included, 1 to 100. A `write` is sent
    /// at most once.
    pub max_attempts: u32,
    /// The pause after a read's first failed attempt, doubled after each further one (up to
    /// `backoff_max_ms`), less up to 25 % jitter.
    pub backoff_base_ms: u64,
    /// The longest pause between a read's attempts; at most half of `lease_ttl_ms`.
    pub backoff_max_ms: u64,
    /// Send a `read_only` call's first attempt while its admission commits (docs/guarantees.md, G3).
    pub send_reads_with_admission: bool,
}

impl Default for EngineSection {
    fn default() -> Self {
        Self {
            lease_ttl_ms: 30_000,
            recovery_interval_ms: 5_000,
            recovery_batch: 100,
            attempt_timeout_ms: 30_000,
            max_attempts: 3,
            backoff_base_ms: 100,
            backoff_max_ms: 5_000,
            send_reads_with_admission: true,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Bearer token for `/admin/v1`. Empty: read `token_file`, else generate one into
    /// `<data_dir>/admin-token` on first start.
    pub token: Secret,
    /// A file holding the admin token (trimmed, at least 16 characters), read when `token` is
    /// empty. It must exist when set.
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: String,
    /// A tracing filter, e.g. `info,switchyard=debug`. `RUST_LOG` wins when set.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: "text".into(), filter: "info,rmcp=warn".into() }
    }
}

/// `[telemetry]`: one span tree per invocation (`invocation` > `admission`, `attempt` >
/// `upstream.call`, `commit`) exported over OTLP/HTTP (protobuf), joined to the caller's trace
/// (W3C `traceparent`) and passed on to upstreams.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP traces URL, whole (e.g. `http://127.0.0.1:4318/v1/traces`).
    /// Unset: tracing is off, callers' trace contexts are ignored and none is sent upstream.
    pub otlp_endpoint: Option<String>,
    /// Extra headers on each export (a collector's API key, say); never printed.
    pub headers: BTreeMap<String, Secret>,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// The share of new traces recorded (0.0 to 1.0); a caller's sampling decision is followed.
    pub sample_ratio: f64,
    /// Spans are exported in batches at most this often.
    pub batch_delay_ms: u64,
    /// One export gives up after this long (spans are then dropped, calls never wait).
    pub export_timeout_ms: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            headers: BTreeMap::new(),
            service_name: "switchyard".into(),
            sample_ratio: 1.0,
            batch_delay_ms: 2000,
            export_timeout_ms: 10_000,
        }
    }
}

impl TelemetryConfig {
    fn check(&self) -> Result<(), String> {
        if let Some(url) = &self.otlp_endpoint {
            let ok = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"))
                .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/') && !rest.contains(char::is_whitespace));
            if !ok {
                return Err(format!("telemetry.otlp_endpoint `{url}` must be an http:// or https:// URL"));
            }
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(format!("telemetry.sample_ratio must be within 0.0..=1.0 (got {})", self.sample_ratio));
        }
        if !(10..=60_000).contains(&self.batch_delay_ms) {
            return Err("telemetry.batch_delay_ms must be within 10..=60000".into());
        }
        if !(100..=120_000).contains(&self.export_timeout_ms) {
            return Err("telemetry.export_timeout_ms must be within 100..=120000".into());
        }
        if self.service_name.is_empty() || self.service_name.len() > 255 {
            return Err("telemetry.service_name must be 1 to 255 characters".into());
        }
        for (k, v) in &self.headers {
            let name_ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
            if !name_ok || v.0.bytes().any(|b| b.is_ascii_control()) {
                return Err(format!("telemetry.headers `{k}` must be a header name with a printable value"));
            }
        }
        Ok(())
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Config {
    /// Whether the audit log is on (`[audit] enabled`, else on with a `[policy]`).
    pub fn audited(&self) -> bool {
        self.audit.enabled.unwrap_or(self.policy.is_some())
    }

    /// Loads defaults, then `file` (if any), then `SWITCHYARD__…` variables from `env`.
    pub fn load(file: Option<&Path>, env: impl Iterator<Item = (String, String)>) -> Result<Self, ConfigError> {
        let text = match file {
            Some(path) => {
                std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?
            }
            None => String::new(),
        };
        let origin = file.map_or_else(|| "configuration".to_string(), |p| p.display().to_string());
        Self::from_text(&text, &origin, env)
    }

    /// Defaults, then the TOML `text` (read from `origin`), then `SWITCHYARD__…` variables.
    pub fn from_text(
        text: &str,
        origin: &str,
        env: impl Iterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut doc = text
            .parse::<toml::Table>()
            .map_err(|e| ConfigError::Parse { path: origin.to_string(), message: e.to_string() })?;
        apply_env(&mut doc, env)?;
        let parse_error = |e: toml::de::Error| ConfigError::Parse { path: origin.to_string(), message: e.to_string() };
        let mut deprecations = Vec::new();
        if let Some((migrated, moved)) = migrate::migrate(&doc).map_err(ConfigError::Invalid)? {
            deprecations = moved;
            deprecations.push(format!(
                "these sections are deprecated; `switchyard config migrate {origin}` writes the new form:\n{}",
                migrate::upstreams_text(&migrated)
            ));
            doc = migrated;
        }
        let mut cfg: Config = toml::Value::Table(doc).try_into().map_err(parse_error)?;
        cfg.deprecations = deprecations;
        cfg.lower_upstreams()?;
        cfg.validate()?;
        // The faces write absolute URLs (cards, links) with the scheme the listener serves.
        cfg.mcp.tls = cfg.server.tls.is_some();
        cfg.a2a.tls = cfg.server.tls.is_some();
        Ok(cfg)
    }

    /// The built-in demo upstreams.
    pub fn demos(&self) -> impl Iterator<Item = &DemoUpstream> {
        self.upstreams.iter().filter_map(|u| match u {
            Upstream::Demo(d) => Some(d),
            _ => None,
        })
    }

    /// Each `[[upstreams]]` entry checked and added to the adapters' settings it stands for.
    fn lower_upstreams(&mut self) -> Result<(), ConfigError> {
        let mut names = std::collections::HashSet::new();
        for (i, u) in self.upstreams.iter().enumerate() {
            let key = format!("upstreams[{i}]");
            let lowered = u.lower(&key).map_err(ConfigError::Invalid)?;
            if !names.insert(u.name().to_string()) {
                return Err(ConfigError::Invalid(format!("{key}.name `{}` is used twice", u.name())));
            }
            if let Some(agent) = lowered.agent {
                if self.a2a.agents.iter().any(|a| a.name == agent.name) {
                    return Err(ConfigError::Invalid(format!(
                        "{key}.name `{}` is also an [[a2a.agents]] name",
                        agent.name
                    )));
                }
                self.a2a.agents.push(agent);
            }
            self.mcp.upstreams.extend(lowered.mcp);
        }
        Ok(())
    }

    /// Checks what types cannot; each message names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if let Some(tls) = &self.server.tls {
            crate::tls::load(tls).map_err(|e| ConfigError::Invalid(format!("{e:#}")))?;
        }
        if self.server.body_limit_bytes < 1024 {
            return bad("server.body_limit_bytes must be at least 1024".into());
        }
        if self.server.metrics_listen.is_some_and(|m| m == self.server.listen && m.port() != 0) {
            return bad(
                "server.metrics_listen must differ from server.listen (leave it unset to serve /metrics there)".into(),
            );
        }
        let url = &self.store.url.0;
        if !(url.is_empty()
            || url.starts_with("sqlite:")
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://"))
        {
            return bad("store.url must start with sqlite:, postgres:// or postgresql://".into());
        }
        if !(1..=1000).contains(&self.store.max_connections) {
            return bad("store.max_connections must be within 1..=1000".into());
        }
        if !(100..=60_000).contains(&self.store.acquire_timeout_ms) {
            return bad("store.acquire_timeout_ms must be within 100..=60000".into());
        }
        if let Some(p) = &self.policy {
            p.check().map_err(|e| ConfigError::Invalid(e.to_string()))?;
        }
        if !(1..=86_400).contains(&self.audit.checkpoint_interval_s) {
            return bad("audit.checkpoint_interval_s must be within 1..=86400".into());
        }
        if let Some(p) = &self.audit.partition
            && (p.is_empty() || p.len() > 100 || !p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)))
        {
            return bad(format!("audit.partition `{p}` must be 1 to 100 characters of [A-Za-z0-9_.-]"));
        }
        self.telemetry.check().map_err(ConfigError::Invalid)?;
        if !["text", "json"].contains(&self.log.format.as_str()) {
            return bad(format!("log.format must be `text` or `json` (got `{}`)", self.log.format));
        }
        self.artifacts.validate().map_err(|e| ConfigError::Invalid(e.0))?;
        let taken = self.demos().map(|u| u.name.clone()).collect();
        self.mcp.validate(&taken).map_err(|e| ConfigError::Invalid(e.0))?;
        // A `tools` agent bridges MCP servers only, and a `kind = "a2a"` MCP upstream an agent
        // that is not a `tools` agent: a bridge never leads back into itself.
        use switchyard_mcp::UpstreamKind;
        for agent in &self.a2a.agents {
            agent.validate().map_err(|e| ConfigError::Invalid(e.0))?;
            let server = |u: &String| self.mcp.upstreams.iter().any(|m| &m.name == u && m.kind == UpstreamKind::Mcp);
            if let Some(u) = agent.upstreams.iter().find(|u| !server(u)) {
                return bad(format!(
                    "a2a agent `{}`: upstream `{u}` is not an MCP server in [[upstreams]]",
                    agent.name
                ));
            }
        }
        for u in self.mcp.upstreams.iter().filter(|u| u.kind == UpstreamKind::A2a) {
            let (up, name) = (&u.name, u.agent_name());
            match self.a2a.agents.iter().find(|a| a.name == name) {
                None => return bad(format!("upstream `{up}`: agent `{name}` is not an [[a2a.agents]] name")),
                Some(a) if a.kind == switchyard_a2a::agent::AgentKind::Tools => {
                    return bad(format!(
                        "upstream `{up}`: agent `{name}` is a tools agent (MCP tools already): bridge its MCP \
                         upstreams directly"
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some(name) = &self.a2a.default_agent
            && !self.a2a.agents.iter().any(|a| &a.name == name && a.exposed)
        {
            return bad(format!("a2a.default_agent `{name}` is not an agent served on the A2A face"));
        }
        if self.mcp.anonymous && !self.server.listen.ip().is_loopback() {
            return bad("mcp.anonymous is only allowed while server.listen is a loopback address".into());
        }
        if self.a2a.anonymous && !self.server.listen.ip().is_loopback() {
            return bad("a2a.anonymous is only allowed while server.listen is a loopback address".into());
        }
        if let Some(auth) = &self.auth {
            auth.validate(self.server.listen.ip().is_loopback()).map_err(|e| ConfigError::Invalid(e.0))?;
        }
        self.engine_config(WorkerId::new()).validate().map_err(|e| ConfigError::Invalid(e.0))
    }

    /// The store URL, defaulting to SQLite under the data directory.
    pub fn store_url(&self) -> String {
        if self.store.url.0.is_empty() {
            format!("sqlite://{}", self.server.data_dir.join("switchyard.db").display())
        } else {
            self.store.url.0.clone()
        }
    }

    pub fn engine_config(&self, worker: WorkerId) -> EngineConfig {
        let e = &self.engine;
        let ms = Duration::from_millis;
        EngineConfig {
            worker,
            lease_ttl: ms(e.lease_ttl_ms),
            recovery_interval: ms(e.recovery_interval_ms),
            recovery_batch: e.recovery_batch,
            attempt_timeout: ms(e.attempt_timeout_ms),
            retry: RetryPolicy {
                max_attempts: e.max_attempts,
                backoff_base: ms(e.backoff_base_ms),
                backoff_max: ms(e.backoff_max_ms),
            },
            send_reads_with_admission: e.send_reads_with_admission,
            approval_ttl: self
                .policy
                .as_ref()
                .map_or(EngineConfig::default().approval_ttl, |p| Duration::from_secs(p.approval_ttl_s)),
            ..EngineConfig::default()
        }
    }
}

/// `SWITCHYARD__ENGINE__LEASE_TTL_MS=2000` sets `engine.lease_ttl_ms`. Values parse as TOML
/// (numbers, booleans) and fall back to strings.
fn apply_env(doc: &mut toml::Table, env: impl Iterator<Item = (String, String)>) -> Result<(), ConfigError> {
    for (key, raw) in env {
        let Some(path) = key.strip_prefix("SWITCHYARD__") else { continue };
        let parts: Vec<String> = path.split("__").map(str::to_ascii_lowercase).collect();
        if parts.len() != 2 || parts.iter().any(String::is_empty) {
            return Err(ConfigError::Invalid(format!("{key}: use SWITCHYARD__SECTION__KEY")));
        }
        let value = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(raw));
        let section = doc
            .entry(parts[0].clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| ConfigError::Invalid(format!("{key}: `{}` is not a section", parts[0])))?;
        section.insert(parts[1].clone(), value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn defaults_are_valid_and_env_overrides_them() {
        let cfg = Config::load(
            None,
            env(&[("SWITCHYARD__ENGINE__LEASE_TTL_MS", "20000"), ("SWITCHYARD__STORE__URL", "postgres://u:pw@h/db")]),
        );
        let cfg = cfg.unwrap();
        assert_eq!(cfg.engine.lease_ttl_ms, 20000);
        assert_eq!(cfg.store_url(), "postgres://u:pw@h/db");
        assert!(!format!("{cfg:?}").contains("pw"), "secrets never print");
        assert_eq!(Config::default().store_url(), "sqlite://.switchyard/switchyard.db");
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = Config::load(None, env(&[("SWITCHYARD__ENGINE__MAX_ATTEMPTS", "0")])).err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("engine.max_attempts")));
        let e = Config::load(None, env(&[("SWITCHYARD__LOG__FORMAT", "xml")])).err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("log.format")));
        let e = Config::load(None, env(&[("SWITCHYARD__ENGINE__NOPE", "1")])).err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("nope")));
    }

    #[test]
    fn telemetry_is_off_by_default_and_its_values_are_checked() {
        let load = |text: &str| Config::from_text(text, "c.toml", std::iter::empty()).map_err(|e| e.to_string());
        let cfg = load("").unwrap();
        assert_eq!(cfg.telemetry.otlp_endpoint, None, "off unless an endpoint is set");
        let on =
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/v1/traces\"\nheaders = { x-api-key = \"k3y\" }\n";
        let cfg = load(on).unwrap();
        assert!(!format!("{cfg:?}").contains("k3y"), "header values never print");
        for (bad, key) in [
            ("otlp_endpoint = \"127.0.0.1:4318\"", "telemetry.otlp_endpoint"),
            ("otlp_endpoint = \"http:///v1/traces\"", "telemetry.otlp_endpoint"),
            ("sample_ratio = 1.5", "telemetry.sample_ratio"),
            ("batch_delay_ms = 0", "telemetry.batch_delay_ms"),
            ("headers = { \"bad name\" = \"v\" }", "telemetry.headers"),
            ("nope = 1", "nope"),
        ] {
            let e = load(&format!("[telemetry]\n{bad}\n")).err();
            assert!(e.as_deref().is_some_and(|m| m.contains(key)), "{bad}: {e:?}");
        }
    }

    #[test]
    fn a_tools_agent_names_configured_mcp_upstreams() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let agent = "[[a2a.agents]]\nname = \"t\"\nkind = \"tools\"\nupstreams = [\"nope\"]\n";
        std::fs::write(&path, agent).unwrap();
        let e = Config::load(Some(&path), std::iter::empty()).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|m| m.contains("upstream `nope`")), "{e:?}");
        std::fs::write(&path, "[[a2a.agents]]\nname = \"t\"\nkind = \"tools\"\n").unwrap();
        let e = Config::load(Some(&path), std::iter::empty()).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|m| m.contains("needs upstreams")), "{e:?}");
    }

    #[test]
    fn an_a2a_upstream_names_an_agent_that_is_not_a_tools_agent_or_a_card() {
        let load = |text: &str| Config::from_text(text, "c.toml", std::iter::empty()).map_err(|e| e.to_string());
        let up = "[[upstreams]]\nkind = \"a2a\"\nname = \"h\"\n";
        let e = load(&format!("{up}agent = \"nope\"\n")).err();
        assert!(e.as_deref().is_some_and(|m| m.contains("agent `nope` is not an [[a2a.agents]] name")), "{e:?}");
        let tools = "[[upstreams]]\nkind = \"mcp\"\nname = \"fx\"\ncommand = [\"x\"]\n[[a2a.agents]]\nname = \"t\"\nkind = \"tools\"\nupstreams = [\"fx\"]\n";
        let e = load(&format!("{up}agent = \"t\"\n{tools}")).err();
        assert!(e.as_deref().is_some_and(|m| m.contains("is a tools agent")), "{e:?}");
        // A tools agent over a bridged A2A agent would loop.
        let e = load(&format!("{up}agent = \"e\"\n[[a2a.agents]]\nname = \"e\"\nkind = \"echo\"\n[[a2a.agents]]\nname = \"t\"\nkind = \"tools\"\nupstreams = [\"h\"]\n")).err();
        assert!(e.as_deref().is_some_and(|m| m.contains("not an MCP server")), "{e:?}");
        let e = load(&format!("{up}agent = \"e\"\ncard_url = \"http://127.0.0.1:1/c\"\n")).err();
        assert!(e.as_deref().is_some_and(|m| m.contains("exactly one of `card_url` and `agent`")), "{e:?}");
        let cfg = load(&format!("{up}card_url = \"http://127.0.0.1:1/card.json\"\nexpose = [\"mcp\"]\n")).unwrap();
        let made = cfg.a2a.agents.iter().find(|a| a.name == "h").unwrap_or_else(|| panic!("{:?}", cfg.a2a.agents));
        assert!(!made.exposed && made.card_url.as_deref() == Some("http://127.0.0.1:1/card.json"));
        assert!(cfg.mcp.upstreams.iter().any(|u| u.name == "h" && u.agent_name() == "h"));
    }

    #[test]
    fn a_key_of_another_kind_is_refused_by_name() {
        let load = |text: &str| Config::from_text(text, "c.toml", std::iter::empty()).map_err(|e| e.to_string());
        let e = load(
            "[[upstreams]]\nkind = \"mcp\"\nname = \"m\"\nurl = \"http://127.0.0.1:1/mcp\"\ncard_url = \"http://x\"\n",
        );
        assert!(e.as_ref().err().is_some_and(|m| m.contains("unknown field `card_url`")), "{e:?}");
        let e = load("[[upstreams]]\nkind = \"demo\"\nname = \"d\"\nurl = \"http://x\"\n");
        assert!(e.as_ref().err().is_some_and(|m| m.contains("unknown field `url`")), "{e:?}");
        let e = load("[[upstreams]]\nkind = \"a2a\"\nname = \"a\"\ncard_url = \"ftp://x/card\"\n");
        assert!(e.as_ref().err().is_some_and(|m| m.contains("upstreams[0].card_url must start with http")), "{e:?}");
        let e = load("[[upstreams]]\nkind = \"grpc\"\nname = \"g\"\n");
        assert!(e.as_ref().err().is_some_and(|m| m.contains("unknown variant `grpc`")), "{e:?}");
    }

    #[test]
    fn an_older_file_loads_with_a_warning_that_prints_the_new_form() {
        let old = "[[mcp.upstreams]]\nname = \"fx\"\ncommand = [\"x\"]\n";
        let cfg = Config::from_text(old, "old.toml", std::iter::empty()).unwrap();
        assert!(cfg.mcp.upstreams.iter().any(|u| u.name == "fx"));
        let warning = cfg.deprecations.join("\n");
        assert!(
            warning.contains("switchyard config migrate old.toml") && warning.contains("kind = \"mcp\""),
            "{warning}"
        );
        let new = Config::from_text(
            "[[upstreams]]\nkind = \"mcp\"\nname = \"fx\"\ncommand = [\"x\"]\n",
            "n",
            std::iter::empty(),
        );
        assert!(new.is_ok_and(|c| c.deprecations.is_empty()));
    }

    /// Every `.toml` under `config/` and `deploy/` (the files compose mounts among them).
    #[test]
    fn every_shipped_config_file_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut dirs = vec![root.join("config"), root.join("deploy")];
        let mut checked = 0;
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "toml") {
                    match Config::load(Some(&path), std::iter::empty()) {
                        Ok(cfg) => assert!(cfg.deprecations.is_empty(), "{}: {:?}", path.display(), cfg.deprecations),
                        Err(e) => panic!("{}: {e}", path.display()),
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 3, "the shipped config files were not found ({checked})");
    }
}
