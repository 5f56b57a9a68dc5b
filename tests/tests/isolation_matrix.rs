//! The tenant-isolation matrix (issue 11): two tenants with API keys that grant every scope,
//! against the real binary. Red makes one of everything — an admin-API invocation, an MCP
//! call, an A2A task with a push configuration, an artifact — and blue tries every route and
//! operation of the admin API, MCP (both eras), A2A (JSON-RPC and HTTP+JSON; gRPC is covered
//! by `a2a_e2e`'s tenant test through the Python SDK) and the artifact download with red's ids.
//! Nothing may be read, changed or delivered across tenants: every answer is "not found"
//! (or an empty list), and red's records are unchanged afterwards. A subject axis: crimson, in
//! red's tenant, sees red's admin-API invocations, MCP tasks and A2A tasks (with their push
//! configurations) exactly as ids that do not exist, and cannot take red's idempotency key;
//! scarlet, red's tenant-wide reader (`tasks:admin`), sees them all.

use serde_json::{Value, json};
use switchyard_tests::a2a::Webhook;
use switchyard_tests::gateway::{Gateway, Options};

use switchyard_tests::tenants::{BLUE, CRIMSON, RED, SCARLET};

fn start(dir: &std::path::Path) -> Gateway {
    let fixture = switchyard_tests::mcp::fixture_binary().display().to_string();
    let text = format!(
        r#"
{auth}

[mcp]
call_wait_ms = 20000
request_state_key = "switchyard-test-request-state-key-0123456789"
[[mcp.upstreams]]
name = "fx"
command = [{fixture:?}, "--stdio"]
operations = {{ echo = "read_only" }}

[a2a]
push = {{ allow_loopback = true }}
[[a2a.agents]]
name = "echo"
kind = "echo"
"#,
        auth = switchyard_tests::tenants::auth_section(),
    );
    let path = dir.join("switchyard.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    Gateway::start(Options { data_dir: dir.join("d"), config: Some(path), ..Options::default() })
}

struct Probe<'a> {
    gw: &'a Gateway,
    tried: usize,
}

impl Probe<'_> {
    async fn send(&mut self, key: &str, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
        self.tried += 1;
        let mut req = self
            .gw
            .http
            .request(method.parse().unwrap_or(reqwest::Method::GET), format!("{}{path}", self.gw.base))
            .bearer_auth(key)
            .header("a2a-version", "1.0")
            .header("accept", "application/json, text/event-stream");
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = req.send().await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let text = tokio::time::timeout(std::time::Duration::from_secs(5), resp.text()).await.ok().and_then(Result::ok);
        (status, text.unwrap_or_default())
    }

    async fn rpc(&mut self, key: &str, path: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, text) = self.send(key, "POST", path, Some(body)).await;
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

fn mcp_call(name: &str, args: Value, meta: Value) -> Value {
    let mut m = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), meta.as_object()) {
        m.extend(extra.clone());
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args, "_meta": m}})
}

fn mcp_method(method: &str, params: Value) -> Value {
    let mut p = params;
    p["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
}

async fn mcp(p: &mut Probe<'_>, key: &str, method: &str, name: &str, body: Value) -> String {
    p.tried += 1;
    let resp =
        p.gw.http
            .post(format!("{}/mcp", p.gw.base))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(body.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    resp.text().await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_crosses_between_tenants_on_any_route() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path());
    let hook = Webhook::start(0).await;
    let blue_hook = Webhook::start(0).await;
    let mut p = Probe { gw: &gw, tried: 0 };

    // Red's records.
    let (s, inv) = p
        .send(
            RED,
            "POST",
            "/admin/v1/invocations?wait_ms=5000",
            Some(json!({"upstream": "demo", "operation": "echo", "request": {"secret": "red-admin"},
                "idempotency_key": "red-key-1"})),
        )
        .await;
    assert_eq!(s, 201, "{inv}");
    let admin_inv =
        serde_json::from_str::<Value>(&inv).unwrap_or_default()["id"].as_str().unwrap_or_default().to_string();
    let called =
        mcp(&mut p, RED, "tools/call", "fx__echo", mcp_call("fx__echo", json!({"text": "red-mcp"}), json!({}))).await;
    let mcp_inv =
        called.split("inv_").nth(1).map(|r| format!("inv_{}", &r[..32])).unwrap_or_else(|| panic!("{called}"));
    let msg = json!({"message": {"messageId": "red-m1", "role": "ROLE_USER", "parts": [{"text": "red-a2a"}]}});
    let sent = p.rpc(RED, "/a2a/echo", "SendMessage", msg).await;
    let task = sent["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    let ctx = sent["result"]["task"]["contextId"].as_str().unwrap_or_default().to_string();
    let cfg = p
        .rpc(
            RED,
            "/a2a/echo",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": hook.url, "id": "red-cfg"}),
        )
        .await;
    assert_eq!(cfg["result"]["id"], "red-cfg", "{cfg}");
    let file = dir.path().join("red.bin");
    std::fs::write(&file, b"red artifact bytes").unwrap();
    let (ok, out) =
        gw.cli(&["artifacts", "put", &file.display().to_string(), "--tenant", "red", "--invocation", &admin_inv]);
    assert!(ok, "{out}");
    let artifact = serde_json::from_str::<Value>(out.get(out.find('{').unwrap_or(0)..).unwrap_or_default())
        .unwrap_or_default()["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let red_secrets = ["red-admin", "red-mcp", "red-a2a", "red artifact bytes", "red-cfg"];

    // Blue, with red's ids, everywhere. Every answer must be a miss and leak nothing.
    let mut answers: Vec<(String, u16, String)> = Vec::new();
    for (who, id) in [(BLUE, &admin_inv), (BLUE, &mcp_inv), (CRIMSON, &admin_inv), (CRIMSON, &mcp_inv)] {
        for (method, path, body) in [
            ("GET", format!("/admin/v1/invocations/{id}"), None),
            ("GET", format!("/admin/v1/invocations/{id}/events"), None),
            ("POST", format!("/admin/v1/invocations/{id}/cancel"), Some(json!({}))),
            (
                "POST",
                format!("/admin/v1/invocations/{id}/reconcile"),
                Some(json!({"decision": "not_applied", "message": "x"})),
            ),
        ] {
            // Reconciling is a tenant-wide role (it settles anyone's unknown call): another
            // subject of the tenant may hold it, another tenant never.
            if who == CRIMSON && path.ends_with("/reconcile") {
                continue;
            }
            let (s, text) = p.send(who, method, &path, body).await;
            answers.push((format!("{method} {path}"), s, text));
        }
    }
    let missing_inv = format!("inv_{}", "0".repeat(32));
    let (s, miss) = p.send(CRIMSON, "GET", &format!("/admin/v1/invocations/{missing_inv}"), None).await;
    let (s2, other) = p.send(CRIMSON, "GET", &format!("/admin/v1/invocations/{admin_inv}"), None).await;
    assert_eq!((s2, other.replace(&admin_inv, "ID")), (s, miss.replace(&missing_inv, "ID")), "a miss, exactly");
    for who in [BLUE, CRIMSON] {
        for path in ["/admin/v1/invocations", "/admin/v1/invocations?state=succeeded"] {
            let (s, text) = p.send(who, "GET", path, None).await;
            assert_eq!(s, 200);
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap_or_default()["items"], json!([]), "{path}: {text}");
            answers.push((path.to_string(), 404, text));
        }
    }
    // A key is its subject's: crimson reusing red's key gets a conflict naming nothing of red's.
    let (s, text) = p
        .send(
            CRIMSON,
            "POST",
            "/admin/v1/invocations",
            Some(json!({"upstream": "demo", "operation": "echo", "request": {"secret": "red-admin"},
                "idempotency_key": "red-key-1"})),
        )
        .await;
    assert_eq!(s, 409, "{text}");
    assert!(!text.contains(&admin_inv), "{text}");
    answers.push(("POST /admin/v1/invocations (red's key)".into(), 404, text));
    let (s, text) = p.send(BLUE, "GET", &format!("/artifacts/{artifact}"), None).await;
    answers.push(("GET /artifacts".into(), s, text));
    // The policy simulator answers for the caller's own tenant only: naming red's subject asks
    // about blue's subject of that name, and a body naming a tenant is refused.
    let asked =
        json!({"subject": "red-bot", "upstream": "demo", "operation": "echo", "request": {"secret": "red-admin"}});
    let (s, text) = p.send(BLUE, "POST", "/admin/v1/policy/decide", Some(asked)).await;
    assert_eq!(s, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap_or_default()["subject"]["tenant"], "blue", "{text}");
    let (s, text) = p
        .send(
            BLUE,
            "POST",
            "/admin/v1/policy/decide",
            Some(json!({"tenant": "red", "upstream": "demo", "operation": "echo"})),
        )
        .await;
    assert_eq!(s, 400, "{text}");
    // MCP: tasks/get and tasks/cancel on red's call, by another tenant and by another subject of
    // red's tenant (a task is its caller's: the same answer as an id that does not exist).
    let missing = format!("inv_{}", "0".repeat(32));
    let not_there = mcp(&mut p, RED, "tasks/get", &missing, mcp_method("tasks/get", json!({"taskId": missing}))).await;
    for who in [BLUE, CRIMSON] {
        for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
            let params = match method {
                "tasks/update" => json!({"taskId": mcp_inv, "inputResponses": {}}),
                _ => json!({"taskId": mcp_inv}),
            };
            let text = mcp(&mut p, who, method, &mcp_inv, mcp_method(method, params)).await;
            assert!(text.contains("unknown task") || text.contains("-32602"), "{method}: {text}");
            assert_eq!(text.replace(&mcp_inv, "ID"), not_there.replace(&missing, "ID"), "{method} differs from a miss");
            answers.push((method.into(), 404, text));
        }
    }
    // A2A: every task operation with red's task id, on both bindings, by another tenant and by
    // another subject of red's tenant.
    for who in [BLUE, CRIMSON] {
        for (method, params) in [
            ("GetTask", json!({"id": task})),
            ("CancelTask", json!({"id": task})),
            ("SubscribeToTask", json!({"id": task})),
            ("ListTasks", json!({"contextId": ctx})),
            ("GetTaskPushNotificationConfig", json!({"taskId": task, "id": "red-cfg"})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
            ("CreateTaskPushNotificationConfig", json!({"taskId": task, "url": blue_hook.url})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": "red-cfg"})),
            (
                "SendMessage",
                json!({"message": {"messageId": "blue-1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "taskId": task}}),
            ),
            (
                "SendMessage",
                json!({"message": {"messageId": "blue-2", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": ctx}}),
            ),
        ] {
            let v = p.rpc(who, "/a2a/echo", method, params.clone()).await;
            let text = v.to_string();
            if method == "ListTasks" {
                assert_eq!(v["result"]["tasks"], json!([]), "{text}");
            } else if method == "SendMessage" && params["message"].get("taskId").is_none() {
                // A new task of blue's own in a context id red also used: nothing of red's in it.
                assert!(v["result"]["task"].is_object(), "{text}");
                assert_ne!(v["result"]["task"]["id"], json!(task));
            } else {
                assert_eq!(v["error"]["code"], -32001, "{method}: {text}");
            }
            answers.push((format!("a2a {method}"), 404, text));
        }
        for (method, path) in [
            ("GET", format!("/a2a/echo/rest/tasks/{task}")),
            ("POST", format!("/a2a/echo/rest/tasks/{task}:cancel")),
            ("GET", format!("/a2a/echo/rest/tasks/{task}:subscribe")),
            ("GET", format!("/a2a/echo/rest/tasks/{task}/pushNotificationConfigs")),
            ("GET", format!("/a2a/echo/rest/tasks/{task}/pushNotificationConfigs/red-cfg")),
            ("DELETE", format!("/a2a/echo/rest/tasks/{task}/pushNotificationConfigs/red-cfg")),
            ("GET", format!("/a2a/echo/rest/red/tasks/{task}")),
        ] {
            let (s, text) = p.send(who, method, &path, (method == "POST").then(|| json!({}))).await;
            assert_eq!(s, 404, "{method} {path}: {text}");
            answers.push((format!("{method} {path}"), s, text));
        }
    }
    for (what, status, text) in &answers {
        assert!(matches!(status, 404 | 200), "{what}: {status} {text}");
        for secret in red_secrets {
            assert!(!text.contains(secret), "{what} leaked `{secret}`: {text}");
        }
    }
    for (what, status, text) in answers
        .iter()
        .filter(|(w, ..)| w.starts_with("GET /admin") || w.starts_with("POST /admin") || w == "GET /artifacts")
    {
        assert_eq!(*status, 404, "{what}: {text}");
    }

    // A tenant-wide reader (`tasks:admin`) of red's tenant sees red's records; blue's still not.
    let (s, shown) = p.send(SCARLET, "GET", &format!("/admin/v1/invocations/{admin_inv}"), None).await;
    assert_eq!(s, 200, "{shown}");
    let (_, listed) = p.send(SCARLET, "GET", "/admin/v1/invocations", None).await;
    assert!(listed.contains(&admin_inv) && listed.contains(&mcp_inv), "{listed}");
    let got = p.rpc(SCARLET, "/a2a/echo", "GetTask", json!({"id": task})).await;
    assert_eq!(got["result"]["id"], json!(task), "{got}");
    let (s, text) = p.send(SCARLET, "GET", &format!("/a2a/echo/rest/tasks/{task}"), None).await;
    assert_eq!(s, 200, "{text}");
    let listed = p.rpc(SCARLET, "/a2a/echo", "ListTasks", json!({"contextId": ctx})).await;
    assert!(listed["result"]["tasks"].as_array().is_some_and(|t| t.iter().any(|t| t["id"] == json!(task))), "{listed}");
    let text = mcp(&mut p, SCARLET, "tasks/get", &mcp_inv, mcp_method("tasks/get", json!({"taskId": mcp_inv}))).await;
    assert!(!text.contains("unknown task"), "{text}");

    // Red's records are as red left them, and nothing was delivered for blue.
    let (_, shown) = p.send(RED, "GET", &format!("/admin/v1/invocations/{admin_inv}"), None).await;
    assert!(shown.contains("\"succeeded\""), "{shown}");
    let got = p.rpc(RED, "/a2a/echo", "GetTask", json!({"id": task})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(got["result"]["history"].as_array().map(Vec::len), Some(2), "no foreign message: {got}");
    let configs = p.rpc(RED, "/a2a/echo", "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    assert_eq!(configs["result"]["configs"].as_array().map(Vec::len), Some(1), "{configs}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(blue_hook.hits().is_empty(), "blue's webhook got red's events");
    let (s, bytes) = p.send(RED, "GET", &format!("/artifacts/{artifact}"), None).await;
    assert_eq!((s, bytes.as_str()), (200, "red artifact bytes"));
    eprintln!(
        "isolation matrix: {} requests as the other tenant (of {} in all); nothing crossed",
        answers.len(),
        p.tried
    );
}
