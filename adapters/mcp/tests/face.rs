//! The MCP face in process, on the in-memory driving port: a 2026-07-28 JSON-RPC request goes
//! into the face's HTTP service (no socket, no engine, no upstream), and each test checks the
//! `Submission` the face handed in and the wire answer it rendered — for every outcome of a call
//! and every contract error kind.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use rmcp::model::Tool;
use serde_json::{Value, json};
use switchyard_contract::memory::{MemoryBindings, MemoryInvocations, Reply};
use switchyard_contract::{
    Error, ErrorKind, ErrorSource, FailureCode, FailureRecord, Ingress, InvocationState, Invocations, Principal,
    Submission, TenantId,
};
use switchyard_mcp::McpGateway;
use switchyard_mcp::catalog::Listing;
use switchyard_mcp::config::McpConfig;
use tower::ServiceExt as _;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

fn principal() -> Principal {
    Principal::new(TenantId::new("red").unwrap_or_else(|e| panic!("{e}")), "alice")
}

/// A face over one upstream `fx` offering `echo`, answering from `port`.
async fn face(port: Arc<MemoryInvocations>, call_wait_ms: u64) -> axum::Router {
    face_over(port, call_wait_ms, None).await
}

/// [`face`], and with `agent` a bridged agent too: tools `desk__ask` (and the task tools).
async fn face_over(
    port: Arc<MemoryInvocations>,
    call_wait_ms: u64,
    agent: Option<Arc<dyn switchyard_contract::Catalog>>,
) -> axum::Router {
    let mut upstreams = vec![json!({"name": "fx", "command": ["/nonexistent/fixture"]})];
    if agent.is_some() {
        upstreams.push(json!({"name": "desk", "kind": "a2a", "agent": "desk"}));
    }
    let cfg: McpConfig = serde_json::from_value(json!({
        "upstreams": upstreams,
        "call_wait_ms": call_wait_ms,
        "task_after_ms": call_wait_ms,
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let gw = McpGateway::new(cfg, Arc::new(MemoryBindings::default()), None);
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let echo = Tool::new("echo", "Echoes", Arc::new(serde_json::from_value(schema).unwrap_or_default()));
    let listing = Listing { tools: vec![echo], ..Listing::default() };
    gw.catalog().learn("fx", "fx__", listing).await.unwrap_or_else(|e| panic!("{e}"));
    gw.router(port, KEY, agent, None).unwrap_or_else(|e| panic!("{e}"))
}

fn meta(extra: Value) -> Value {
    let mut m = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    m
}

/// Sends one JSON-RPC request as `principal()` and returns its JSON-RPC answer.
async fn rpc(router: &axum::Router, method: &str, name: &str, params: Value, extra_meta: Value) -> Value {
    rpc_with_headers(router, method, name, params, extra_meta, &[]).await
}

/// [`rpc`] with more HTTP headers.
async fn rpc_with_headers(
    router: &axum::Router,
    method: &str,
    name: &str,
    mut params: Value,
    extra_meta: Value,
    headers: &[(&str, &str)],
) -> Value {
    params["_meta"] = meta(extra_meta);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = req.body(Body::from(body.to_string())).unwrap_or_else(|e| panic!("{e}"));
    req.extensions_mut().insert(principal());
    let resp = router.clone().oneshot(req).await.unwrap();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
}

async fn call(router: &axum::Router, args: Value, extra_meta: Value) -> Value {
    rpc(router, "tools/call", "fx__echo", json!({"name": "fx__echo", "arguments": args}), extra_meta).await
}

fn only(port: &MemoryInvocations) -> Submission {
    let all = port.submissions();
    assert_eq!(all.len(), 1, "{all:?}");
    all.into_iter().next().unwrap_or_else(|| panic!("no submission"))
}

/// The caller's trace context reaches the engine with the call: `_meta` (SEP-414) wins over the
/// HTTP header; a malformed one is ignored and the call still runs.
#[tokio::test]
async fn a_call_carries_the_callers_trace_context_from_meta_or_header() {
    const META: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const HEADER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let cases = [
        (json!({"traceparent": META, "tracestate": "a=1"}), vec![("traceparent", HEADER)], Some((META, Some("a=1")))),
        (json!({}), vec![("traceparent", HEADER), ("tracestate", "b=2")], Some((HEADER, Some("b=2")))),
        (json!({"traceparent": "00-nonsense-01"}), vec![], None),
        (json!({}), vec![("traceparent", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01")], None),
        (json!({}), vec![], None),
    ];
    for (meta, headers, want) in cases {
        let port = MemoryInvocations::new(|_| Reply::succeed(json!({"content": [{"type": "text", "text": "hi"}]})));
        let router = face(port.clone(), 2000).await;
        let args = json!({"name": "fx__echo", "arguments": {"text": "hi"}});
        let answer = rpc_with_headers(&router, "tools/call", "fx__echo", args, meta.clone(), &headers).await;
        assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
        let got = only(&port).trace;
        let got = got.as_ref().map(|t| (t.header(), t.state.clone()));
        let want = want.map(|(h, s)| (h.to_string(), s.map(str::to_string)));
        assert_eq!(got, want, "{meta} {headers:?}");
    }
}

#[tokio::test]
async fn a_call_is_one_submission_and_its_result_names_the_invocation() {
    let port = MemoryInvocations::new(|_| Reply::succeed(json!({"content": [{"type": "text", "text": "hi"}]})));
    let router = face(port.clone(), 2000).await;
    let answer = call(&router, json!({"text": "hi"}), json!({})).await;

    let s = only(&port);
    assert_eq!(s.principal, principal());
    assert_eq!((s.upstream.as_str(), s.operation.as_str(), s.ingress), ("fx", "echo", Ingress::Mcp));
    assert_eq!(s.request, json!({"tool": "echo", "arguments": {"text": "hi"}}), "the upstream's own tool name");
    assert!(s.ingress_key.is_none());
    assert!(s.context.is_some(), "the relay for progress and server requests rides along");

    let result = &answer["result"];
    assert_eq!(result["content"][0]["text"], "hi", "{answer}");
    let inv = result["_meta"]["dev.switchyard/invocation"].as_str().unwrap_or_default();
    assert!(port.invocation(inv.parse().unwrap_or_else(|e| panic!("{inv}: {e:?}"))).is_some(), "{answer}");
}

#[tokio::test]
async fn an_idempotency_key_is_the_ingress_key_and_a_repeat_attaches() {
    let port = MemoryInvocations::new(|_| Reply::succeed(json!({"content": []})));
    let router = face(port.clone(), 2000).await;
    let keyed = json!({"dev.switchyard/idempotencyKey": "k-1"});
    let first = call(&router, json!({"text": "a"}), keyed.clone()).await;
    let again = call(&router, json!({"text": "a"}), keyed.clone()).await;
    let all = port.submissions();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|s| s.ingress_key.as_ref().map(|k| k.as_str()) == Some("k-1")));
    let inv = |a: &Value| a["result"]["_meta"]["dev.switchyard/invocation"].clone();
    assert_eq!(inv(&first), inv(&again), "one invocation: {first} {again}");

    // The same key with other arguments: a conflict, reported as invalid params.
    let other = call(&router, json!({"text": "b"}), keyed).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    assert_eq!(other["error"]["data"]["kind"], "conflict", "{other}");

    let bad = call(&router, json!({}), json!({"dev.switchyard/idempotencyKey": "has space"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(port.submissions().len(), 3, "a bad key is refused before anything is submitted");
}

/// Every contract error kind at admission, on the wire: the JSON-RPC code of the face's map and
/// the data `{kind, retrySafe, source}`.
#[tokio::test]
async fn every_error_kind_at_admission_has_its_code_and_data() {
    let cases = [
        (ErrorKind::NotFound, -32602, "not_found"),
        (ErrorKind::Conflict, -32602, "conflict"),
        (ErrorKind::InvalidInput, -32602, "invalid_input"),
        (ErrorKind::Unauthenticated, -32603, "unauthenticated"),
        (ErrorKind::Forbidden, -32600, "forbidden"),
        (ErrorKind::Unavailable, -32603, "unavailable"),
        (ErrorKind::Internal, -32603, "internal"),
    ];
    for (kind, code, name) in cases {
        let retry_safe = kind == ErrorKind::Unavailable;
        let port = MemoryInvocations::new(move |_| {
            Reply::Refuse(Error::new(kind, ErrorSource::Gateway, retry_safe, format!("refused: {name}")))
        });
        let router = face(port.clone(), 2000).await;
        let answer = call(&router, json!({"text": "x"}), json!({})).await;
        let e = &answer["error"];
        assert_eq!(e["code"], code, "{name}: {answer}");
        assert_eq!(e["message"], format!("refused: {name}"), "{answer}");
        assert_eq!(e["data"], json!({"kind": name, "retrySafe": retry_safe, "source": "gateway"}), "{answer}");
        assert_eq!(port.submissions().len(), 1);
    }
}

/// The policy enforcement point's answers are tool results a model can read, not protocol
/// errors: a denial (nothing admitted) and a call held for approval.
#[tokio::test]
async fn policy_denials_and_holds_are_tool_results() {
    let port = MemoryInvocations::new(|_| Reply::Refuse(Error::denied("not this tool")));
    let router = face(port.clone(), 2000).await;
    let answer = call(&router, json!({"text": "x"}), json!({})).await;
    let r = &answer["result"];
    assert_eq!(r["isError"], true, "{answer}");
    assert_eq!(r["structuredContent"], json!({"state": "denied", "reason": "not this tool", "retrySafe": true}));
    assert!(r["content"][0]["text"].as_str().is_some_and(|t| t.contains("not this tool")), "{answer}");

    let port = MemoryInvocations::new(|_| Reply::Settle(switchyard_contract::InvocationState::AwaitingApproval));
    let router = face(port.clone(), 2000).await;
    let answer = call(&router, json!({"text": "x"}), json!({})).await;
    let r = &answer["result"];
    assert_eq!(r["isError"], true, "{answer}");
    assert_eq!(r["structuredContent"]["state"], "awaiting_approval", "{answer}");
    let id = r["structuredContent"]["invocation"].as_str().unwrap_or_default();
    assert_eq!(port.admitted().first().map(|i| i.to_string()).as_deref(), Some(id), "names the held invocation");

    // A Tasks client gets a task that stays working, saying why, until the call is decided.
    let tasks =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let answer = call(&router, json!({"text": "y"}), tasks).await;
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    assert_eq!(answer["result"]["status"], "working", "{answer}");
    assert!(answer["result"]["statusMessage"].as_str().is_some_and(|m| m.contains("approval")), "{answer}");
}

#[tokio::test]
async fn outcomes_render_as_results_or_errors() {
    // An upstream JSON-RPC error is passed on with its own code and data.
    let mut rpc_error = FailureRecord::new(FailureCode::RpcError, "bad arguments", false, ErrorSource::Upstream);
    rpc_error.details = Some(json!({"code": -32602, "data": {"field": "text"}}));
    let port = MemoryInvocations::new(move |_| Reply::fail(rpc_error.clone()));
    let answer = call(&face(port.clone(), 2000).await, json!({}), json!({})).await;
    let inv = port.list(&principal().tenant, Default::default()).await.unwrap().items[0].id;
    // … naming the invocation, under the gateway's own key.
    let data = json!({"field": "text", "dev.switchyard/invocation": inv.to_string()});
    assert_eq!(answer["error"], json!({"code": -32602, "message": "bad arguments", "data": data}));
    // Data that is not an object is passed on as it is.
    let mut plain = FailureRecord::new(FailureCode::RpcError, "nope", false, ErrorSource::Upstream);
    plain.details = Some(json!({"code": -32000, "data": "a string"}));
    let port = MemoryInvocations::new(move |_| Reply::fail(plain.clone()));
    let answer = call(&face(port, 2000).await, json!({}), json!({})).await;
    assert_eq!(answer["error"]["data"], "a string", "{answer}");

    // Any other failure is an isError result naming its code and whether a retry is safe.
    let failure = FailureRecord::new(FailureCode::AttemptsExhausted, "gave up", true, ErrorSource::Upstream);
    let port = MemoryInvocations::new(move |_| Reply::fail(failure.clone()));
    let answer = call(&face(port, 2000).await, json!({}), json!({})).await;
    let r = &answer["result"];
    assert_eq!(r["isError"], true, "{answer}");
    assert_eq!(r["structuredContent"]["code"], "attempts_exhausted");
    assert_eq!(r["structuredContent"]["retrySafe"], true);
    assert_eq!(r["structuredContent"]["state"], "failed");

    // Unknown: never a success, and it says so.
    let port = MemoryInvocations::new(|_| Reply::unknown("the reply was lost"));
    let answer = call(&face(port, 2000).await, json!({}), json!({})).await;
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(answer["result"]["structuredContent"]["state"], "unknown");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("UNKNOWN") && text.contains("the reply was lost"), "{text}");

    // Still running when the wait ends: an error result that names the invocation and state.
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let answer = call(&face(port.clone(), 50).await, json!({}), json!({})).await;
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(answer["result"]["structuredContent"]["state"], "dispatching", "{answer}");
    let s = only(&port);
    assert_eq!(s.operation, "echo");
}

#[tokio::test]
async fn a_call_that_settles_while_waiting_is_answered_with_its_outcome() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let router = face(port.clone(), 5000).await;
    let settle = async {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if let Some(s) = port.submissions().first() {
                let p = s.principal.clone();
                let page = port.list(&p.tenant, Default::default()).await.unwrap();
                if let Some(inv) = page.items.first() {
                    let done = json!({"content": [{"type": "text", "text": "late"}]});
                    let state = InvocationState::Succeeded {
                        result: done,
                        resolution: switchyard_contract::Resolution::Upstream,
                    };
                    port.settle(inv.id, state).unwrap();
                    return;
                }
            }
        }
    };
    let (answer, ()) = tokio::join!(call(&router, json!({"text": "x"}), json!({})), settle);
    assert_eq!(answer["result"]["content"][0]["text"], "late", "{answer}");
}

#[tokio::test]
async fn unknown_tools_and_lists_never_reach_the_port() {
    let port = MemoryInvocations::new(|_| Reply::succeed(json!({})));
    let router = face(port.clone(), 2000).await;
    let listed = rpc(&router, "tools/list", "", json!({}), json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, vec!["fx__echo"], "{listed}");

    let unknown = rpc(&router, "tools/call", "fx__nope", json!({"name": "fx__nope", "arguments": {}}), json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(port.submissions().is_empty());
}

#[tokio::test]
async fn a_task_client_gets_a_task_and_can_follow_and_cancel_it() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let router = face(port.clone(), 50).await;
    let tasks =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let answer = call(&router, json!({"text": "x"}), tasks.clone()).await;
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    let task = answer["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
    assert_eq!(answer["result"]["status"], "working", "{answer}");
    let s = only(&port);
    assert_eq!(s.ingress, Ingress::Mcp);

    let got = rpc(&router, "tasks/get", &task, json!({"taskId": task}), tasks.clone()).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    let canceled = rpc(&router, "tasks/cancel", &task, json!({"taskId": task}), tasks.clone()).await;
    assert!(canceled.get("error").is_none(), "{canceled}");
    let inv = port.list(&s.principal.tenant, Default::default()).await.unwrap();
    assert!(matches!(inv.items[0].state, InvocationState::Canceled { .. }), "{:?}", inv.items[0].state);
    let got = rpc(&router, "tasks/get", &task, json!({"taskId": task}), tasks).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
}

/// Another protocol's agent for the bridge: one operation, `ask`, whose call is a submission
/// to `a2a-agent-desk`.
#[derive(Debug)]
struct Agent;

#[async_trait::async_trait]
impl switchyard_contract::Catalog for Agent {
    fn operations(&self, source: &str) -> Vec<switchyard_contract::Operation> {
        if source != "desk" {
            return Vec::new();
        }
        vec![switchyard_contract::Operation {
            upstream: "a2a-agent-desk".into(),
            name: "ask".into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            output_schema: None,
            effect: switchyard_contract::EffectClass::Write,
        }]
    }

    async fn prepare(
        &self,
        principal: &Principal,
        _source: &str,
        operation: &str,
        arguments: serde_json::Map<String, Value>,
        _key: Option<&switchyard_contract::IngressKey>,
    ) -> Result<Submission, Error> {
        Ok(Submission {
            principal: principal.clone(),
            upstream: "a2a-agent-desk".into(),
            operation: operation.into(),
            request: json!({"arguments": arguments}),
            ingress_key: None,
            ingress: Ingress::A2a,
            caller: None,
            context: None,
            grant: None,
            parent: None,
            trace: None,
        })
    }

    async fn prepare_answer(
        &self,
        _: &Principal,
        _: &switchyard_contract::Invocation,
        _: serde_json::Map<String, Value>,
    ) -> Result<Submission, Error> {
        Err(Error::invalid_input("no questions here"))
    }

    fn content(&self, _upstream: &str, _result: &Value) -> Result<switchyard_contract::Content, Error> {
        Ok(switchyard_contract::Content::default())
    }
}

/// Sends one message of a legacy (2025-11-25) session, returning the session id the answer
/// names and the JSON-RPC answer in it.
async fn legacy(router: &axum::Router, body: Value, session: Option<String>) -> (Option<String>, Option<Value>) {
    let mut req = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        req = req.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
    }
    let mut req = req.body(Body::from(body.to_string())).unwrap_or_else(|e| panic!("{e}"));
    req.extensions_mut().insert(principal());
    let resp = router.clone().oneshot(req).await.unwrap();
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&bytes).to_string();
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some());
    (session, answer)
}

/// A legacy (2025-11-25) session's call is never answered with a task — not even when its
/// `initialize` declared the Tasks extension: SEP-2663 tasks are a 2026-07-28 extension, and a
/// legacy client asked for none (it used to get one once `task_after_ms` passed). The same for a
/// native tool and a bridged agent's operation, while a 2026-07-28 client that declared the
/// extension gets a task from both.
#[tokio::test]
async fn a_legacy_client_never_gets_a_task() {
    let port = MemoryInvocations::new(|_| Reply::Pending);
    let router = face_over(port.clone(), 50, Some(Arc::new(Agent))).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let (session, _) = legacy(&router, init, None).await;
    let session = session.unwrap_or_else(|| panic!("no session"));
    let _ =
        legacy(&router, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(session.clone())).await;
    for (i, tool) in ["fx__echo", "desk__ask"].into_iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "x"}}});
        let (_, answer) = legacy(&router, call, Some(session.clone())).await;
        let result = answer.map(|a| a["result"].clone()).unwrap_or_else(|| panic!("{tool}: no answer"));
        assert!(result.get("taskId").is_none() && result.get("resultType").is_none(), "{tool}: {result}");
        assert_eq!(result["isError"], true, "{tool}: a call still running is said to be so: {result}");
    }
    assert_eq!(port.submissions().len(), 2);
    let tasks =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    for tool in ["fx__echo", "desk__ask"] {
        let answer =
            rpc(&router, "tools/call", tool, json!({"name": tool, "arguments": {"text": "x"}}), tasks.clone()).await;
        assert_eq!(answer["result"]["resultType"], "task", "{tool}: {answer}");
    }
}
