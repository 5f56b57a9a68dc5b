//! The policy enforcement point on the A2A face, against the real binary, over JSON-RPC and
//! HTTP+JSON: an allowed send runs; a denied send's task ends `TASK_STATE_REJECTED` with the
//! reason and nothing is admitted; a held send's task waits `TASK_STATE_SUBMITTED`, saying it
//! awaits approval, and then runs once approved (a stream sees it through), ends `REJECTED` when
//! denied, and ends `REJECTED` when nobody decides in time.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use switchyard_tests::a2a::{message, rpc, write_gateway_config};
use switchyard_tests::gateway::{Gateway, Options};

const AGENTS: &str = r#"
[[a2a.agents]]
name = "open"
kind = "echo"

[[a2a.agents]]
name = "vault"
kind = "echo"

[[a2a.agents]]
name = "desk"
kind = "echo"

[policy]
approval_ttl_s = 4

[[policy.envelope]]
upstream = "a2a-agent-vault"
reason = "the vault agent is closed to callers"

[[policy.rules]]
upstream = "a2a-agent-open"
tier = "routine"

# A built-in agent is read-only (routine by default); this one's messages wait for a human
# (its task reads, `task:GetTask` and the like, stay routine).
[[policy.rules]]
upstream = "a2a-agent-desk"
operation = "SendMessage"
tier = "sensitive"
"#;

fn start(dir: &std::path::Path) -> Gateway {
    start_with(dir, AGENTS)
}

fn start_with(dir: &std::path::Path, agents: &str) -> Gateway {
    let config = write_gateway_config(dir, "anonymous = true", agents);
    Gateway::start(Options { data_dir: dir.join("d"), config: Some(config), ..Options::default() })
}

async fn send(gw: &Gateway, agent: &str) -> Value {
    let url = format!("{}/a2a/{agent}", gw.base);
    let (status, out) = rpc(&gw.http, &url, None, "SendMessage", json!({"message": message("m")})).await;
    assert_eq!(status, 200, "{out}");
    out["result"]["task"].clone()
}

async fn get_task(gw: &Gateway, agent: &str, id: &str) -> Value {
    let url = format!("{}/a2a/{agent}", gw.base);
    let (_, out) = rpc(&gw.http, &url, None, "GetTask", json!({"id": id})).await;
    out["result"].clone()
}

/// Polls the task until it is in `state` (or 10 s pass).
async fn until(gw: &Gateway, agent: &str, id: &str, state: &str) -> Value {
    for _ in 0..100 {
        let task = get_task(gw, agent, id).await;
        if task["status"]["state"] == state {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} did not reach {state}: {}", get_task(gw, agent, id).await);
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default().to_string()
}

/// The invocation a held task names in its status message.
fn invocation_of(task: &Value) -> String {
    let text = status_text(task);
    let at = text.find("inv_").unwrap_or_else(|| panic!("no invocation named: {task}"));
    text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

fn sends_to(runs: &[Value], agent: &str) -> usize {
    runs.iter().filter(|i| i["target"]["upstream"] == format!("a2a-agent-{agent}")).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_are_allowed_rejected_or_wait_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path());

    let done = send(&gw, "open").await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");

    // Denied: the task ends rejected with the reason; no run was admitted.
    let rejected = send(&gw, "vault").await;
    assert_eq!(rejected["status"]["state"], "TASK_STATE_REJECTED", "{rejected}");
    assert!(status_text(&rejected).contains("the vault agent is closed to callers"), "{rejected}");
    let id = rejected["id"].as_str().unwrap_or_default();
    // The envelope closes the agent to every method, its task reads included.
    let (_, read) = rpc(&gw.http, &format!("{}/a2a/vault", gw.base), None, "GetTask", json!({"id": id})).await;
    assert!(read["error"]["message"].as_str().is_some_and(|m| m.contains("closed to callers")), "{read}");
    assert_eq!(sends_to(&gw.all("default").await, "vault"), 0, "nothing admitted");
    // Over HTTP+JSON as well.
    let rest = gw
        .http
        .post(format!("{}/a2a/vault/rest/message:send", gw.base))
        .header("a2a-version", "1.0")
        .json(&json!({"message": message("r")}))
        .send()
        .await
        .unwrap();
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["task"]["status"]["state"], "TASK_STATE_REJECTED", "{body}");

    // Held: the task waits, saying so and naming its invocation; nothing ran yet.
    let waiting = send(&gw, "desk").await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_SUBMITTED", "{waiting}");
    assert!(status_text(&waiting).contains("waits for approval"), "{waiting}");
    let (task, inv) = (waiting["id"].as_str().unwrap_or_default().to_string(), invocation_of(&waiting));
    let (_, shown) = gw.get("default", &format!("/admin/v1/invocations/{inv}")).await.unwrap();
    assert_eq!(shown["state"]["state"], "awaiting_approval", "{shown}");
    // Approved: the same task runs to its end.
    let (status, body) = gw.post("default", &format!("/admin/v1/invocations/{inv}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let finished = until(&gw, "desk", &task, "TASK_STATE_COMPLETED").await;
    assert!(status_text(&finished).contains("echo"), "{finished}");

    // Held, then denied: the task ends rejected, saying so.
    let waiting = send(&gw, "desk").await;
    let (task, inv) = (waiting["id"].as_str().unwrap_or_default().to_string(), invocation_of(&waiting));
    let (status, _) =
        gw.post("default", &format!("/admin/v1/invocations/{inv}/deny"), json!({"reason": "not now"})).await.unwrap();
    assert_eq!(status, 200);
    let ended = until(&gw, "desk", &task, "TASK_STATE_REJECTED").await;
    assert!(status_text(&ended).contains("approval denied"), "{ended}");

    // Held, and nobody decides within approval_ttl_s (4 s): rejected.
    let waiting = send(&gw, "desk").await;
    let task = waiting["id"].as_str().unwrap_or_default().to_string();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let ended = until(&gw, "desk", &task, "TASK_STATE_REJECTED").await;
    assert!(status_text(&ended).contains("nobody approved it in time"), "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_stream_follows_its_task_through_approval() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path());
    let resp = gw
        .http
        .post(format!("{}/a2a/desk/rest/message:stream", gw.base))
        .header("a2a-version", "1.0")
        .json(&json!({"message": message("s")}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    let mut approved = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !seen.contains("TASK_STATE_COMPLETED") {
        let chunk = tokio::time::timeout_at(deadline, body.next()).await;
        let Ok(Some(Ok(bytes))) = chunk else { panic!("stream ended or stalled: {seen}") };
        seen.push_str(&String::from_utf8_lossy(&bytes));
        if !approved && seen.contains("waits for approval") {
            let at = seen.find("inv_").unwrap_or_else(|| panic!("{seen}"));
            let inv: String = seen[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let (status, b) =
                gw.post("default", &format!("/admin/v1/invocations/{inv}/approve"), json!({})).await.unwrap();
            assert_eq!(status, 200, "{b}");
            approved = true;
        }
    }
    assert!(approved, "the first event was the waiting task: {seen}");
    let submitted = seen.find("TASK_STATE_SUBMITTED").unwrap_or(usize::MAX);
    assert!(submitted < seen.find("TASK_STATE_COMPLETED").unwrap_or(0), "{seen}");
}

/// The waiting task does not depend on the process that took the send: after `kill -9` and a
/// restart, a denial through the admin API still ends it rejected (the deciding engine tells the
/// agent), and the task is the same one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_send_is_rejected_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = start(dir.path());
    let waiting = send(&gw, "desk").await;
    let (task, inv) = (waiting["id"].as_str().unwrap_or_default().to_string(), invocation_of(&waiting));
    gw.kill9();
    let gw = Gateway::start(gw.opts.clone());
    assert_eq!(get_task(&gw, "desk", &task).await["status"]["state"], "TASK_STATE_SUBMITTED");
    let (status, _) = gw
        .post("default", &format!("/admin/v1/invocations/{inv}/deny"), json!({"reason": "after the restart"}))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let ended = until(&gw, "desk", &task, "TASK_STATE_REJECTED").await;
    assert!(status_text(&ended).contains("after the restart"), "{ended}");
}

/// A grant rides in the send's `metadata` (`dev.switchyard/grant`), on JSON-RPC and HTTP+JSON:
/// a valid one lets a send the policy would hold run at once; a forged one changes nothing (the
/// task waits); the grant is neither stored with the run nor passed on to the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_in_the_send_metadata_lets_a_held_send_run() {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path());
    let token = gw.mint_grant("anonymous", &["--upstream", "a2a-agent-desk"]);
    let url = format!("{}/a2a/desk", gw.base);
    let with =
        |grant: &str| json!({"message": message("g"), "metadata": {"dev.switchyard/grant": grant, "note": "kept"}});

    let (_, granted) = rpc(&gw.http, &url, None, "SendMessage", with(&token)).await;
    assert_eq!(granted["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{granted}");
    let rest = gw
        .http
        .post(format!("{url}/rest/message:send"))
        .header("a2a-version", "1.0")
        .json(&with(&token))
        .send()
        .await
        .unwrap();
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{body}");

    let (_, forged) = rpc(&gw.http, &url, None, "SendMessage", with(&format!("{token}x"))).await;
    assert_eq!(forged["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED", "{forged}");
    assert!(status_text(&forged["result"]["task"]).contains("waits for approval"), "{forged}");

    let runs = gw.all("default").await;
    assert_eq!(sends_to(&runs, "desk"), 3, "{runs:#?}");
    for run in runs.iter().filter(|i| i["target"]["upstream"] == "a2a-agent-desk") {
        assert_eq!(run["request"]["metadata"], json!({"note": "kept"}), "the grant is not kept: {run}");
    }
}

/// The official Python A2A SDK (a2a-sdk 1.3.0) on JSON-RPC, HTTP+JSON and gRPC sees what the
/// policy decided: an allowed send completes, a denied one is `TASK_STATE_REJECTED` with the
/// reason, a held one `TASK_STATE_SUBMITTED` saying it waits for approval; approved through the
/// admin API, each held task completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sees_allowed_rejected_and_held_sends_on_every_binding() {
    use switchyard_tests::a2a::{lines, py};
    let dir = tempfile::tempdir().unwrap();
    // Approvals here do not expire while a Python process starts and stops.
    let gw = start_with(dir.path(), &AGENTS.replace("approval_ttl_s = 4", "approval_ttl_s = 600"));
    let route = |agent: &str, binding: &str| {
        let url = format!("{}/a2a/{agent}", gw.base);
        let binding = binding.to_string();
        async move {
            let out = py(&["route", &url, &binding, "hello"]).await;
            lines(&out).pop().unwrap_or_else(|| panic!("{binding}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    let mut held = Vec::new();
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let open = route("open", binding).await;
        assert_eq!(open["state"], "TASK_STATE_COMPLETED", "{binding}: {open}");
        let vault = route("vault", binding).await;
        assert_eq!(vault["state"], "TASK_STATE_REJECTED", "{binding}: {vault}");
        assert!(
            vault["reply"].as_str().unwrap_or_default().contains("the vault agent is closed to callers"),
            "{vault}"
        );
        let desk = route("desk", binding).await;
        assert_eq!(desk["state"], "TASK_STATE_SUBMITTED", "{binding}: {desk}");
        let reply = desk["reply"].as_str().unwrap_or_default();
        assert!(reply.contains("waits for approval"), "{binding}: {desk}");
        let at = reply.find("inv_").unwrap_or_else(|| panic!("no invocation named: {desk}"));
        let inv: String = reply[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let (status, approved) =
            gw.post("default", &format!("/admin/v1/invocations/{inv}/approve"), json!({})).await.unwrap();
        assert_eq!(status, 200, "{binding}: {approved}");
        held.push(desk["task"].as_str().unwrap_or_default().to_string());
    }
    assert_eq!(sends_to(&gw.all("default").await, "vault"), 0, "nothing denied was admitted");
    for task in held {
        until(&gw, "desk", &task, "TASK_STATE_COMPLETED").await;
    }
}

/// A follow-up the policy refuses or holds never changes the task it names: before, mallory's
/// denied follow-up to alice's waiting task answered with alice's task (history included) as
/// `TASK_STATE_REJECTED` and left it rejected, and a held one moved it back to SUBMITTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_or_held_follow_up_leaves_the_task_it_names_unchanged() {
    const RULES: &str = r#"
[[a2a.agents]]
name = "tck"
kind = "tck"

[[policy.rules]]
upstream = "a2a-agent-tck"
tier = "routine"

[[policy.rules]]
upstream = "a2a-agent-tck"
operation = "SendMessage"
subject = "mallory"
deny = true
reason = "mallory may not write here"

[[policy.rules]]
upstream = "a2a-agent-tck"
operation = "SendMessage"
subject = "hal"
tier = "sensitive"
"#;
    let dir = tempfile::tempdir().unwrap();
    let config = write_gateway_config(dir.path(), "", RULES);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/tck", gw.base);
    let call = |subject: &'static str, method: &'static str, params: Value| {
        let req = gw
            .http
            .post(&url)
            .bearer_auth(switchyard_tests::gateway::TOKEN)
            .header("x-switchyard-subject", subject)
            .header("a2a-version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        async move {
            let resp = req.send().await.unwrap();
            resp.json::<Value>().await.unwrap_or_default()
        }
    };
    let asked = call("alice", "SendMessage", json!({"message": message("tck-input-required")})).await;
    let task = asked["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let id = task["id"].as_str().unwrap_or_default().to_string();
    let before = call("alice", "GetTask", json!({"id": id})).await["result"].clone();
    let follow_up = |who: &str| {
        json!({"message": {"messageId": format!("tck-complete-task-{who}-{}", uuid::Uuid::new_v4().simple()),
            "taskId": id, "role": "ROLE_USER", "parts": [{"text": "done"}]}})
    };

    let denied = call("mallory", "SendMessage", follow_up("mallory")).await;
    assert!(denied.get("result").is_none(), "a denied follow-up answered with a task: {denied}");
    assert!(denied["error"]["message"].as_str().is_some_and(|m| m.contains("mallory may not write")), "{denied}");
    assert_eq!(call("alice", "GetTask", json!({"id": id})).await["result"], before, "the denied follow-up changed it");

    let held = call("hal", "SendMessage", follow_up("hal")).await;
    let text = held["result"]["message"]["parts"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("waits for approval"), "{held}");
    assert_eq!(call("alice", "GetTask", json!({"id": id})).await["result"], before, "the held follow-up changed it");
    let at = text.find("inv_").unwrap_or_else(|| panic!("no invocation named: {text}"));
    let inv: String = text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let (status, body) =
        gw.post("default", &format!("/admin/v1/invocations/{inv}/deny"), json!({"reason": "no"})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(call("alice", "GetTask", json!({"id": id})).await["result"], before, "the denial changed it");

    // The owner's own follow-up still runs on it.
    let done = call("alice", "SendMessage", follow_up("alice")).await;
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
}
