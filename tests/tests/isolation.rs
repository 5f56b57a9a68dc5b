//! The attacks of issue 11, against the real binary: two tenants (`red`, `blue`) with API keys
//! that grant every scope, an A2A `echo` agent and an MCP stdio upstream. Each test is the
//! reproduction that used to succeed; each must now be refused with nothing changed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::tenants::{BLUE as BLUE_KEY, RED as RED_KEY};

fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// A gateway config: API keys for `red` and `blue`, the `echo` agent, and the fixture over stdio
/// (`fx`) started through `sh`, which first writes the child's environment to `env_dump`.
fn config(dir: &Path, env_dump: &Path, call_log: &Path) -> PathBuf {
    let fixture = switchyard_tests::mcp::fixture_binary().display().to_string();
    let script = format!("env > {}; exec {} --stdio", env_dump.display(), fixture);
    let text = format!(
        r#"
{auth}

[mcp]
call_wait_ms = 20000
connect_timeout_ms = 15000
request_state_key = "switchyard-test-request-state-key-0123456789"

[[mcp.upstreams]]
name = "fx"
command = ["sh", "-c", {script}]
env = {{ FIXTURE_CALL_LOG = {log} }}
operations = {{ echo = "read_only", count_write = "write" }}

[a2a]

[[a2a.agents]]
name = "echo"
kind = "echo"
"#,
        auth = switchyard_tests::tenants::auth_section(),
        script = toml_str(&script),
        log = toml_str(&call_log.display().to_string()),
    );
    let path = dir.join("switchyard.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

struct Setup {
    gw: Gateway,
    env_dump: PathBuf,
    call_log: PathBuf,
    _dir: tempfile::TempDir,
}

fn start(extra_env: &[(&str, &str)]) -> Setup {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (env_dump, call_log) = (dir.path().join("child-env.txt"), dir.path().join("calls.log"));
    let path = config(dir.path(), &env_dump, &call_log);
    let env = extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), env, ..Options::default() });
    Setup { gw, env_dump, call_log, _dir: dir }
}

async fn post(gw: &Gateway, key: &str, path: &str, body: Value) -> (u16, Value) {
    let resp = gw
        .http
        .post(format!("{}{path}", gw.base))
        .bearer_auth(key)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn get(gw: &Gateway, key: &str, path: &str) -> (u16, Value) {
    let resp =
        gw.http.get(format!("{}{path}", gw.base)).bearer_auth(key).send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Red's task, made through the A2A face; returns (task id, context id).
async fn red_task(gw: &Gateway) -> (String, String) {
    let msg = json!({"messageId": "red-secret-1", "role": "ROLE_USER", "parts": [{"text": "red's secret"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg}});
    let (status, answer) = post(gw, RED_KEY, "/a2a/echo", body).await;
    assert_eq!(status, 200, "{answer}");
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    (task["id"].as_str().unwrap_or_default().to_string(), task["contextId"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn another_tenant_cannot_reach_a_task_through_the_admin_api() {
    let s = start(&[]);
    let (task, ctx) = red_task(&s.gw).await;
    let message = json!({"messageId": "blue-1", "role": "ROLE_USER", "parts": [{"text": "give me red's task"}]});
    for scope in ["red/", "blue/"] {
        let body = json!({"upstream": "a2a-agent-echo", "operation": "SendMessage", "request": {
            "agent": "echo", "scope": scope, "taskId": task, "contextId": ctx, "newTask": false,
            "message": message,
            "push": {"url": "http://127.0.0.1:9/steal", "taskId": task},
        }});
        let (status, answer) = post(&s.gw, BLUE_KEY, "/admin/v1/invocations?wait_ms=3000", body).await;
        assert_eq!(status, 403, "{answer}");
        assert_eq!(answer["error"]["kind"], "forbidden", "{answer}");
        assert!(answer.to_string().contains("A2A face"), "{answer}");
        assert!(!answer.to_string().contains("red's secret"), "{answer}");
    }
    // Nothing was admitted for blue, and red's task is unchanged: one user message, not blue's.
    let (_, page) = get(&s.gw, BLUE_KEY, "/admin/v1/invocations").await;
    assert_eq!(page["items"], json!([]), "{page}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task}});
    let (_, got) = post(&s.gw, RED_KEY, "/a2a/echo", body).await;
    assert!(!got.to_string().contains("give me red's task"), "{got}");
    let (_, configs) = post(
        &s.gw,
        RED_KEY,
        "/a2a/echo",
        json!({"jsonrpc": "2.0", "id": 3, "method": "ListTaskPushNotificationConfigs", "params": {"taskId": task}}),
    )
    .await;
    assert!(!configs.to_string().contains("steal"), "{configs}");
}

#[tokio::test]
async fn an_mcp_upstream_is_not_callable_through_the_admin_api() {
    let s = start(&[]);
    // `echo` is read_only; the request names the write tool: it used to run, recorded read_only.
    let body = json!({"upstream": "fx", "operation": "echo", "request": {"tool": "count_write", "arguments": {"key": "forged"}}});
    let (status, answer) = post(&s.gw, BLUE_KEY, "/admin/v1/invocations?wait_ms=5000", body).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer.to_string().contains("MCP face"), "{answer}");
    // The operator's token gets the same answer: the face's checks cannot be skipped.
    let body = json!({"upstream": "fx", "operation": "count_write", "request": {"tool": "count_write", "arguments": {"key": "op"}}});
    let (status, answer) = s.gw.post("blue", "/admin/v1/invocations?wait_ms=5000", body).await.unwrap();
    assert_eq!(status, 403, "{answer}");
    let calls = std::fs::read_to_string(&s.call_log).unwrap_or_default();
    assert_eq!(calls, "", "the write tool must not have run");
}

#[tokio::test]
async fn a_stdio_upstream_gets_none_of_the_gateways_secrets() {
    let secret = "AKIA-not-for-children-7f3e";
    let s = start(&[("AWS_SECRET_ACCESS_KEY", secret), ("SWITCHYARD__STORE__MAX_CONNECTIONS", "7")]);
    // A call through the face makes the gateway start a session with the child.
    let mut client = switchyard_tests::mcp::connect_with_bearer(&format!("{}/mcp", s.gw.base), RED_KEY).await;
    let result = client.call_tool(switchyard_tests::mcp::call("fx__echo", json!({"text": "hi"}))).await;
    assert!(result.is_ok(), "{result:?}");
    let _ = client.close().await;
    let env = std::fs::read_to_string(&s.env_dump).unwrap_or_else(|e| panic!("child env dump: {e}"));
    assert!(env.contains("FIXTURE_CALL_LOG="), "the configured env is passed:\n{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "PATH is passed:\n{env}");
    for leaked in ["SWITCHYARD__ADMIN__TOKEN", "AWS_SECRET_ACCESS_KEY", "SWITCHYARD__STORE__MAX_CONNECTIONS", secret] {
        assert!(!env.contains(leaked), "{leaked} reached the stdio child:\n{env}");
    }
}

#[tokio::test]
async fn a_web_page_cannot_post_to_the_a2a_face() {
    let s = start(&[]);
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": "csrf-1", "role": "ROLE_USER", "parts": [{"text": "from a web page"}]}}});
    let url = format!("{}/a2a/echo", s.gw.base);
    let send = |headers: Vec<(&'static str, &'static str)>, path: &str| {
        let mut req = s.gw.http.post(format!("{url}{path}")).bearer_auth(RED_KEY).header("A2A-Version", "1.0");
        for (k, v) in headers {
            req = req.header(k, v);
        }
        req.body(msg.to_string()).send()
    };
    // DNS rebinding: a foreign Host. A cross-site page: a foreign Origin. Both bindings.
    for path in ["", "/rest/message:send"] {
        for headers in [
            vec![("host", "attacker.example"), ("content-type", "application/json")],
            vec![("origin", "https://attacker.example"), ("content-type", "application/json")],
        ] {
            let resp = send(headers.clone(), path).await.unwrap();
            assert_eq!(resp.status().as_u16(), 403, "{path} {headers:?}");
            let body = resp.text().await.unwrap_or_default();
            assert!(body.contains("PERMISSION_DENIED") || body.contains("-32001"), "{body}");
        }
    }
    // A "simple" cross-site content type that only mentions JSON is not JSON.
    let resp = send(vec![("content-type", "text/plain; x=application/json")], "").await.unwrap();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(body["error"]["code"], -32005, "{body}");
    // Nothing was recorded.
    let (_, page) = get(&s.gw, RED_KEY, "/admin/v1/invocations").await;
    assert_eq!(page["items"], json!([]), "{page}");
    // The same request from the gateway's own origin goes through.
    let resp = send(vec![("origin", "http://127.0.0.1:1"), ("content-type", "application/json")], "").await.unwrap();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
}

#[tokio::test]
async fn a_legacy_mcp_session_belongs_to_the_principal_that_opened_it() {
    let s = start(&[]);
    let url = format!("{}/mcp", s.gw.base);
    let post = |key: &'static str, session: Option<String>, body: Value| {
        let mut req =
            s.gw.http
                .post(&url)
                .bearer_auth(key)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
        }
        req.body(body.to_string()).send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "red", "version": "1"}}});
    let resp = post(RED_KEY, None, init).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let session = session.unwrap_or_else(|| panic!("no session id"));
    let _ = resp.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ok = post(RED_KEY, Some(session.clone()), initialized).await.unwrap();
    assert!(ok.status().is_success(), "{}", ok.status());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    // Blue, with red's session id: as if there were no such session.
    let stolen = post(BLUE_KEY, Some(session.clone()), list.clone()).await.unwrap();
    assert_eq!(stolen.status().as_u16(), 404);
    // A made-up session id is unknown too; red's own still works.
    let made_up = post(RED_KEY, Some("not-a-session".into()), list.clone()).await.unwrap();
    assert_eq!(made_up.status().as_u16(), 404);
    let own = post(RED_KEY, Some(session.clone()), list.clone()).await.unwrap();
    assert_eq!(own.status().as_u16(), 200);
    assert!(own.text().await.unwrap_or_default().contains("fx__echo"));
    // Ending the session: blue cannot; red can, with a 200 (the Python SDK takes anything but
    // 200/204 for a failed termination); then the id is unknown.
    let delete = |key: &'static str| {
        s.gw.http
            .delete(&url)
            .bearer_auth(key)
            .header("mcp-session-id", session.clone())
            .header("mcp-protocol-version", "2025-11-25")
            .send()
    };
    assert_eq!(delete(BLUE_KEY).await.unwrap().status().as_u16(), 404);
    assert_eq!(delete(RED_KEY).await.unwrap().status().as_u16(), 200);
    let gone = post(RED_KEY, Some(session), list).await.unwrap();
    assert_eq!(gone.status().as_u16(), 404);
}
