//! The bridge, MCP tools as an A2A agent: the official Python A2A SDK (on JSON-RPC, HTTP+JSON
//! and gRPC) calls the fixture MCP server's tools through a `tools` agent; each tool call is its
//! own invocation, keyed by the message's run; and a `kill -9` of the gateway while a write is
//! at the MCP server neither loses the task nor sends the write a second time: the task waits,
//! open, until the unknown call is reconciled.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::{lines, rpc};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::UpstreamSpec;

async fn py(args: &[&str]) -> std::process::Output {
    switchyard_tests::a2a::py_script("a2a_bridge_client.py", args).await
}

/// Runs the client script's `mode` on every binding: each must pass all `checks` checks.
async fn on_every_binding(gw: &Gateway, mode: &str, checks: usize) {
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let out = py(&[mode, &gw.base, binding]).await;
        let seen = lines(&out);
        assert!(
            out.status.success() && seen.iter().all(|c| c["ok"] == true),
            "{binding}: {seen:#?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(seen.len(), checks, "{binding}: every check ran: {seen:#?}");
    }
}

/// One fixture MCP upstream (`fx`, over stdio, logging `count_write` calls to `calls`) and a
/// `tools` agent exposing some of its tools.
fn config(dir: &std::path::Path, calls: &std::path::Path) -> std::path::PathBuf {
    let calls = calls.display().to_string();
    let mcp =
        switchyard_tests::mcp::write_config(dir, &[UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &calls)])], "");
    let agents = r#"[[a2a.agents]]
name = "tools"
kind = "tools"
upstreams = ["fx"]
tools = ["echo", "count_write", "slow", "test_image_content", "test_error_handling", "test_streaming_elicitation", "test_sampling"]
"#;
    let a2a = switchyard_tests::a2a::write_gateway_config(dir, "anonymous = true", agents);
    let text = format!(
        "{}\n{}",
        std::fs::read_to_string(&mcp).unwrap_or_else(|e| panic!("{e}")),
        std::fs::read_to_string(&a2a).unwrap_or_else(|e| panic!("{e}"))
    );
    std::fs::write(&a2a, text).unwrap_or_else(|e| panic!("{e}"));
    a2a
}

/// Task `task` of the agent at `url` once `ready` holds of it (up to 15 s: these tests share two
/// cores); else as it was last read.
async fn task_when(gw: &Gateway, url: &str, task: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..150 {
        let (_, got) = rpc(&gw.http, url, None, "GetTask", json!({"id": task})).await;
        last = got["result"].clone();
        if ready(&last) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    last
}

/// Waits until the gateway has discovered the upstream (the card lists `skill`).
async fn discovered(gw: &Gateway, skill: &str) {
    for _ in 0..100 {
        let card: Value = match gw.http.get(format!("{}/.well-known/agent-card.json", gw.base)).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if card["skills"].as_array().is_some_and(|s| s.iter().any(|s| s["id"] == skill)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fixture's tools never reached the card");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_a2a_sdk_calls_mcp_tools_on_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let opts =
        Options { data_dir: dir.path().join("d"), config: Some(config(dir.path(), &calls)), ..Options::default() };
    let gw = Gateway::start(opts);
    discovered(&gw, "echo").await;
    on_every_binding(&gw, "full", 21).await;

    // Each tool call is an invocation of its own, keyed by the message's run, and recorded as
    // an MCP call of the fixture.
    let all = gw.all("default").await;
    let runs: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-tools").collect();
    let tool_calls: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "fx").collect();
    assert!(!runs.is_empty() && !tool_calls.is_empty(), "{all:#?}");
    for call in &tool_calls {
        let key = call["ingress_key"].as_str().unwrap_or_default();
        let parent = key.strip_prefix("a2a-tool/").unwrap_or_else(|| panic!("keyed by its run: {call}"));
        assert_eq!(call["parent"], json!(parent), "and names it as its parent: {call}");
        assert!(runs.iter().any(|r| r["id"] == parent), "its run exists: {call}");
    }
    // A canceled task canceled its tool call (read_only, so stopped at once).
    let mut slow = Vec::new();
    for _ in 0..50 {
        slow = gw
            .all("default")
            .await
            .into_iter()
            .filter(|i| i["target"]["operation"] == "slow" && i["request"]["arguments"]["steps"] == 20)
            .collect();
        if slow.iter().all(|i| i["state"]["state"] == "canceled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(slow.len(), 3, "{slow:#?}");
    assert!(slow.iter().all(|i| i["state"]["state"] == "canceled"), "{slow:#?}");
    // Refused messages recorded nothing: every run made exactly one tool call. A follow-up's
    // call continues the round it answers.
    assert_eq!(runs.len(), tool_calls.len(), "runs {} / tool calls {}", runs.len(), tool_calls.len());
    let rounds: Vec<&&Value> = tool_calls.iter().filter(|i| i["request"]["continues"].is_string()).collect();
    assert_eq!(rounds.len(), 6, "two answered rounds per binding: {rounds:#?}");
    for r in rounds {
        let previous = tool_calls.iter().find(|i| i["id"] == r["request"]["continues"]);
        assert!(previous.is_some_and(|p| p["state"]["result"]["resultType"] == "input_required"), "{r}");
    }
}

/// A `tools` agent over an MCP server built with FastMCP (PyPI), spawned over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_a2a_sdk_calls_a_fastmcp_server_through_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let peer = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/fastmcp_peer.py");
    let python = switchyard_tests::mcp::python();
    let toml = |s: &str| Value::String(s.to_string()).to_string();
    let upstream = format!(
        "[mcp]\nanonymous = true\nconnect_timeout_ms = 30000\n\n[[mcp.upstreams]]\nname = \"fm\"\ncommand = [{}, {}]\n\
         operations = {{ add = \"read_only\", greet = \"read_only\", chart = \"read_only\", steps = \"read_only\" }}\n",
        toml(&python.display().to_string()),
        toml(&peer.display().to_string())
    );
    let agent = "[[a2a.agents]]\nname = \"fastmcp\"\nkind = \"tools\"\nupstreams = [\"fm\"]\n";
    let path = switchyard_tests::a2a::write_gateway_config(dir.path(), "anonymous = true", agent);
    let text = format!("{upstream}\n{}", std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, text).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), ..Options::default() });
    discovered(&gw, "add").await;
    on_every_binding(&gw, "fastmcp", 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_mid_bridge_sends_the_write_once() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(config(dir.path(), &calls)),
        store_url: Some(switchyard_tests::pg::database().await),
        ..Options::default()
    };
    let mut gw = Gateway::start(opts.clone());
    discovered(&gw, "echo").await;
    let key = format!("k-{}", uuid::Uuid::new_v4().simple());
    let message_id = format!("bridge-kill-{}", uuid::Uuid::new_v4().simple());
    let started = lines(&py(&["start", &gw.base, "JSONRPC", &message_id, &key, "4000"]).await);
    let task = started.first().and_then(|l| l["task"].as_str()).unwrap_or_else(|| panic!("{started:?}")).to_string();
    let received = || std::fs::read_to_string(&calls).unwrap_or_default().lines().filter(|l| *l == key).count();
    for _ in 0..100 {
        if received() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(received(), 1, "the write reached the MCP server");
    gw.kill9();

    // After the restart the run is driven again; it attaches to its tool call, whose write was
    // in flight: its outcome is unknown, shown on the task — which stays open (A2A has no
    // "unknown", and FAILED would tell the caller it did not run) — and never sent again.
    let gw = Gateway::start(opts);
    let url = format!("{}/a2a/tools", gw.base);
    let waiting = task_when(&gw, &url, &task, |t| t["metadata"]["dev.switchyard/call"]["state"] == "unknown").await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_WORKING", "{waiting}");
    let text = waiting["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("unknown") && text.contains("not sent again"), "{waiting}");

    // The client retries the same message: the same task, and still one write.
    let again = lines(&py(&["send", &gw.base, "JSONRPC", &message_id, &key, "4000"]).await);
    assert_eq!(again.first().map(|l| l["task"]["id"].clone()), Some(json!(task)), "{again:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(received(), 1, "the MCP server received the write exactly once");

    // The chain is consistent: one run, one tool call keyed by it, unknown until reconciled.
    let all = gw.all("default").await;
    let runs: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-tools").collect();
    let tool_calls: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "fx").collect();
    assert_eq!((runs.len(), tool_calls.len()), (1, 1), "{all:#?}");
    assert_eq!(tool_calls[0]["ingress_key"], json!(format!("a2a-tool/{}", runs[0]["id"].as_str().unwrap_or_default())));
    assert_eq!(tool_calls[0]["state"]["state"], "unknown", "{}", tool_calls[0]);
    assert_eq!(tool_calls[0]["parent"], runs[0]["id"], "{}", tool_calls[0]);

    // An operator reconciles it, applied, with the answer the server gave: the task completes
    // with it, and the run ends.
    let result = json!({"content": [{"type": "text", "text": format!("wrote {key}")}], "isError": false});
    let id = tool_calls[0]["id"].as_str().unwrap_or_default();
    let (status, body) = gw
        .post(
            "default",
            &format!("/admin/v1/invocations/{id}/reconcile"),
            json!({"decision": "applied", "result": result}),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let done = task_when(&gw, &url, &task, |t| t["status"]["state"] == "TASK_STATE_COMPLETED").await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], json!(format!("wrote {key}")), "{done}");
    assert_eq!(received(), 1);
    let all = gw.all_settled("default").await;
    let run = all.iter().find(|i| i["id"] == runs[0]["id"]).unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(run["state"]["state"], "succeeded", "{run}");
}

/// A `tools` agent over the reference MCP server of the TypeScript SDK
/// (`@modelcontextprotocol/server-everything` from npm, spawned with `npx`), as
/// `config/bridge.toml` configures it, called by plain A2A JSON-RPC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_typescript_server_through_the_bridge() {
    let npx = std::process::Command::new("npx").arg("--version").output();
    assert!(npx.is_ok_and(|o| o.status.success()), "npx is missing: install Node.js and npm (the test command does)");
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../config/bridge.toml");
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(shipped), ..Options::default() });
    for _ in 0..600 {
        let card: Value = match gw.http.get(format!("{}/.well-known/agent-card.json", gw.base)).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if card["skills"].as_array().is_some_and(|s| s.iter().any(|s| s["id"] == "get-sum")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = format!("{}/a2a/tools", gw.base);
    let send = |skill: &str, part: Value| {
        let message = json!({"messageId": format!("m-{}", uuid::Uuid::new_v4().simple()), "role": "ROLE_USER",
            "parts": [part], "metadata": {"dev.switchyard/skill": skill}});
        let (http, url) = (gw.http.clone(), url.clone());
        async move { rpc(&http, &url, None, "SendMessage", json!({"message": message})).await.1 }
    };
    let parts = |v: &Value| v["result"]["task"]["artifacts"][0]["parts"].as_array().cloned().unwrap_or_default();

    let echo = send("echo", json!({"text": "hello bridge"})).await;
    assert_eq!(echo["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{echo}");
    assert!(parts(&echo).iter().any(|p| p["text"] == "Echo: hello bridge"), "{echo}");
    let sum = send("get-sum", json!({"data": {"a": 2, "b": 3}})).await;
    assert!(parts(&sum).iter().any(|p| p["text"].as_str().is_some_and(|t| t.contains("is 5"))), "{sum}");
    let image = send("get-tiny-image", json!({"data": {}})).await;
    let raw: Vec<Value> = parts(&image).into_iter().filter(|p| p.get("raw").is_some()).collect();
    assert!(
        raw.first().is_some_and(
            |p| p["mediaType"] == "image/png" && p["raw"].as_str().is_some_and(|b| b.starts_with("iVBORw"))
        ),
        "{image}"
    );
    let links = send("get-resource-links", json!({"data": {"count": 2}})).await;
    let urls: Vec<Value> = parts(&links).into_iter().filter(|p| p.get("url").is_some()).collect();
    assert_eq!(urls.len(), 2, "resource links become url parts: {links}");
    let bad = send("get-sum", json!({"data": {"a": "two", "b": 3}})).await;
    assert_eq!(bad["error"]["code"], -32602, "the pinned schema refuses a string: {bad}");
}

/// A tool call the policy holds for approval puts its task in `TASK_STATE_AUTH_REQUIRED` (the
/// A2A state for "human approval before a destructive action", granted out of band) with a
/// status naming the held invocation, for as long as the approval takes, beyond the engine's
/// attempt timeout; a blocking send of a held call answers at once with that task. Approved,
/// the write runs once and the task completes, its run made one attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_tool_call_completes_its_task_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let path = config(dir.path(), &calls);
    let policy = "\n[policy]\ndefault_write_tier = \"sensitive\"\ndefault_read_tier = \"routine\"\n";
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("[engine]\n", "[engine]\nattempt_timeout_ms = 1500\n");
    std::fs::write(&path, format!("{text}{policy}")).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path), ..Options::default() });
    discovered(&gw, "count_write").await;
    let key = format!("k-{}", uuid::Uuid::new_v4().simple());
    let started = lines(&py(&["start", &gw.base, "JSONRPC", "held-1", &key, "0"]).await);
    let task = started.first().and_then(|l| l["task"].as_str()).unwrap_or_else(|| panic!("{started:?}")).to_string();

    let url = format!("{}/a2a/tools", gw.base);
    let held = |all: &[Value]| {
        all.iter()
            .find(|i| i["target"]["operation"] == "count_write" && i["state"]["state"] == "awaiting_approval")
            .cloned()
    };
    let mut call = None;
    for _ in 0..100 {
        call = held(&gw.all("default").await);
        if call.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let call = call.unwrap_or_else(|| panic!("the tool call is held"));
    // Longer than the attempt timeout: the task still works, nothing reached the server, and
    // the run waits for the approval without asking for its call again and again (that spun a
    // core: about 2 s of CPU in these 2.5 s).
    let cpu = gw.cpu_time();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let spent = gw.cpu_time().saturating_sub(cpu);
    assert!(spent < Duration::from_millis(500), "the gateway used {spent:?} of CPU while the call was held");
    let (_, got) = rpc(&gw.http, &url, None, "GetTask", json!({"id": task})).await;
    let id = call["id"].as_str().unwrap_or_default();
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_AUTH_REQUIRED", "{got}");
    let said = got["result"]["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(said.contains(id) && said.contains("approval"), "the status names the held call: {got}");
    let note = &got["result"]["metadata"]["dev.switchyard/call"];
    assert_eq!((note["invocation"].as_str(), note["state"].as_str()), (Some(id), Some("awaiting_approval")), "{got}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap_or_default().lines().count(), 0);
    // A blocking send (the official SDK's client) whose call is held answers at once.
    let asked = std::time::Instant::now();
    let other = format!("k-{}", uuid::Uuid::new_v4().simple());
    let sent = lines(&py(&["send", &gw.base, "HTTP+JSON", "held-2", &other, "0"]).await);
    let sent = sent.first().map(|l| l["task"].clone()).unwrap_or_else(|| panic!("{sent:?}"));
    assert_eq!(sent["status"]["state"], "TASK_STATE_AUTH_REQUIRED", "{sent}");
    assert!(asked.elapsed() < Duration::from_secs(10), "answered in {:?}, not at the hold's expiry", asked.elapsed());

    let (status, approved) =
        gw.post("default", &format!("/admin/v1/invocations/{id}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 200, "{approved}");
    let done = task_when(&gw, &url, &task, |t| t["status"]["state"] == "TASK_STATE_COMPLETED").await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], json!(format!("wrote {key}")), "{done}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap_or_default().lines().filter(|l| *l == key).count(), 1);
    let all = gw.all_settled("default").await;
    let run = all.iter().find(|i| i["id"] == call["parent"]).unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!((run["attempts"].clone(), run["state"]["state"].clone()), (json!(1), json!("succeeded")), "{run}");
}

/// `mcp_bridge_client.py` with the operator's token (tenant `default`).
fn mcp_client(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(switchyard_tests::mcp::python());
    cmd.arg(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_bridge_client.py"))
        .args(args)
        .env("MCP_BEARER", switchyard_tests::gateway::TOKEN)
        .kill_on_drop(true);
    cmd
}

/// `mcp_bridge_client.py` in `mode` against the gateway's `/mcp`: every check it printed passed,
/// and there were `checks` of them; the checks.
async fn checks_pass(gw: &Gateway, mode: &str, checks: usize, what: &str) -> Vec<Value> {
    script_checks_pass(&[&format!("{}/mcp", gw.base), mode, "helper__"], checks, what).await
}

/// `mcp_bridge_client.py` with `args`: every check it printed passed, and there were `checks`.
async fn script_checks_pass(args: &[&str], checks: usize, what: &str) -> Vec<Value> {
    let out = mcp_client(args).output().await.unwrap_or_else(|e| panic!("python: {e}"));
    let seen = lines(&out);
    assert!(
        out.status.success() && seen.iter().all(|c| c["ok"] == true),
        "{what}: {seen:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.len(), checks, "{what}: every check ran: {seen:#?}");
    seen
}

/// The a2a-sdk agent's skills as MCP tools `helper__…`: one `[[upstreams]]` entry, agent
/// `internal`, served on both faces; or, `direct`, the older form (an `[[mcp.upstreams]]` entry
/// `helper` naming the card, still loaded): agent `helper`, reachable only through the bridge.
fn a2a_as_mcp_config(
    dir: &std::path::Path,
    agent: &switchyard_tests::a2a::InternalAgent,
    direct: bool,
) -> std::path::PathBuf {
    let path = dir.join("bridge-a2a.toml");
    let card = format!("{}/.well-known/agent-card.json", agent.url);
    let upstream = if direct {
        format!("[[mcp.upstreams]]\nname = \"helper\"\nkind = \"a2a\"\ncard_url = \"{card}\"\n")
    } else {
        format!(
            "[[upstreams]]\nkind = \"a2a\"\nname = \"internal\"\ncard_url = \"{card}\"\nexpose = [\"a2a\", \"mcp\"]\nprefix = \"helper__\"\n"
        )
    };
    let text = format!("[mcp]\ncall_wait_ms = 2000\ntask_after_ms = 250\nbridge_result_max_bytes = 4096\n\n{upstream}");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// What the agent received: message texts and canceled task ids.
fn agent_log(agent: &switchyard_tests::a2a::InternalAgent) -> (Vec<String>, Vec<String>) {
    let lines: Vec<Value> = std::fs::read_to_string(&agent.log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let texts = lines.iter().filter_map(|l| l["text"].as_str().map(str::to_string)).collect();
    let cancels = lines.iter().filter_map(|l| l["cancel"].as_str().map(str::to_string)).collect();
    (texts, cancels)
}

/// The other direction: the official Python MCP client, in both eras, calls an agent served by
/// the official Python A2A SDK through a `kind = "a2a"` upstream — skills as tools, text,
/// structured and artifact content, an elicitation round, a long task through the Tasks
/// extension and through `get_task`, cancel both ways, and a keyed retry that is one message.
/// The same one entry serves the agent to the official Python A2A client on the A2A face.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_client_calls_an_a2a_sdk_agent_through_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let agent = switchyard_tests::a2a::InternalAgent::start(dir.path());
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(a2a_as_mcp_config(dir.path(), &agent, false)),
        ..Options::default()
    };
    let gw = Gateway::start(opts);
    let url = format!("{}/mcp", gw.base);
    for (mode, checks) in [("2026-07-28", 21), ("legacy", 20)] {
        script_checks_pass(&[&url, mode, "helper__"], checks, mode).await;
    }
    // The agent saw each keyed call once, the elicitation's answer as a follow-up, and a cancel
    // for each canceled call (cancel_task and the MCP cancellation, per era).
    let (texts, cancels) = agent_log(&agent);
    for mode in ["2026-07-28", "legacy"] {
        let once = texts.iter().filter(|t| **t == format!("once {mode}")).count();
        assert_eq!(once, 1, "the keyed call reached the agent once: {texts:?}");
    }
    assert_eq!(texts.iter().filter(|t| *t == "blue").count(), 2, "{texts:?}");
    let mut canceled = Vec::new();
    for _ in 0..50 {
        canceled = agent_log(&agent).1;
        if canceled.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(canceled.len() >= 4, "two cancels per era reached the agent: {cancels:?} then {canceled:?}");
    // Each call is the agent's own durable send, keyed by the client's key where it gave one,
    // and an answered round continues the task that asked.
    let all = gw.all("default").await;
    let sends: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-internal").collect();
    let called = ["send_message", "echo", "report"];
    assert!(sends.iter().all(|i| called.iter().any(|c| i["target"]["operation"] == *c)), "{sends:#?}");
    let keyed: Vec<&&Value> = sends.iter().filter(|i| i["ingress_key"] == "legacy-helper__-key").collect();
    assert_eq!(keyed.len(), 1, "{sends:#?}");
    let answers: Vec<&&Value> =
        sends.iter().filter(|i| i["request"]["message"]["parts"][0]["text"] == "blue").collect();
    assert_eq!(answers.len(), 2, "{answers:#?}");
    for a in answers {
        assert_eq!(a["request"]["newTask"], false, "{a}");
        let asked = sends.iter().find(|i| i["request"]["taskId"] == a["request"]["taskId"] && i["id"] != a["id"]);
        assert!(asked.is_some_and(|i| i["request"]["message"]["parts"][0]["text"] == "ask"), "{a}");
    }
    // The one entry serves the agent on the A2A face too, to the official Python A2A client.
    let agent_url = format!("{}/a2a/internal", gw.base);
    let a2a = switchyard_tests::a2a::py_script(
        "a2a_client_e2e.py",
        &["route", &agent_url, "JSONRPC", "hi", switchyard_tests::gateway::TOKEN],
    )
    .await;
    let routed = lines(&a2a).pop().unwrap_or_default();
    assert_eq!(
        (routed["state"].as_str(), routed["reply"].as_str()),
        (Some("TASK_STATE_COMPLETED"), Some("echo: hi")),
        "{routed}"
    );
}

/// `kill -9` of the gateway while the agent works on a bridged MCP call (the agent named by the
/// upstream's `card_url`, not served on the A2A face): after the restart the client retries
/// with its idempotency key and gets the outcome; the agent received the message once, and the
/// one invocation was decided from the agent's own record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_mid_bridge_to_an_a2a_agent_sends_the_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let agent = switchyard_tests::a2a::InternalAgent::start(dir.path());
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(a2a_as_mcp_config(dir.path(), &agent, true)),
        store_url: Some(switchyard_tests::pg::database().await),
        ..Options::default()
    };
    let mut gw = Gateway::start(opts.clone());
    let hidden = gw.http.get(format!("{}/a2a/helper/.well-known/agent-card.json", gw.base)).send().await;
    assert_eq!(hidden.map(|r| r.status().as_u16()).ok(), Some(404), "a bridge-only agent is not on the A2A face");
    let key = format!("kill-{}", uuid::Uuid::new_v4().simple());
    let mut first = mcp_client(&[&format!("{}/mcp", gw.base), "keyed", "helper__", &key])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("python: {e}"));
    let sent = || agent_log(&agent).0.iter().filter(|t| *t == "slow:3").count();
    for _ in 0..100 {
        if sent() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(sent(), 1, "the message reached the agent");
    gw.kill9();
    let _ = first.kill().await;

    let gw = Gateway::start(opts);
    let mut answer = Value::Null;
    for _ in 0..20 {
        let out = mcp_client(&[&format!("{}/mcp", gw.base), "keyed", "helper__", &key])
            .output()
            .await
            .unwrap_or_else(|e| panic!("python: {e}"));
        answer = lines(&out).into_iter().next().unwrap_or(Value::Null);
        if answer["text"].as_str().is_some_and(|t| t.contains("done")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(answer["isError"], false, "{answer}");
    assert!(answer["text"].as_str().is_some_and(|t| t.contains("part-2") && t.contains("done")), "{answer}");
    assert_eq!(sent(), 1, "the agent received the message exactly once");
    let all = gw.all_settled("default").await;
    let sends: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-helper").collect();
    assert_eq!(sends.len(), 1, "{sends:#?}");
    assert_eq!(sends[0]["ingress_key"], json!(key), "{}", sends[0]);
    assert_eq!(sends[0]["state"]["state"], "succeeded", "{}", sends[0]);
    assert_eq!(answer["meta"]["dev.switchyard/invocation"], sends[0]["id"], "{answer}");
}

/// A bridged agent's skill tools work cold: a stateless 2026-07-28 client (or one with a cached
/// list) calls a skill tool before anyone listed tools, and the gateway reads the card then; a
/// skill the card does not name is an error that says so and is not retry-safe. A question the
/// client declines leaves the agent's task waiting, named by the result: `cancel_task` and
/// `get_task` take that id (the agent is told of the cancel).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_tool_works_before_any_listing() {
    let dir = tempfile::tempdir().unwrap();
    let agent = switchyard_tests::a2a::InternalAgent::start(dir.path());
    for direct in [false, true] {
        let data_dir = dir.path().join(format!("d-{direct}"));
        let config = Some(a2a_as_mcp_config(dir.path(), &agent, direct));
        let gw = Gateway::start(Options { data_dir, config, ..Options::default() });
        checks_pass(&gw, "cold", 5, &format!("direct = {direct}")).await;
    }
    let (_, cancels) = agent_log(&agent);
    assert_eq!(cancels.len(), 2, "each declined task's cancel reached the agent: {cancels:?}");
}

/// Each skill of a bridged agent, and `send_message`, is a policy target of its own (operation =
/// the skill), with the call's arguments at `/arguments/<name>` as for any MCP tool: a rule on
/// one skill's argument neither touches another skill nor makes plain sends unevaluable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_skill_of_a_bridged_agent_is_a_policy_target_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let agent = switchyard_tests::a2a::InternalAgent::start(dir.path());
    let config = a2a_as_mcp_config(dir.path(), &agent, false);
    let rules = r#"
[[policy.rules]]
upstream = "a2a-agent-internal"
tier = "routine"

[[policy.rules]]
id = "echo-no-secrets"
upstream = "a2a-agent-internal"
operation = "echo"
deny = true
reason = "no secrets to echo"
[[policy.rules.when]]
pointer = "/arguments/text"
prefix = "secret"

[[policy.rules]]
id = "no-wires"
upstream = "a2a-agent-internal"
operation = "send_message"
deny = true
reason = "wires go through the desk"
[[policy.rules.when]]
pointer = "/arguments/text"
prefix = "wire"
"#;
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[policy]\n{rules}")).unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    checks_pass(&gw, "policy", 5, "per-skill policy").await;
    // The denied calls never reached the agent; the allowed ones did, once each.
    let (texts, _) = agent_log(&agent);
    assert_eq!(texts, ["fine", "secret plans", "wire 5"], "{texts:?}");
    let all = gw.all_settled("default").await;
    let mut ops: Vec<&str> = all
        .iter()
        .filter(|i| i["target"]["upstream"] == "a2a-agent-internal")
        .filter_map(|i| i["target"]["operation"].as_str())
        .collect();
    ops.sort_unstable();
    assert_eq!(ops, ["echo", "report", "send_message"], "{all:#?}");
}

/// A bridged call that takes long is one MCP task across the A2A task's rounds: the official
/// Python MCP client (Tasks extension declared) sends to the a2a-sdk agent, which works 5 s and
/// then asks once; the gateway is killed with `kill -9` while the agent works and restarted; a
/// new client follows the same task id with `tasks/get`, answers the question with
/// `tasks/update` (twice), and gets the result. The agent saw each message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_task_asks_answers_and_completes_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let agent = switchyard_tests::a2a::InternalAgent::start(dir.path());
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(a2a_as_mcp_config(dir.path(), &agent, false)),
        ..Options::default()
    };
    let mut gw = Gateway::start(opts.clone());
    let out = mcp_client(&[&format!("{}/mcp", gw.base), "task-start", "helper__"])
        .output()
        .await
        .unwrap_or_else(|e| panic!("python: {e}"));
    let task = lines(&out).first().and_then(|l| l["task"].as_str().map(str::to_string));
    let task = task.unwrap_or_else(|| panic!("no task: {}", String::from_utf8_lossy(&out.stderr)));
    let sent = |text: &str| agent_log(&agent).0.iter().filter(|t| *t == text).count();
    for _ in 0..100 {
        if sent("slowask:5") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(sent("slowask:5"), 1, "the message reached the agent");
    gw.kill9();

    let gw = Gateway::start(opts);
    script_checks_pass(&[&format!("{}/mcp", gw.base), "task-finish", "helper__", &task], 5, "task-finish").await;
    assert_eq!(
        (sent("slowask:5"), sent("green")),
        (1, 1),
        "each message reached the agent once: {:?}",
        agent_log(&agent).0
    );
    let all = gw.all_settled("default").await;
    let rounds: Vec<&Value> = all.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-internal").collect();
    assert_eq!(rounds.len(), 2, "the question's round and the answer's: {rounds:#?}");
    assert!(rounds.iter().all(|r| r["state"]["state"] == "succeeded"), "{rounds:#?}");
    assert_eq!(rounds[0]["request"]["taskId"], rounds[1]["request"]["taskId"], "one A2A task: {rounds:#?}");
}
