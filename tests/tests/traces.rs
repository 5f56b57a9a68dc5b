//! OpenTelemetry traces over OTLP: calls that arrive with a W3C `traceparent` — in an MCP
//! request's `_meta`, an A2A request's HTTP header, or an A2A send's metadata — become one trace
//! from the caller through the gateway to the upstream. The gateway exports its spans
//! (`invocation` > `admission`, `attempt` > `upstream.call`, `commit`) to a collector in this
//! test that decodes the protobuf, and the upstreams no one here wrote — a FastMCP server and an
//! a2a-sdk agent — receive the same trace id, with the gateway's `upstream.call` span as their
//! parent. Without `[telemetry]` nothing is sent upstream.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::InternalAgent;
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{call_with_meta, connect};
use switchyard_tests::otlp::{Collector, SpanSeen};

/// A gateway config: the FastMCP peer as MCP upstream `fm` (tools unprefixed), the internal
/// agents (`agents`: the one on JSON-RPC and HTTP+JSON, the gRPC-only one) as A2A agents
/// `internal` and `internal-grpc`, and `telemetry` as the `[telemetry]` section's body.
fn config(dir: &std::path::Path, agents: (&str, &str), telemetry: &str) -> std::path::PathBuf {
    let peer = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let s = |v: String| Value::String(v).to_string();
    let text = format!(
        "[telemetry]\n{telemetry}\n\n\
         [mcp]\nanonymous = true\nconnect_timeout_ms = 30000\n\n\
         [[mcp.upstreams]]\nname = \"fm\"\nprefix = \"\"\ncommand = [{}, {}]\n\
         operations = {{ trace_seen = \"read_only\", greet = \"read_only\" }}\n\n\
         [a2a]\nanonymous = true\n\n\
         [[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = {}\n\n\
         [[a2a.agents]]\nname = \"internal-grpc\"\nkind = \"upstream\"\ncard_url = {}\n",
        s(switchyard_tests::mcp::python().display().to_string()),
        s(peer.display().to_string()),
        s(format!("{}/.well-known/agent-card.json", agents.0)),
        s(format!("{}/.well-known/agent-card.json", agents.1)),
    );
    let path = dir.join("traces.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// A fresh caller context: (trace id, the caller's span id, the `traceparent`).
fn caller() -> (String, String, String) {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let span = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
    let header = format!("00-{trace}-{span}-01");
    (trace, span, header)
}

/// `traceparent`'s (trace id, parent id).
fn fields(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_string(), parts[2].to_string())
}

fn one<'a>(spans: &'a [SpanSeen], name: &str) -> &'a SpanSeen {
    let found: Vec<&SpanSeen> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
    found[0]
}

/// The trace's span tree is the gateway's invocation: `invocation` (a server span, child of the
/// caller's span `parent`, naming the invocation) > `admission`, `attempt` > `upstream.call` (a
/// client span) and the commits — a read to an MCP server (`fm`) goes out while its admission
/// commits, so its `upstream.call` is the admission's child. Returns the `upstream.call` span's id.
fn check_tree(spans: &[SpanSeen], parent: &str, invocation: &str, upstream: &str) -> String {
    let inv = one(spans, "invocation");
    assert_eq!(inv.parent, parent, "the invocation joins the caller's span: {inv:#?}");
    assert_eq!((inv.kind, inv.service.as_str()), (2, "switchyard"), "{inv:#?}");
    assert_eq!(inv.attributes.get("invocation.id").map(String::as_str), Some(invocation), "{inv:#?}");
    assert_eq!(inv.attributes.get("upstream").map(String::as_str), Some(upstream), "{inv:#?}");
    assert_eq!(inv.attributes.get("state").map(String::as_str), Some("succeeded"), "{inv:#?}");
    let admission = one(spans, "admission");
    assert_eq!(admission.parent, inv.span_id);
    let attempt = one(spans, "attempt");
    assert_eq!(attempt.parent, inv.span_id);
    let call = one(spans, "upstream.call");
    let sent_by = if upstream == "fm" { admission } else { attempt };
    assert_eq!((call.parent.as_str(), call.kind), (sent_by.span_id.as_str(), 3), "{call:#?}");
    let commits: Vec<&SpanSeen> = spans.iter().filter(|s| s.name == "commit").collect();
    assert!(
        commits.iter().any(|c| c.attributes.get("what").map(String::as_str) == Some("outcome")),
        "the outcome's commit: {spans:#?}"
    );
    assert!(commits.iter().all(|c| c.parent == attempt.span_id), "{spans:#?}");
    call.span_id.clone()
}

/// Every span of a finished invocation has arrived.
fn complete(spans: &[SpanSeen]) -> bool {
    ["invocation", "admission", "attempt", "upstream.call"].iter().all(|n| spans.iter().any(|s| s.name == *n))
        && spans.iter().any(|s| s.name == "commit" && s.attributes.get("what").map(String::as_str) == Some("outcome"))
}

/// The `traceparent` an internal agent logged for the message `id`.
fn agent_saw(agent: &InternalAgent, id: &str) -> Option<String> {
    std::fs::read_to_string(&agent.log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["messageId"] == id)
        .and_then(|v| v["traceparent"].as_str().map(str::to_string))
}

async fn trace_seen(mcp_url: &str, meta: &[(&str, Value)]) -> (Value, String) {
    let client = connect(mcp_url, true).await;
    let mut answer = Value::Null;
    // The upstream's tools are listed once its session is up.
    for _ in 0..100 {
        match client.call_tool(call_with_meta("trace_seen", json!({}), meta)).await {
            Ok(r) if r.is_error != Some(true) => {
                answer = serde_json::to_value(&r).unwrap_or(Value::Null);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let _ = client.cancel().await;
    let invocation = answer["_meta"]["dev.switchyard/invocation"].as_str().unwrap_or_default().to_string();
    (answer["structuredContent"].clone(), invocation)
}

async fn send(gw: &Gateway, path: &str, headers: &[(&str, &str)], body: Value) -> Value {
    let mut req = gw.http.post(format!("{}/a2a/internal{path}", gw.base)).header("a2a-version", "1.0").json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{e}"));
    resp.json().await.unwrap_or(Value::Null)
}

fn message(id: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_a_traceparent_is_one_trace_through_the_gateway_to_the_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let agent = InternalAgent::start(dir.path());
    let grpc_agent = InternalAgent::start_grpc_only(dir.path());
    let telemetry = format!("otlp_endpoint = {}\nbatch_delay_ms = 100\n", Value::String(collector.url.clone()));
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(config(dir.path(), (&agent.url, &grpc_agent.url), &telemetry)),
        ..Options::default()
    };
    let gw = Gateway::start(opts);
    let limit = Duration::from_secs(20);

    // MCP: `_meta` (SEP-414) in, `_meta` out. FastMCP's OpenTelemetry integration runs the
    // tool in the caller's trace, under the gateway's upstream call.
    let (trace, span, traceparent) = caller();
    let meta = [("traceparent", json!(traceparent)), ("tracestate", json!("vendor=abc"))];
    let (seen, invocation) = trace_seen(&format!("{}/mcp", gw.base), &meta).await;
    let (up_trace, up_parent) =
        fields(seen["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {seen}")));
    assert_eq!(up_trace, trace, "the upstream is in the caller's trace: {seen}");
    assert_ne!(up_parent, span, "its parent is the gateway's span, not the caller's: {seen}");
    assert_eq!(seen["tracestate"], "vendor=abc", "tracestate is passed on: {seen}");
    assert_eq!(
        (seen["otelTraceId"].as_str(), seen["otelSpanId"].as_str()),
        (Some(&*trace), Some(&*up_parent)),
        "{seen}"
    );
    let spans = collector.trace(&trace, limit, complete).await;
    let call = check_tree(&spans, &span, &invocation, "fm");
    assert_eq!(call, up_parent, "the upstream's parent is the exported upstream.call span: {spans:#?}");

    // A2A from the a2a-sdk client, which sends the context as a service parameter: gRPC
    // metadata in, an HTTP header out to the agent; an HTTP header in, gRPC metadata out to the
    // gRPC-only agent.
    for (name, binding, agent) in [("internal", "GRPC", &agent), ("internal-grpc", "JSONRPC", &grpc_agent)] {
        let (trace, span, traceparent) = caller();
        let id = format!("sdk-{binding}");
        let url = format!("{}/a2a/{name}", gw.base);
        let out = switchyard_tests::a2a::py_script("a2a_traced_send.py", &[&url, binding, &id, &traceparent]).await;
        let said = switchyard_tests::a2a::lines(&out);
        assert_eq!(
            said.first().map(|l| l["state"].clone()),
            Some(json!("TASK_STATE_COMPLETED")),
            "{binding}: {said:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (up_trace, up_parent) =
            fields(&agent_saw(agent, &id).unwrap_or_else(|| panic!("{binding}: no traceparent")));
        assert_eq!(up_trace, trace, "{binding}");
        let spans = collector.trace(&trace, limit, complete).await;
        let invocation = one(&spans, "invocation").attributes.get("invocation.id").cloned().unwrap_or_default();
        let upstream = format!("a2a-agent-{name}");
        assert_eq!(check_tree(&spans, &span, &invocation, &upstream), up_parent, "{binding}: {spans:#?}");
    }

    // A2A over HTTP+JSON with the context in the send's metadata (taken out of what the agent
    // gets: the gateway sends its own context as a header).
    let (trace, span, traceparent) = caller();
    let body = json!({"message": message("rest-1"), "metadata": {"traceparent": traceparent, "keep": "yes"}});
    let answer = send(&gw, "/rest/message:send", &[], body).await;
    assert_eq!(answer["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let (up_trace, up_parent) = fields(&agent_saw(&agent, "rest-1").unwrap_or_else(|| panic!("no traceparent")));
    assert_eq!(up_trace, trace);
    let log = std::fs::read_to_string(&agent.log).unwrap_or_default();
    let got = log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["messageId"] == "rest-1");
    assert_eq!(got.map(|v| v["metadata"].clone()), Some(json!({"keep": "yes"})), "the rest is passed on: {log}");
    let spans = collector.trace(&trace, limit, complete).await;
    let invocation = one(&spans, "invocation").attributes.get("invocation.id").cloned().unwrap_or_default();
    assert_eq!(check_tree(&spans, &span, &invocation, "a2a-agent-internal"), up_parent);

    // No context, or a malformed one: the call runs in a new trace that starts at the gateway.
    let (seen, invocation) = trace_seen(&format!("{}/mcp", gw.base), &[("traceparent", json!("00-zz-bad-01"))]).await;
    let (up_trace, up_parent) =
        fields(seen["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {seen}")));
    let spans = collector.trace(&up_trace, limit, complete).await;
    assert_eq!(check_tree(&spans, "", &invocation, "fm"), up_parent, "a root invocation span: {spans:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_telemetry_no_trace_context_is_sent_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let config = config(dir.path(), (&agent.url, &agent.url), "");
    let opts = Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() };
    let gw = Gateway::start(opts);
    let (_, _, traceparent) = caller();
    let (seen, _) = trace_seen(&format!("{}/mcp", gw.base), &[("traceparent", json!(traceparent))]).await;
    assert!(seen.is_object(), "the call ran: {seen}");
    assert_eq!((&seen["traceparent"], &seen["otelTraceId"]), (&Value::Null, &Value::Null), "{seen}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("off-1")}});
    let answer = send(&gw, "", &[("traceparent", &traceparent)], body).await;
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(agent_saw(&agent, "off-1"), None);
}

/// Spans still waiting for their batch are exported when the gateway stops (SIGTERM).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_spans_are_exported_when_the_gateway_stops() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let agent = InternalAgent::start(dir.path());
    let telemetry = format!("otlp_endpoint = {}\nbatch_delay_ms = 60000\n", Value::String(collector.url.clone()));
    let config = config(dir.path(), (&agent.url, &agent.url), &telemetry);
    let mut gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let (trace, span, traceparent) = caller();
    let (seen, invocation) = trace_seen(&format!("{}/mcp", gw.base), &[("traceparent", json!(traceparent))]).await;
    assert_eq!(seen["otelTraceId"].as_str(), Some(trace.as_str()), "{seen}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(collector.spans().iter().all(|s| s.trace_id != trace), "nothing exported before the batch is due");
    assert!(tokio::task::block_in_place(|| gw.terminate()), "a clean stop");
    let spans = collector.trace(&trace, Duration::from_secs(5), complete).await;
    check_tree(&spans, &span, &invocation, "fm");
}

/// A call held for approval keeps the caller's context with it: when a human approves it later,
/// the run (a new driver, `via = approval`) is still in the caller's trace, and so is the
/// upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_runs_in_its_callers_trace_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let agent = InternalAgent::start(dir.path());
    let telemetry = format!("otlp_endpoint = {}\nbatch_delay_ms = 100\n", Value::String(collector.url.clone()));
    let path = config(dir.path(), (&agent.url, &agent.url), &telemetry);
    let policy = "\n[policy]\n[[policy.rules]]\nupstream = \"fm\"\noperation = \"trace_seen\"\ntier = \"sensitive\"\n";
    let text = std::fs::read_to_string(&path).unwrap_or_default() + policy;
    std::fs::write(&path, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), ..Options::default() });

    let (trace, span, traceparent) = caller();
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let mut held = Value::Null;
    for _ in 0..100 {
        let r = client.call_tool(call_with_meta("trace_seen", json!({}), &[("traceparent", json!(traceparent))])).await;
        held = r.map(|r| serde_json::to_value(&r).unwrap_or(Value::Null)).unwrap_or(Value::Null);
        if held["structuredContent"]["state"] == "awaiting_approval" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await; // the upstream's tools are not listed yet
    }
    let _ = client.cancel().await;
    let id = held["structuredContent"]["invocation"].as_str().unwrap_or_else(|| panic!("not held: {held}")).to_string();
    let approve = gw
        .http
        .post(format!("{}/admin/v1/invocations/{id}/approve", gw.base))
        .bearer_auth(switchyard_tests::gateway::TOKEN)
        .header("x-switchyard-subject", "ops")
        .send()
        .await
        .unwrap();
    assert_eq!(approve.status().as_u16(), 200);
    let mut done = Value::Null;
    for _ in 0..100 {
        done = gw.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap().1;
        if done["state"]["state"] == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seen = &done["state"]["result"]["structuredContent"];
    assert_eq!(seen["otelTraceId"].as_str(), Some(trace.as_str()), "the upstream is in the caller's trace: {done}");
    let runs = |spans: &[SpanSeen]| {
        spans.iter().any(|s| s.name == "invocation" && s.attributes.get("via").map(String::as_str) == Some("approval"))
            && spans.iter().any(|s| s.name == "upstream.call")
    };
    let spans = collector.trace(&trace, Duration::from_secs(20), runs).await;
    let approved: Vec<&SpanSeen> = spans
        .iter()
        .filter(|s| s.name == "invocation" && s.attributes.get("via").map(String::as_str) == Some("approval"))
        .collect();
    assert_eq!(approved.len(), 1, "{spans:#?}");
    assert_eq!(approved[0].parent, span, "the approved run is a child of the caller's span: {spans:#?}");
    assert_eq!(approved[0].attributes.get("invocation.id").map(String::as_str), Some(id.as_str()));
    let attempt = spans.iter().find(|s| s.name == "attempt" && s.parent == approved[0].span_id);
    let call = spans.iter().find(|s| s.name == "upstream.call" && Some(&s.parent) == attempt.map(|a| &a.span_id));
    assert_eq!(call.map(|c| c.span_id.as_str()), seen["otelSpanId"].as_str(), "the upstream's parent: {spans:#?}");
}
