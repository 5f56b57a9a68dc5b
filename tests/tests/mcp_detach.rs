//! A client that stops waiting for a tools/call (issue 11, items 5 and 15), against the real
//! binary fronting the fixture over stdio: closing the stream cancels the call a request made,
//! but a keyed call (or one a request only attached to) goes on, and a call still running when
//! the wait ends is answered "do not retry blindly", never as a plain failure.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{UpstreamSpec, write_config};

fn start(dir: &Path, log: &Path, env: &[(&str, &str)]) -> Gateway {
    let log_s = log.display().to_string();
    let config = write_config(dir, &[UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)])], "");
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Gateway::start(Options { data_dir: dir.join("d"), config: Some(config), env, ..Options::default() })
}

/// A bare 2026-07-28 `tools/call` (SSE answer), with an idempotency key when given.
fn request(gw: &Gateway, tool: &str, args: Value, key: Option<&str>) -> reqwest::RequestBuilder {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    if let Some(k) = key {
        meta["dev.switchyard/idempotencyKey"] = json!(k);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta}});
    gw.http
        .post(format!("{}/mcp", gw.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
}

/// The JSON-RPC answer in an SSE (or JSON) body.
async fn answer(resp: reqwest::Response) -> Value {
    let text = resp.text().await.unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

/// Sends the request and drops it after `ms` (the client goes away mid-call).
async fn abandon(req: reqwest::RequestBuilder, ms: u64) {
    let _ = tokio::time::timeout(Duration::from_millis(ms), async move {
        if let Ok(resp) = req.send().await {
            let _ = resp.bytes().await;
        }
    })
    .await;
}

async fn state_of(gw: &Gateway, tool: &str) -> Vec<String> {
    let all = gw.all("default").await;
    all.iter()
        .filter(|i| i["target"]["operation"] == tool)
        .map(|i| i["state"]["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn settle(gw: &Gateway, tool: &str) -> Vec<String> {
    for _ in 0..100 {
        let states = state_of(gw, tool).await;
        if !states.is_empty() && states.iter().all(|s| s != "dispatching" && s != "admitted") {
            return states;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    state_of(gw, tool).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_write_outlives_its_connection_and_a_retry_attaches() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let gw = start(dir.path(), &log, &[]);
    let args = json!({"key": "blip", "delay_ms": 1200});
    // The connection drops while the write runs (a network blip).
    abandon(request(&gw, "fx__count_write", args.clone(), Some("order-blip")), 400).await;
    // A second client attaches with the same key, and gives up too: neither cancels the call.
    abandon(request(&gw, "fx__count_write", args.clone(), Some("order-blip")), 200).await;
    assert_eq!(settle(&gw, "count_write").await, ["succeeded"], "the keyed write ran to completion");
    // The client retries with its key and gets the result of that one call.
    let retry = answer(request(&gw, "fx__count_write", args, Some("order-blip")).send().await.unwrap()).await;
    assert_eq!(retry["result"]["content"][0]["text"], "wrote blip", "{retry}");
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 1, "one physical call");
    // An unkeyed call is the request's own: closing its stream cancels it (MCP's cancel on HTTP).
    abandon(request(&gw, "fx__echo", json!({"text": "x", "delay_ms": 5000}), None), 400).await;
    assert_eq!(settle(&gw, "echo").await, ["canceled"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_still_running_after_the_wait_says_so_and_names_its_invocation() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let gw =
        start(dir.path(), &log, &[("SWITCHYARD__MCP__CALL_WAIT_MS", "300"), ("SWITCHYARD__MCP__TASK_AFTER_MS", "250")]);
    let resp = request(&gw, "fx__count_write", json!({"key": "slow", "delay_ms": 1500}), Some("order-slow"))
        .send()
        .await
        .unwrap();
    let v = answer(resp).await;
    let result = &v["result"];
    assert_eq!(result["isError"], true, "{v}");
    assert_eq!(result["structuredContent"]["state"], "dispatching", "{v}");
    let inv = result["structuredContent"]["invocation"].as_str().unwrap_or_default().to_string();
    assert!(inv.starts_with("inv_"), "{v}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Do not call again blindly") && text.contains(&inv), "{text}");
    // It was not canceled: it completes, once.
    assert_eq!(settle(&gw, "count_write").await, ["succeeded"]);
    assert_eq!(std::fs::read_to_string(&log).unwrap_or_default().lines().count(), 1);
}

/// Reads to an HTTP upstream share kept-alive connections; a write goes on a connection of its
/// own, so a write to an upstream that died is refused its connection: it never left the gateway,
/// it fails ("unavailable", safe to retry) and is never reported `unknown` — even right after
/// reads left kept connections to the upstream that died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_keep_their_connection_and_a_write_whose_connection_is_refused_failed_and_is_not_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = switchyard_tests::mcp::Fixture::start(&[]);
    let config = write_config(dir.path(), &[UpstreamSpec::http("web", &fixture.url)], "");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let call = |tool: &str, args: Value, key: Option<String>| {
        let req = request(&gw, tool, args, key.as_deref());
        async move { answer(req.send().await.unwrap()).await }
    };
    let ok = call("web__echo", json!({"text": "up"}), None).await;
    assert_eq!(ok["result"]["content"][0]["text"], "up", "{ok}");
    // Each count opens a connection of its own too (hence the `- 1`s). A read may still open
    // one (while the previous read's connection is being drained, or for a new session's
    // handshake), but most go on a kept one.
    let before = fixture.connections().await;
    for n in 0..20 {
        let v = call("web__echo", json!({"text": format!("read {n}")}), None).await;
        assert_eq!(v["result"]["content"][0]["text"], format!("read {n}"), "{v}");
    }
    let after_reads = fixture.connections().await;
    assert!(after_reads - before - 1 < 10, "20 reads in a row opened {} connections", after_reads - before - 1);
    for n in 0..3 {
        let v = call("web__count_write", json!({"key": format!("w{n}")}), Some(format!("order-{n}"))).await;
        assert_eq!(v["result"]["isError"], false, "{v}");
    }
    let after_writes = fixture.connections().await;
    assert_eq!(after_writes - after_reads - 1, 3, "each write on a connection of its own");
    drop(fixture); // the upstream is gone: connections are refused
    let v = answer(
        request(&gw, "web__count_write", json!({"key": "refused"}), Some("order-refused")).send().await.unwrap(),
    )
    .await;
    assert_eq!(v["result"]["isError"], true, "{v}");
    let mut states = settle(&gw, "count_write").await;
    states.sort();
    assert_eq!(states, ["failed", "succeeded", "succeeded", "succeeded"], "{v}");
    let all = gw.all("default").await;
    let failed = all
        .iter()
        .find(|i| i["target"]["operation"] == "count_write" && i["state"]["state"] == "failed")
        .cloned()
        .unwrap_or_default();
    assert_eq!(failed["state"]["error"]["code"], "upstream_unavailable", "{failed}");
    assert_eq!(failed["state"]["error"]["retry_safe"], true, "{failed}");
}
