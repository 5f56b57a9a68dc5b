//! The MCP face end to end: the real gateway binary fronting the fixture upstream over stdio (the
//! gateway spawns it) and over HTTP, driven by rmcp clients of both eras. Covers namespacing,
//! durable tools/call (visible in the admin API), MRTR with sealed state (tamper refused),
//! idempotency keys, a `write` lost to a crash (unknown, never retried, then reconciled), schema
//! drift (withheld until approved), cancellation and bad input.

use std::time::Duration;

use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{Fixture, KEY_META, UpstreamSpec, call, call_with_meta, connect, text_of, write_config};

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| panic!("{e}"))
}

fn start(dir: &std::path::Path, upstreams: &[UpstreamSpec], env: Vec<(String, String)>) -> Gateway {
    let config = write_config(dir, upstreams, "");
    Gateway::start(Options { data_dir: dir.to_path_buf(), config: Some(config), env, ..Options::default() })
}

/// Whether `name` is listed within 5 s (running gateways pick approvals up within 2 s).
async fn listed_within_5s(client: &switchyard_tests::mcp::Client, name: &str) -> bool {
    for _ in 0..50 {
        if tool_names(client).await.iter().any(|n| n == name) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

async fn tool_names(client: &switchyard_tests::mcp::Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap_or_else(|e| panic!("tools/list: {e}"));
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_eras_list_and_call_through_stdio_and_http_upstreams() {
    let dir = tempfile::tempdir().unwrap();
    let web = Fixture::start(&[]);
    let gw = start(dir.path(), &[UpstreamSpec::stdio("local", &[]), UpstreamSpec::http("web", &web.url)], vec![]);
    let url = format!("{}/mcp", gw.base);
    for modern in [true, false] {
        let client = connect(&url, modern).await;
        let names = tool_names(&client).await;
        for expected in ["local__echo", "web__echo", "local__count_write", "web__test_simple_text"] {
            assert!(names.iter().any(|n| n == expected), "{expected} missing from {names:?} (modern: {modern})");
        }
        assert!(!names.iter().any(|n| n == "echo"), "upstream names are namespaced");
        for tool in ["local__echo", "web__echo"] {
            let r = client.call_tool(call(tool, json!({"text": format!("hi {modern}")}))).await;
            let r = to_json(&r.unwrap_or_else(|e| panic!("{tool}: {e}")));
            assert_eq!(text_of(&r), format!("hi {modern}"), "{r}");
            assert_eq!(r["structuredContent"]["text"], format!("hi {modern}"));
            let inv = r["_meta"]["dev.switchyard/invocation"].as_str().unwrap_or_else(|| panic!("no invocation: {r}"));
            let (status, shown) =
                gw.get("default", &format!("/admin/v1/invocations/{inv}?wait_ms=5000")).await.unwrap();
            assert_eq!(status, 200, "{shown}");
            assert_eq!(shown["state"]["state"], "succeeded", "{shown}");
            assert_eq!(shown["target"]["effect"], "read_only");
        }
        let unknown = client.call_tool(call("nope__nothing", json!({}))).await;
        let e = unknown.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("unknown tool"), "unknown tool refused clearly: {e}");
        let _ = client.cancel().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_rounds_are_sealed_invocations_and_tampering_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path(), &[UpstreamSpec::stdio("fx", &[])], vec![]);
    let url = format!("{}/mcp", gw.base);
    let client = connect(&url, true).await;
    let first = client.call_tool_once(call("fx__ask_name", json!({}))).await.unwrap();
    let CallToolResponse::InputRequired(asked) = first else { panic!("expected input_required, got {first:?}") };
    let state = asked.request_state.clone().unwrap_or_else(|| panic!("no requestState"));
    let key = asked
        .input_requests
        .as_ref()
        .and_then(|r| r.keys().next().cloned())
        .unwrap_or_else(|| panic!("no input request"));
    let answer = json!({"action": "accept", "content": {"name": "Grace"}});
    let mut retry = call("fx__ask_name", json!({}));
    retry.input_responses = Some([(key.clone(), answer.clone())].into_iter().collect());
    // A tampered state is refused.
    let mut tampered = retry.clone();
    let mut bytes = state.clone().into_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    tampered.request_state = Some(String::from_utf8(bytes).unwrap_or_default());
    let refused = client.call_tool_once(tampered).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("requestState is invalid"), "{refused}");
    // A state sealed for one tool is refused on another.
    let mut elsewhere = call("fx__echo", json!({"text": "x"}));
    elsewhere.request_state = Some(state.clone());
    assert!(client.call_tool_once(elsewhere).await.is_err());
    retry.request_state = Some(state);
    let done = client.call_tool_once(retry.clone()).await.unwrap();
    let CallToolResponse::Complete(done) = done else { panic!("expected a result, got {done:?}") };
    let done = to_json(&done);
    assert_eq!(text_of(&done), "hello Grace", "{done}");
    // Replaying the same round (same requestState, same answers) attaches to its invocation.
    let replay = client.call_tool_once(retry.clone()).await.unwrap();
    let CallToolResponse::Complete(replay) = replay else { panic!("expected a result, got {replay:?}") };
    assert_eq!(to_json(&replay)["_meta"], done["_meta"], "the replay is the same invocation");
    // The same state with other answers is refused, and calls nothing.
    let mut other = retry;
    other.input_responses =
        Some([(key.clone(), json!({"action": "accept", "content": {"name": "Eve"}}))].into_iter().collect());
    assert!(client.call_tool_once(other).await.is_err(), "a replay with other answers is refused");
    // Two rounds, two invocations, the second continuing the first.
    let all = gw.all("default").await;
    let ask: Vec<&Value> = all.iter().filter(|i| i["target"]["operation"] == "ask_name").collect();
    assert_eq!(ask.len(), 2, "{ask:?}");
    let (newer, older) = (ask[0], ask[1]);
    assert_eq!(newer["request"]["continues"], older["id"], "{newer}");
    assert_eq!(newer["request"]["inputResponses"][&key], answer);
    // The legacy era: the gateway asks the client itself and answers the upstream.
    let legacy = connect(&url, false).await;
    let r = legacy.call_tool(call("fx__ask_name", json!({}))).await.unwrap();
    assert_eq!(text_of(&to_json(&r)), "hello Ada");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_attaches_a_retry_to_the_original_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let gw = start(dir.path(), &[UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)])], vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let keyed = || call_with_meta("fx__count_write", json!({"key": "k1"}), &[(KEY_META, json!("order-17"))]);
    let a = to_json(&client.call_tool(keyed()).await.unwrap());
    let b = to_json(&client.call_tool(keyed()).await.unwrap());
    assert_eq!(text_of(&a), "wrote k1");
    assert_eq!(a["_meta"], b["_meta"], "the retry answers from the same invocation");
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 1, "one physical call");
    // The same key with other arguments is refused, and calls nothing.
    let mut other = keyed();
    other.arguments = Some(rmcp::model::JsonObject::from_iter([("key".to_string(), json!("k2"))]));
    let e = client.call_tool(other).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("order-17"), "{e}");
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 1);
    // A malformed key is refused clearly.
    let mut bad = keyed();
    if let Some(m) = bad.meta.as_mut() {
        m.0.insert("dev.switchyard/idempotencyKey".into(), json!(17));
    }
    let e = client.call_tool(bad).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("idempotencyKey"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lost_to_a_crash_is_unknown_then_reconciled_and_ran_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let upstreams = [UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)])];
    let fast: Vec<(String, String)> = [
        ("SWITCHYARD__ENGINE__LEASE_TTL_MS", "3000"),
        ("SWITCHYARD__ENGINE__BACKOFF_MAX_MS", "1000"),
        ("SWITCHYARD__ENGINE__RECOVERY_INTERVAL_MS", "300"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut pause = fast.clone();
    pause.push(("SWITCHYARD_FAULT_PAUSE".to_string(), "after_upstream_reply".to_string()));
    let mut gw = start(dir.path(), &upstreams, pause);
    let url = format!("{}/mcp", gw.base);
    let keyed = || call_with_meta("fx__count_write", json!({"key": "crash"}), &[(KEY_META, json!("pay-42"))]);
    let client = connect(&url, true).await;
    let pending = tokio::spawn(async move { client.call_tool(keyed()).await.map(|r| to_json(&r)) });
    // The upstream did the write; the gateway holds the reply uncommitted. Kill it there.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&log).unwrap_or_default().lines().count() < 1 {
        assert!(std::time::Instant::now() < deadline, "the upstream was never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    gw.kill9();
    pending.abort();
    let gw = start(dir.path(), &upstreams, fast);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    // The lease of the killed worker expires, recovery finds the write in flight: unknown.
    let mut answer = Value::Null;
    for _ in 0..200 {
        answer = to_json(&client.call_tool(keyed()).await.unwrap());
        if answer["structuredContent"]["state"] == "unknown" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(answer["isError"], true, "{answer}");
    assert_eq!(answer["structuredContent"]["state"], "unknown", "{answer}");
    let inv = answer["structuredContent"]["invocation"].as_str().unwrap_or_default().to_string();
    assert!(text_of(&answer).contains(&inv) && text_of(&answer).contains("UNKNOWN"), "{answer}");
    let result = json!({"content": [{"type": "text", "text": "wrote crash (confirmed by operator)"}]});
    let (ok, out) = gw.cli(&["reconcile", &inv, "applied", "--result", &result.to_string()]);
    assert!(ok, "{out}");
    let after = to_json(&client.call_tool(keyed()).await.unwrap());
    assert_eq!(text_of(&after), "wrote crash (confirmed by operator)", "{after}");
    assert_ne!(after["isError"], true);
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 1, "the upstream counted one call");
}

/// An upstream session's tool list can fall behind the upstream's without a `list_changed`
/// (here the upstream starts to want an `Mcp-Param-Value` header, SEP-2243). The upstream then
/// refuses the call's headers before running the tool (-32020); the gateway lists the tools
/// again on that session and sends the call once more, now with the header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_header_map_fell_behind_lists_again_and_sends_once_more() {
    let dir = tempfile::tempdir().unwrap();
    let hide = dir.path().join("hide-headers");
    std::fs::write(&hide, "").unwrap();
    let web = Fixture::start(&[("FIXTURE_HIDE_HEADERS_WHILE", &hide.display().to_string())]);
    let gw = start(dir.path(), &[UpstreamSpec::http("web", &web.url)], vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let tool = "web__test_x_mcp_header";
    assert!(tool_names(&client).await.iter().any(|n| n == tool), "listed (without its header annotation)");
    std::fs::remove_file(&hide).unwrap();
    let r = client.call_tool(call(tool, json!({"value": "Hello"}))).await;
    let r = to_json(&r.unwrap());
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(text_of(&r), "Hello", "{r}");
    let inv = r["_meta"]["dev.switchyard/invocation"].as_str().unwrap_or_else(|| panic!("no invocation: {r}"));
    let (ok, events) = gw.cli(&["invocations", "events", inv]);
    assert!(ok, "{events}");
    assert_eq!(
        events.matches("\"type\":\"dispatch_started\"").count(),
        1,
        "one attempt: the refused send ran nothing: {events}"
    );
    assert!(events.contains("\"type\":\"succeeded\""), "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_schema_withholds_the_tool_until_approved() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = [UpstreamSpec::stdio("fx", &[("FIXTURE_SCHEMA_VARIANT", "1")])];
    let mut gw = start(dir.path(), &v1, vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    assert!(tool_names(&client).await.contains(&"fx__drift_tool".to_string()));
    assert!(gw.terminate());
    // The upstream now declares another input schema.
    let v2 = [UpstreamSpec::stdio("fx", &[("FIXTURE_SCHEMA_VARIANT", "2")])];
    let gw = start(dir.path(), &v2, vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"fx__drift_tool".to_string()), "withheld: {names:?}");
    assert!(names.contains(&"fx__echo".to_string()), "other tools stay");
    let e = client.call_tool(call("fx__drift_tool", json!({"a": "x", "b": 1}))).await.err().map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(e.contains("withheld") && e.contains("switchyard upstreams approve fx --tool drift_tool"), "{e}");
    let (status, view) = gw.get("default", "/admin/v1/upstreams").await.unwrap();
    assert_eq!(status, 200);
    let drift = view["tools"].as_array().and_then(|t| t.iter().find(|t| t["tool"] == "drift_tool").cloned());
    assert_eq!(drift.map(|d| d["approved"].clone()), Some(json!(false)), "{view}");
    let (ok, out) = gw.cli(&["upstreams", "list"]);
    assert!(ok && out.contains("drift_tool: WITHHELD"), "{out}");
    let (ok, out) = gw.cli(&["upstreams", "approve", "fx", "--tool", "drift_tool"]);
    assert!(ok && out.contains("approved 1"), "{out}");
    // The running gateway picks the approval up within seconds.
    assert!(listed_within_5s(&client, "fx__drift_tool").await, "approved tool is listed again");
    let r = client.call_tool(call("fx__drift_tool", json!({"a": "x", "b": 1}))).await;
    assert_eq!(text_of(&to_json(&r.unwrap())), "drift ok");
}

/// A changed description (or title, or annotations) is pinned like a schema: a description that
/// starts instructing the model withholds the tool until an operator approves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_description_withholds_the_tool_until_approved() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = start(dir.path(), &[UpstreamSpec::stdio("fx", &[])], vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    assert!(tool_names(&client).await.contains(&"fx__drift_tool".to_string()));
    assert!(gw.terminate());
    let poisoned = [UpstreamSpec::stdio("fx", &[("FIXTURE_DESCRIPTION_VARIANT", "2")])];
    let gw = start(dir.path(), &poisoned, vec![]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"fx__drift_tool".to_string()), "withheld: {names:?}");
    let (ok, out) = gw.cli(&["upstreams", "list", "fx"]);
    assert!(ok && out.contains("fx/tool-meta drift_tool: WITHHELD (description or annotations changed)"), "{out}");
    assert!(out.contains("fx/tool drift_tool: approved"), "the schema did not change: {out}");
    // Approved through the admin API this time (an unknown tool is not found, nothing changes).
    let (status, body) = gw.post("default", "/admin/v1/upstreams/fx/approve", json!({"tool": "nope"})).await.unwrap();
    assert_eq!(status, 404, "{body}");
    let (status, body) =
        gw.post("default", "/admin/v1/upstreams/fx/approve", json!({"tool": "drift_tool"})).await.unwrap();
    assert_eq!((status, body["approved"].clone()), (200, json!(1)), "{body}");
    assert!(listed_within_5s(&client, "fx__drift_tool").await, "approved tool is listed again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancel_cancels_the_invocation_and_bad_requests_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path(), &[UpstreamSpec::stdio("fx", &[])], vec![]);
    let url = format!("{}/mcp", gw.base);
    let client = connect(&url, false).await;
    let peer = client.peer().clone();
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(
        "fx__slow",
        json!({"steps": 100, "step_ms": 100}),
    )));
    let handle = peer.send_request_with_option(request, rmcp::service::PeerRequestOptions::default()).await.unwrap();
    let id = handle.id.clone();
    let mut running = None;
    for _ in 0..100 {
        let all = gw.all("default").await;
        running = all.into_iter().find(|i| i["target"]["operation"] == "slow" && i["state"]["state"] == "dispatching");
        if running.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let inv =
        running.unwrap_or_else(|| panic!("slow call never dispatched"))["id"].as_str().unwrap_or_default().to_string();
    peer.notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(id), Some("user gave up".into())))
        .await
        .unwrap();
    let mut state = Value::Null;
    for _ in 0..100 {
        let (_, shown) = gw.get("default", &format!("/admin/v1/invocations/{inv}")).await.unwrap();
        state = shown["state"]["state"].clone();
        if state == "canceled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "canceled", "a read_only call canceled by its client is canceled upstream too");
    // A write canceled in flight: MCP cannot confirm the tool stopped, so the outcome is unknown.
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(
        "fx__count_write",
        json!({"key": "w", "delay_ms": 10_000}),
    )));
    let handle = peer.send_request_with_option(request, rmcp::service::PeerRequestOptions::default()).await.unwrap();
    let id = handle.id.clone();
    let mut write = None;
    for _ in 0..100 {
        let all = gw.all("default").await;
        write =
            all.into_iter().find(|i| i["target"]["operation"] == "count_write" && i["state"]["state"] == "dispatching");
        if write.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let write =
        write.unwrap_or_else(|| panic!("write never dispatched"))["id"].as_str().unwrap_or_default().to_string();
    peer.notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(id), None)).await.unwrap();
    for _ in 0..100 {
        let (_, shown) = gw.get("default", &format!("/admin/v1/invocations/{write}")).await.unwrap();
        state = shown["state"]["state"].clone();
        if state == "unknown" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "unknown", "a write canceled in flight is unknown, never claimed canceled");
    // Bad input: a body that is not JSON-RPC gets a protocol error, and records nothing.
    let before = gw.all("default").await.len();
    let resp = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    // A foreign Host is refused (DNS-rebinding protection).
    let port = gw.base.rsplit(':').next().unwrap_or_default().to_string();
    let resp = reqwest::Client::new()
        .post(&url)
        .header("host", format!("evil.example:{port}"))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    assert_eq!(gw.all("default").await.len(), before);
}

/// A legacy client that reports every `resources/updated` it receives.
#[derive(Debug, Clone)]
struct Watcher(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_subscription_relays_the_upstreams_resource_updates() {
    let dir = tempfile::tempdir().unwrap();
    let web = Fixture::start(&[]);
    let gw = start(dir.path(), &[UpstreamSpec::http("web", &web.url)], vec![]);
    let url = format!("{}/mcp", gw.base);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
    let watcher = rmcp::service::serve_client_with_lifecycle(
        Watcher(tx),
        transport,
        rmcp::service::ClientLifecycleMode::Initialize,
    )
    .await
    .unwrap();
    #[allow(deprecated)]
    watcher
        .peer()
        .subscribe(rmcp::model::SubscribeRequestParams::new("test://watched-resource"))
        .await
        .unwrap_or_else(|e| panic!("subscribe: {e}"));
    // Another client makes the upstream change the resource; the update reaches the watcher.
    let other = connect(&url, true).await;
    let mut got = None;
    for _ in 0..20 {
        other.call_tool(call("web__test_trigger_resource_update", json!({}))).await.unwrap();
        if let Ok(Some(uri)) = tokio::time::timeout(Duration::from_millis(250), rx.recv()).await {
            got = Some(uri);
            break;
        }
    }
    assert_eq!(got.as_deref(), Some("test://watched-resource"), "the update was relayed");
    #[allow(deprecated)]
    watcher
        .peer()
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new("test://watched-resource"))
        .await
        .unwrap_or_else(|e| panic!("unsubscribe: {e}"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    while rx.try_recv().is_ok() {}
    other.call_tool(call("web__test_trigger_resource_update", json!({}))).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(500), rx.recv()).await.is_err(), "no update after unsubscribe");
}
