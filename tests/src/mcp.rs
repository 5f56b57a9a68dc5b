#![allow(deprecated)] // ClientInfo is the legacy name rmcp still accepts; kept for readability

//! MCP test peers: the fixture upstream (`switchyard-mcp-fixture`, over HTTP or spawned by the
//! gateway over stdio), gateway configurations fronting it, and an rmcp client of either era.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientInfo, ElicitRequestParams, ElicitResult, ElicitationAction,
    JsonObject, ProtocolVersion, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{ClientLifecycleMode, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

/// The fixture binary, next to the gateway binary (`cargo build -p switchyard-mcp-fixture`).
pub fn fixture_binary() -> PathBuf {
    let bin = crate::gateway::binary().with_file_name("switchyard-mcp-fixture");
    assert!(bin.exists(), "{} is missing: run `cargo build -p switchyard-mcp-fixture` first", bin.display());
    bin
}

/// A fixture serving Streamable HTTP on `127.0.0.1:0`. Dropping it kills the process.
#[derive(Debug)]
pub struct Fixture {
    child: Child,
    pub url: String,
}

impl Fixture {
    pub fn start(env: &[(&str, &str)]) -> Fixture {
        let mut cmd = Command::new(fixture_binary());
        cmd.args(["--listen", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn fixture: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("fixture stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening ") {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("fixture did not start"));
        Fixture { child, url }
    }

    /// How many TCP connections the fixture has accepted so far.
    pub async fn connections(&self) -> u64 {
        let url = self.url.replace("/mcp", "/connections");
        let text = async { reqwest::get(&url).await?.error_for_status()?.text().await };
        let text = text.await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
        text.trim().parse().unwrap_or_else(|e| panic!("GET {url}: {text:?}: {e}"))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One MCP server entry, written in the older `[[mcp.upstreams]]` form (still loaded, with a
/// warning): the tests that use it keep that form covered.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    pub name: String,
    /// HTTP upstream; `None`: the gateway spawns the fixture over stdio.
    pub url: Option<String>,
    pub env: Vec<(String, String)>,
    pub prefix: Option<String>,
}

impl UpstreamSpec {
    pub fn stdio(name: &str, env: &[(&str, &str)]) -> Self {
        Self {
            name: name.into(),
            url: None,
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            prefix: None,
        }
    }

    pub fn http(name: &str, url: &str) -> Self {
        Self { name: name.into(), url: Some(url.into()), env: Vec::new(), prefix: None }
    }
}

fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Writes a gateway config exposing `upstreams` at `/mcp` (anonymous on loopback); `echo`,
/// `slow`, `ask_name` and the conformance tools are `read_only`, `count_write` is a write.
pub fn write_config(dir: &Path, upstreams: &[UpstreamSpec], extra: &str) -> PathBuf {
    let mut text = format!(
        "[mcp]\nanonymous = true\ncall_wait_ms = 20000\nconnect_timeout_ms = 15000\n\
         request_state_key = \"switchyard-test-request-state-key-0123456789\"\n{extra}\n"
    );
    for u in upstreams {
        text.push_str(&format!("\n[[mcp.upstreams]]\nname = {}\n", toml_str(&u.name)));
        match &u.url {
            Some(url) => text.push_str(&format!("url = {}\n", toml_str(url))),
            None => {
                text.push_str(&format!(
                    "command = [{}, \"--stdio\"]\n",
                    toml_str(&fixture_binary().display().to_string())
                ));
                let env: Vec<String> = u.env.iter().map(|(k, v)| format!("{k} = {}", toml_str(v))).collect();
                text.push_str(&format!("env = {{ {} }}\n", env.join(", ")));
            }
        }
        if let Some(p) = &u.prefix {
            text.push_str(&format!("prefix = {}\n", toml_str(p)));
        }
        text.push_str("operations = { echo = \"read_only\", slow = \"read_only\", ask_name = \"read_only\", count_write = \"write\" }\n");
    }
    let path = dir.join("mcp.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write config: {e}"));
    path
}

/// A test client: answers elicitation with `{"name": "Ada"}`.
#[derive(Debug, Clone, Default)]
pub struct TestClient;

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(Default::default());
        let mut info = ClientInfo::default();
        info.capabilities = caps;
        info
    }

    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }
}

pub type Client = RunningService<RoleClient, TestClient>;

/// Connects to `url` as a 2026-07-28 client (`modern`) or a 2025-11-25 one.
pub async fn connect(url: &str, modern: bool) -> Client {
    let lifecycle = if modern {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    } else {
        ClientLifecycleMode::Initialize
    };
    rmcp::service::serve_client_with_lifecycle(TestClient, StreamableHttpClientTransport::from_uri(url), lifecycle)
        .await
        .unwrap_or_else(|e| panic!("connect {url} (modern: {modern}): {e}"))
}

/// Connects to `url` as a 2026-07-28 client sending `token` as its bearer credential.
pub async fn connect_with_bearer(url: &str, token: &str) -> Client {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.to_string());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::default(), config);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    rmcp::service::serve_client_with_lifecycle(TestClient, transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// `resources/read`: the text, or the error's message.
pub async fn read(client: &Client, uri: &str) -> Result<String, String> {
    match client.peer().read_resource(ReadResourceRequestParams::new(uri)).await {
        Ok(r) => Ok(r
            .contents
            .iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                _ => "<blob>".into(),
            })
            .collect()),
        Err(e) => Err(e.to_string()),
    }
}

/// `tools/call` parameters.
pub fn call(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_string());
    p.arguments = args.as_object().cloned().map(JsonObject::from_iter);
    p
}

/// Where a tool call carries its idempotency key and a grant (`_meta`).
pub const KEY_META: &str = "dev.switchyard/idempotencyKey";
pub const GRANT_META: &str = "dev.switchyard/grant";

/// [`call`] with `_meta` entries (an idempotency key, a grant).
pub fn call_with_meta(name: &str, args: Value, meta: &[(&str, Value)]) -> CallToolRequestParams {
    let mut p = call(name, args);
    let mut m = rmcp::model::RequestMetaObject::default();
    for (k, v) in meta {
        m.0.insert((*k).to_string(), v.clone());
    }
    p.meta = Some(m);
    p
}

/// The text of a tool result's first content block.
pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

/// The Python with the official SDKs (`mcp==2.3.0`, `a2a-sdk==1.3.0`): `$SWITCHYARD_PY`, else the venv the test
/// command makes.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SWITCHYARD_PY").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let cached = PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/switchyard-tools/py/bin/python");
    assert!(
        cached.exists(),
        "no Python with the official SDKs (mcp, a2a-sdk): run `bash scripts/test.sh` (it creates the venv) or set SWITCHYARD_PY"
    );
    cached
}

/// The official Python SDK client script (`tests/python/mcp_client_e2e.py`).
pub fn python_client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_client_e2e.py")
}
