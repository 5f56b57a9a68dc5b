//! Clients that behave as real ones do, half of them stateless (2026-07-28) and half in legacy
//! sessions (2025-11-25). Most operations are a `count_write` whose `key` names it (so the
//! upstream's record says how often it physically ran); most of those carry an idempotency key
//! and are retried with it, on another replica, after a timeout or an answer that says retrying
//! is safe; a quarter carry none and are retried only when told the call was not admitted. The
//! rest are reads (`echo` of the id), retried on any failure. One MCP call in six goes through
//! the bridge instead: the A2A agent's `send_message` with the id as its text, keyed. A quarter
//! of the operations are
//! A2A messages (their `messageId` names them; a streamed send, or a blocking one on JSON-RPC or
//! HTTP+JSON) to the agent behind the replicas, or to a `tools` agent over the fixture's
//! `count_write`, resent with the same `messageId` and content — over blocking JSON-RPC or
//! HTTP+JSON, on another replica — until they are answered. One in eight of the rest are calls
//! submitted at the admin API ([`crate::admin`]).

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::rng::Rng;

/// Every client's API key (tenant `red`): the replicas listen on their namespaces' addresses,
/// where anonymous callers are refused.
pub const CALLER: &str = switchyard_tests::tenants::RED;

/// The MCP eras the clients speak: stateless requests, and sessions (`initialize`, then
/// `Mcp-Session-Id` on every request).
pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";
const NO_SESSION: &str = "no session could be opened";

/// What one attempt was answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// The tool's result text.
    Succeeded { text: String },
    /// A tool result with `isError`: the gateway's state for the call (`failed`, `unknown`,
    /// `denied`, or still running).
    ToolError {
        state: String,
        retry_safe: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        invocation: Option<String>,
    },
    /// A JSON-RPC error.
    RpcError { code: i64, retry_safe: bool, message: String },
    /// No answer in time, or the connection failed.
    NoAnswer { why: String },
}

impl Answer {
    pub fn retry_safe(&self) -> bool {
        matches!(self, Answer::ToolError { retry_safe: true, .. } | Answer::RpcError { retry_safe: true, .. })
    }

    /// The invocation the answer names, if any.
    pub fn invocation(&self) -> Option<&str> {
        match self {
            Answer::ToolError { invocation, .. } => invocation.as_deref(),
            _ => None,
        }
    }

    /// The end it reports: `succeeded`, `failed` or `canceled`.
    pub fn terminal(&self) -> Option<&str> {
        match self {
            Answer::Succeeded { .. } => Some("succeeded"),
            Answer::ToolError { state, .. } if matches!(state.as_str(), "failed" | "canceled") => Some(state),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    pub replica: usize,
    pub at_ms: u64,
    pub took_ms: u64,
    #[serde(flatten)]
    pub answer: Answer,
}

/// One logical operation and every attempt the client made at it.
#[derive(Debug, Clone, Serialize)]
pub struct Op {
    /// The upstream's key for it (and its idempotency key, when keyed).
    pub id: String,
    /// A write (`count_write`, recorded by the upstream), or a read (`echo` of the id).
    pub write: bool,
    pub keyed: bool,
    /// The MCP era its client speaks: `2026-07-28` (stateless) or `2025-11-25` (sessions); or
    /// the A2A binding of its first send (`a2a-stream`, `a2a-jsonrpc`, `a2a-rest`); or `admin`.
    pub era: &'static str,
    /// The text a success answers.
    pub expect: String,
    pub attempts: Vec<Attempt>,
}

impl Op {
    /// Records an attempt made on `replica` at `t0` (the run began at `start`).
    pub(crate) fn attempt(&mut self, replica: usize, start: Instant, t0: Instant, answer: Answer) {
        let at_ms = t0.duration_since(start).as_millis() as u64;
        self.attempts.push(Attempt { replica, at_ms, took_ms: t0.elapsed().as_millis() as u64, answer });
    }

    /// The invocations the gateway said this operation waits in for approval.
    pub fn held_as(&self) -> Vec<&str> {
        let held = self.attempts.iter().filter_map(|a| match &a.answer {
            Answer::ToolError { state, invocation: Some(id), .. } if state == "awaiting_approval" => Some(id.as_str()),
            _ => None,
        });
        let mut ids: Vec<&str> = held.collect();
        ids.dedup();
        ids
    }

    pub fn last(&self) -> Option<&Answer> {
        self.attempts.last().map(|a| &a.answer)
    }

    /// The outcome as its client saw it.
    pub fn outcome(&self) -> &'static str {
        match self.last() {
            Some(Answer::Succeeded { .. }) => "succeeded",
            Some(Answer::ToolError { state, .. }) if state == "unknown" => "unknown",
            Some(Answer::ToolError { state, .. }) if state == "failed" || state == "denied" => "failed",
            Some(Answer::ToolError { state, .. }) if state == "canceled" => "canceled",
            Some(Answer::ToolError { .. }) => "pending",
            Some(Answer::RpcError { .. }) => "error",
            Some(Answer::NoAnswer { .. }) | None => "no_answer",
        }
    }
}

/// The JSON-RPC body of a `tools/call` of `tool` (its name as the gateway exposes it).
pub fn call_body(tool: &str, args: Value, key: Option<&str>) -> Value {
    let mut meta =
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    if let Some(k) = key {
        meta["dev.switchyard/idempotencyKey"] = json!(k);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": meta}})
}

/// POSTs one stateless request to a replica's MCP face; the JSON-RPC response (from JSON or SSE).
pub async fn post(http: &reqwest::Client, base: &str, body: &Value) -> Result<String, String> {
    post_in(http, base, body, None).await.map(|(text, _)| text)
}

/// POSTs one request, in the legacy session `session` when given; the response text and the
/// session id the answer named.
async fn post_in(
    http: &reqwest::Client,
    base: &str,
    body: &Value,
    session: Option<&str>,
) -> Result<(String, Option<String>), String> {
    let method = body["method"].as_str().unwrap_or_default().to_string();
    let mut req = http
        .post(format!("{base}/mcp"))
        .bearer_auth(CALLER)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    req = match session {
        Some(id) => req.header("mcp-protocol-version", LEGACY).header("mcp-session-id", id),
        None if method == "initialize" => req,
        None => {
            let name = body["params"]["name"].as_str().unwrap_or_default().to_string();
            req.header("mcp-protocol-version", MODERN).header("mcp-method", method).header("mcp-name", name)
        }
    };
    let resp = req.body(body.to_string()).send().await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let named = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let text = resp.text().await.map_err(|e| e.to_string())?;
    if session.is_some() && status == reqwest::StatusCode::NOT_FOUND {
        return Err(format!("session gone: {status}"));
    }
    // An SSE answer: the last `data:` line is the response.
    let last = text.lines().rev().find_map(|l| l.strip_prefix("data:")).map(str::trim).map(str::to_string);
    Ok((last.unwrap_or(text), named))
}

/// Opens a legacy session on a replica: `initialize`, then `notifications/initialized`.
async fn open_session(http: &reqwest::Client, base: &str) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "nemesis", "version": "1"}}});
    let (_, id) = post_in(http, base, &init, None).await?;
    let id = id.ok_or("initialize named no session")?;
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_in(http, base, &done, Some(&id)).await?;
    Ok(id)
}

/// The call as a legacy client sends it: no protocol `_meta`, the idempotency key kept.
fn legacy_body(body: &Value) -> Value {
    let mut b = body.clone();
    if let Some(meta) = b["params"]["_meta"].as_object_mut() {
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
    }
    b
}

fn classify(raw: Result<String, String>) -> Answer {
    let text = match raw {
        Ok(t) => t,
        // Nothing was sent (no session could be opened), or the session is gone (the replica
        // refused the request before reading it): not admitted, as the client knows.
        Err(why) if why.starts_with("session gone") || why == NO_SESSION => {
            return Answer::RpcError { code: 404, retry_safe: true, message: why };
        }
        Err(why) => return Answer::NoAnswer { why },
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return Answer::NoAnswer { why: format!("not JSON: {}", text.chars().take(200).collect::<String>()) };
    };
    if let Some(e) = v.get("error") {
        return Answer::RpcError {
            code: e["code"].as_i64().unwrap_or_default(),
            retry_safe: e["data"]["retrySafe"].as_bool().unwrap_or(false),
            message: e["message"].as_str().unwrap_or_default().chars().take(200).collect(),
        };
    }
    let r = &v["result"];
    if r["isError"].as_bool() == Some(true) {
        let sc = &r["structuredContent"];
        return Answer::ToolError {
            state: sc["state"].as_str().unwrap_or("error").to_string(),
            retry_safe: sc["retrySafe"].as_bool().unwrap_or(false),
            invocation: sc["invocation"].as_str().map(str::to_string),
        };
    }
    let text = r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    Answer::Succeeded { text }
}

/// Sends an A2A message to a replica's agent: streamed (`SendStreamingMessage`, read to its
/// end), or blocking on JSON-RPC or HTTP+JSON. The HTTP status and body.
async fn a2a_send(
    http: &reqwest::Client,
    base: &str,
    agent: &str,
    binding: &str,
    message: &Value,
) -> Result<(u16, String), String> {
    let url = format!("{base}/a2a/{agent}");
    let (url, body) = match binding {
        "a2a-rest" => (format!("{url}/rest/message:send"), json!({"message": message})),
        "a2a-stream" => {
            (url, json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}))
        }
        _ => (url, json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}})),
    };
    let resp = http
        .post(url)
        .bearer_auth(CALLER)
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    Ok((status, resp.text().await.map_err(|e| e.to_string())?))
}

/// What an A2A send was answered: its task's end (`COMPLETED` with the agent's last word, or
/// failed), a task still going (the wait ended, or a stream cut before its end), or an error.
fn classify_a2a(raw: Result<(u16, String), String>) -> Answer {
    let (status, text) = match raw {
        Ok(r) => r,
        Err(why) => return Answer::NoAnswer { why },
    };
    let retry_safe = text.contains("\"retrySafe\":\"true\"");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let streamed = !events.is_empty();
    let Some(v) = events.into_iter().last().or_else(|| serde_json::from_str::<Value>(&text).ok()) else {
        return Answer::NoAnswer { why: format!("HTTP {status}: {}", text.chars().take(200).collect::<String>()) };
    };
    if let Some(e) = v.get("error") {
        let message = e["message"].as_str().unwrap_or_default().chars().take(200).collect();
        return Answer::RpcError { code: e["code"].as_i64().unwrap_or(i64::from(status)), retry_safe, message };
    }
    let r = v.get("result").unwrap_or(&v);
    let (status, task) = match (r.get("task"), r.get("statusUpdate")) {
        (Some(t), _) => (&t["status"], Some(t)),
        (None, Some(u)) => (&u["status"], None),
        _ => {
            return Answer::NoAnswer {
                why: format!("HTTP {status}: no task: {}", text.chars().take(200).collect::<String>()),
            };
        }
    };
    let state = status["state"].as_str().unwrap_or_default().to_string();
    // The agent's last word: its status message, else its last artifact (a tool's result).
    let artifact = |a: &Value| a["parts"][0]["text"].as_str().map(str::to_string);
    let said = status["message"]["parts"][0]["text"].as_str().map(str::to_string).or_else(|| match task {
        Some(t) => t["artifacts"].as_array().and_then(|a| a.last()).and_then(artifact),
        None => events_artifact(&text),
    });
    // A tool call held for approval (the task `AUTH_REQUIRED`), or whose outcome is unknown (the
    // task open until it is reconciled): the task names the invocation.
    let call = task.map(|t| &t["metadata"]["dev.switchyard/call"]).filter(|_| !state.ends_with("COMPLETED"));
    if let Some(call) = call.filter(|c| c["state"] == "awaiting_approval" || c["state"] == "unknown") {
        let invocation = call["invocation"].as_str().map(str::to_string);
        let state = call["state"].as_str().unwrap_or_default().to_string();
        return Answer::ToolError { state, retry_safe: false, invocation };
    }
    match state.as_str() {
        "TASK_STATE_COMPLETED" => Answer::Succeeded { text: said.unwrap_or_default() },
        "TASK_STATE_FAILED" | "TASK_STATE_REJECTED" | "TASK_STATE_CANCELED" => {
            Answer::ToolError { state: "failed".into(), retry_safe: false, invocation: None }
        }
        // A stream cut before its end: the caller has no answer.
        _ if streamed => Answer::NoAnswer { why: format!("the stream ended at {state}") },
        _ => Answer::ToolError { state, retry_safe: false, invocation: None },
    }
}

/// The text of the last artifact update of a stream.
fn events_artifact(text: &str) -> Option<String> {
    let events =
        text.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str(d.trim()).ok());
    events
        .filter_map(|e: Value| {
            e["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str().map(str::to_string)
        })
        .next_back()
}

/// Runs one client until `deadline`; its operations.
pub async fn client(c: usize, bases: Vec<String>, seed: u64, start: Instant, deadline: Instant) -> Vec<Op> {
    let mut rng = Rng::new(seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(6))
        .pool_max_idle_per_host(2)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // Odd clients keep a session per replica (opened again when one is lost).
    let era = if c % 2 == 1 { LEGACY } else { MODERN };
    let mut sessions: Vec<Option<String>> = vec![None; bases.len()];
    let mut ops = Vec::new();
    let mut n = 0;
    while Instant::now() < deadline {
        n += 1;
        let id = format!("c{c}-{n}");
        if rng.below(4) == 0 {
            ops.push(a2a_op(&http, &bases, c, id, &mut rng, start).await);
            continue;
        }
        if rng.below(6) == 0 {
            ops.push(crate::admin::op(&http, &bases, c, id, &mut rng, start).await);
            continue;
        }
        let (kind, bridged) = (rng.below(8), rng.below(6) == 0);
        let write = bridged || kind != 0;
        let keyed = bridged || write && rng.below(4) != 0;
        let (body, expect) = if bridged {
            // Through the bridge: the agent's `send_message` as an MCP tool; the agent
            // answers `echo: <text>` and logs the text, the operation's id.
            (call_body("ag__send_message", json!({"text": id}), Some(id.as_str())), format!("echo: {id}"))
        } else if write {
            let args = json!({"key": id, "delay_ms": rng.below(300)});
            (call_body("fx__count_write", args, keyed.then_some(id.as_str())), format!("wrote {id}"))
        } else {
            (call_body("fx__echo", json!({"text": id}), None), id.clone())
        };
        let body = if era == LEGACY { legacy_body(&body) } else { body };
        let mut op = Op { id, write, keyed, era, expect, attempts: Vec::new() };
        let mut replica = c % bases.len();
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let t0 = Instant::now();
            let raw = if era == LEGACY {
                if sessions[replica].is_none() {
                    sessions[replica] = open_session(&http, &bases[replica]).await.ok();
                }
                match sessions[replica].clone() {
                    Some(s) => post_in(&http, &bases[replica], &body, Some(&s)).await.map(|(t, _)| t),
                    None => Err(NO_SESSION.to_string()),
                }
            } else {
                post(&http, &bases[replica], &body).await
            };
            if raw.is_err() {
                sessions[replica] = None;
            }
            let answer = classify(raw);
            // A read is retried whenever it failed: it has no effect to repeat.
            let retry = match &answer {
                Answer::Succeeded { .. } => false,
                _ if !write => true,
                // Settled: a keyed retry would attach to the same outcome; a keyless one is a
                // new call, made only when the gateway says this one was not admitted.
                Answer::ToolError { state, retry_safe, .. }
                    if matches!(state.as_str(), "failed" | "unknown" | "denied") =>
                {
                    !keyed && *retry_safe
                }
                // Still running when the wait ended: a keyed client attaches again.
                Answer::ToolError { .. } => keyed,
                Answer::RpcError { retry_safe, .. } => *retry_safe,
                Answer::NoAnswer { .. } => keyed,
            };
            op.attempt(replica, start, t0, answer);
            if !retry || Instant::now() > give_up {
                break;
            }
            replica = (replica + 1) % bases.len();
            tokio::time::sleep(Duration::from_millis(100 + rng.below(200))).await;
        }
        ops.push(op);
    }
    ops
}

/// One A2A message, sent and resent until answered: to the SDK agent (a `slow:` one, which
/// answers `done`), or, one in three, to the `tools` agent over the MCP fixture (a `count_write`
/// of the id, held for approval like any other when its delay is 200 ms or more).
async fn a2a_op(http: &reqwest::Client, bases: &[String], c: usize, id: String, rng: &mut Rng, start: Instant) -> Op {
    let (binding, tools) = (rng.below(3) as usize, rng.below(3) == 0);
    let bindings = ["a2a-stream", "a2a-jsonrpc", "a2a-rest"];
    let era = if tools { ["a2a-tools-stream", "a2a-tools-jsonrpc", "a2a-tools-rest"] } else { bindings }[binding];
    let (agent, parts, expect) = if tools {
        let call = json!({"skill": "count_write", "arguments": {"key": id, "delay_ms": rng.below(300)}});
        (crate::cluster::TOOLS_AGENT, json!([{"data": call}]), format!("wrote {id}"))
    } else {
        let tenths = 2 + rng.below(10);
        let text = format!("slow:{}.{}", tenths / 10, tenths % 10);
        (crate::cluster::AGENT, json!([{"text": text}]), "done".to_string())
    };
    let message = json!({"messageId": id, "role": "ROLE_USER", "parts": parts});
    let mut op = Op { id, write: true, keyed: true, era, expect, attempts: Vec::new() };
    let mut replica = c % bases.len();
    let mut binding = bindings[binding];
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let t0 = Instant::now();
        let answer = classify_a2a(a2a_send(http, &bases[replica], agent, binding, &message).await);
        let retry = match &answer {
            Answer::Succeeded { .. } => false,
            // Ended (or parked until an operator reconciles it): a resend answers the same.
            Answer::ToolError { state, .. } => state != "failed" && state != "unknown",
            Answer::RpcError { retry_safe, .. } => *retry_safe,
            Answer::NoAnswer { .. } => true,
        };
        op.attempt(replica, start, t0, answer);
        if !retry || Instant::now() > give_up {
            return op;
        }
        // The same message again, blocking, on another replica (and binding).
        replica = (replica + 1) % bases.len();
        binding = if binding == "a2a-jsonrpc" { "a2a-rest" } else { "a2a-jsonrpc" };
        tokio::time::sleep(Duration::from_millis(100 + rng.below(200))).await;
    }
}
