//! Helpers for the A2A end-to-end tests: gateway configuration with A2A agents, raw JSON-RPC
//! and HTTP+JSON calls, and the official Python A2A SDK client script.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Writes a gateway configuration: short engine leases (so a killed gateway's work is taken
/// over quickly), `a2a` lines in the `[a2a]` section, then the `agents` blocks.
pub fn write_gateway_config(dir: &Path, a2a: &str, agents: &str) -> PathBuf {
    let path = dir.join("switchyard.toml");
    let text = format!(
        r#"
[engine]
lease_ttl_ms = 2000
backoff_max_ms = 500
recovery_interval_ms = 300

[a2a]
{a2a}

{agents}
"#
    );
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// A configuration with one `tck` agent (`agent`: more keys for it; `extra`: more `[a2a]`
/// keys), webhooks to loopback allowed.
pub fn write_config(dir: &Path, agent: &str, extra: &str) -> PathBuf {
    let agents = format!("[[a2a.agents]]\nname = \"tck\"\nkind = \"tck\"\nextended_card = true\n{agent}");
    write_gateway_config(dir, &format!("push = {{ allow_loopback = true }}\n{extra}"), &agents)
}

/// The official Python A2A SDK client script (`tests/python/a2a_client_e2e.py`).
pub fn python_client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/a2a_client_e2e.py")
}

/// Runs the Python SDK client script with `args`.
pub async fn py(args: &[&str]) -> std::process::Output {
    py_script("a2a_client_e2e.py", args).await
}

/// Runs `tests/python/<script>` with `args` on the Python that has the official SDKs.
pub async fn py_script(script: &str, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(crate::mcp::python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python").join(script))
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| panic!("python: {e}"))
}

/// Runs `tests/js/<script>` with `args` on Node, next to the official A2A JavaScript SDK
/// (`SWITCHYARD_A2A_JS`, default `$HOME/.cache/switchyard-tools/a2a-js`: `@a2a-js/sdk` 1.3.0 and
/// its gRPC peers, which scripts/test.sh installs from npm).
pub async fn js_script(script: &str, args: &[&str]) -> std::process::Output {
    crate::node::run("SWITCHYARD_A2A_JS", "a2a-js", "@a2a-js/sdk", script, args).await
}

/// The JSON lines a script printed.
pub fn lines(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// A user message with a fresh id starting with `prefix`.
pub fn message(prefix: &str) -> Value {
    json!({"messageId": format!("{prefix}-{}", uuid::Uuid::new_v4().simple()), "role": "ROLE_USER", "parts": [{"text": "hello"}]})
}

/// POSTs a JSON-RPC call to `url` (A2A-Version 1.0) and returns (HTTP status, body).
pub async fn rpc(http: &reqwest::Client, url: &str, bearer: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let mut req = http
        .post(url)
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(b) = bearer {
        req = req.bearer_auth(b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{method}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// An internal agent served by the official Python SDK (`tests/python/a2a_internal_agent.py`),
/// logging every message it receives. Killed on drop.
#[derive(Debug)]
pub struct InternalAgent {
    child: std::process::Child,
    pub url: String,
    pub log: PathBuf,
}

impl InternalAgent {
    pub fn start(dir: &Path) -> InternalAgent {
        let log = dir.join("internal-received.jsonl");
        Self::spawn(dir, "a2a_internal_agent.py", &[log.as_os_str()], log.clone())
    }

    /// The same agent, served on `host` (an address of this machine, such as a bridge's that
    /// network namespaces reach) instead of loopback.
    pub fn start_on(dir: &Path, host: &str) -> InternalAgent {
        let log = dir.join("internal-received.jsonl");
        Self::spawn(dir, "a2a_internal_agent.py", &[log.as_os_str(), "--host".as_ref(), host.as_ref()], log.clone())
    }

    /// The same agent, reachable only over gRPC (its card lists one `GRPC` interface).
    pub fn start_grpc_only(dir: &Path) -> InternalAgent {
        let log = dir.join("internal-received.jsonl");
        Self::spawn(dir, "a2a_internal_agent.py", &[log.as_os_str(), "--grpc-only".as_ref()], log.clone())
    }

    /// An agent on the same SDK that behaves as the A2A TCK's system under test
    /// (`tests/python/a2a_tck_agent.py`, profile `full`); it keeps no log of what it received.
    pub fn start_tck(dir: &Path) -> InternalAgent {
        Self::spawn(dir, "a2a_tck_agent.py", &["full".as_ref()], dir.join("tck-agent-received.jsonl"))
    }

    fn spawn(dir: &Path, script: &str, args: &[&std::ffi::OsStr], log: PathBuf) -> InternalAgent {
        use std::io::BufRead;
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python").join(script);
        let mut child = std::process::Command::new(crate::mcp::python())
            .arg(script)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(
                std::fs::File::create(dir.join("internal-agent.log"))
                    .map_or_else(|_| std::process::Stdio::null(), Into::into),
            )
            .spawn()
            .unwrap_or_else(|e| panic!("python: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).unwrap_or_else(|e| panic!("{e}"));
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("internal agent said {line:?}"))
            .to_string();
        InternalAgent { child, url, log }
    }

    /// The message ids it received, in order.
    pub fn received(&self) -> Vec<String> {
        self.received_messages().into_iter().map(|(id, _)| id).collect()
    }

    /// The messages it received, in order: each one's id and first text part.
    pub fn received_messages(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| Some((v["messageId"].as_str()?.to_string(), v["text"].as_str().unwrap_or("").to_string())))
            .collect()
    }
}

impl Drop for InternalAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request a [`Webhook`] received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The status it was answered with.
    pub status: u16,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A webhook receiver on 127.0.0.1 that answers 503 to its first `fail_first` requests, then 200.
#[derive(Debug)]
pub struct Webhook {
    pub url: String,
    hits: std::sync::Arc<std::sync::Mutex<Vec<Hit>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Webhook {
    pub async fn start(fail_first: usize) -> Webhook {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}/hook", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        let hits = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Hit>::new()));
        let seen = hits.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let mut reader = BufReader::new(sock);
                let mut headers = Vec::new();
                let mut line = String::new();
                if reader.read_line(&mut line).await.is_err() {
                    continue;
                }
                loop {
                    line.clear();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.trim().split_once(':') {
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let len = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; len];
                if reader.read_exact(&mut body).await.is_err() {
                    continue;
                }
                let status = {
                    let mut h = seen.lock().unwrap_or_else(|e| e.into_inner());
                    let status = if h.len() < fail_first { 503 } else { 200 };
                    h.push(Hit { headers, body: serde_json::from_slice(&body).unwrap_or(Value::Null), status });
                    status
                };
                let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = reader.into_inner().write_all(reply.as_bytes()).await;
            }
        });
        Webhook { url, hits, task }
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}
