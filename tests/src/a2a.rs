//! Helpers for the A2A end-to-end tests: gateway configuration with A2A agents, raw JSON-RPC
//! and HTTP+JSON calls, and the official Python A2A SDK client script.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Writes a gateway configuration with one `tck` agent (and `extra` TOML appended).
pub fn write_config(dir: &Path, agent: &str, extra: &str) -> PathBuf {
    let path = dir.join("switchyard.toml");
    let text = format!(
        r#"
[engine]
lease_ttl_ms = 2000
backoff_max_ms = 500
recovery_interval_ms = 300

[a2a]
push = {{ allow_loopback = true }}
{extra}

[[a2a.agents]]
name = "tck"
kind = "tck"
extended_card = true
{agent}
"#
    );
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// The official Python A2A SDK client script (`tests/python/a2a_client_e2e.py`).
pub fn python_client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/a2a_client_e2e.py")
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
        use std::io::BufRead;
        let log = dir.join("internal-received.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/a2a_internal_agent.py");
        let mut child = std::process::Command::new(crate::mcp::python())
            .arg(script)
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
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
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["messageId"].as_str().map(str::to_string))
            .collect()
    }
}

impl Drop for InternalAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
