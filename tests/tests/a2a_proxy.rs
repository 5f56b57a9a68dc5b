//! An internal agent (served by the official Python SDK on loopback) exposed through the
//! gateway. The gateway is killed (`kill -9`) mid-task and restarted: the client resubscribes
//! and sees the task finish, every event once and in order; the internal agent received the
//! message once; the lost call's invocation is reconciled from the upstream's own record.

use std::time::Duration;

use serde_json::json;
use switchyard_tests::a2a::{InternalAgent, lines, py, rpc, write_gateway_config};
use switchyard_tests::gateway::{Gateway, Options};

fn config(dir: &std::path::Path, card_url: &str) -> std::path::PathBuf {
    let agent = format!(
        "[[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = \"{card_url}/.well-known/agent-card.json\"\n"
    );
    write_gateway_config(dir, "anonymous = true", &agent)
}

/// The internal agent and a gateway (on SQLite) exposing it as agent `internal`.
fn proxied(dir: &std::path::Path) -> (InternalAgent, Gateway) {
    let agent = InternalAgent::start(dir);
    let opts = Options { data_dir: dir.join("d"), config: Some(config(dir, &agent.url)), ..Options::default() };
    (agent, Gateway::start(opts))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_task_survives_a_gateway_kill_without_a_second_send() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let store = switchyard_tests::pg::database().await;
    let opts = Options {
        data_dir: dir.path().join("d"),
        config: Some(config(dir.path(), &agent.url)),
        store_url: Some(store),
        ..Options::default()
    };
    let mut gw = Gateway::start(opts.clone());
    let base = |gw: &Gateway| format!("{}/a2a/internal", gw.base);

    // Proxying works: the answer carries the gateway's ids, the upstream's are in metadata.
    let (_, echo) = rpc(
        &gw.http,
        &base(&gw),
        None,
        "SendMessage",
        json!({"message": {"messageId": "echo-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
    )
    .await;
    let task = &echo["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{echo}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "echo: hi");
    assert_eq!(task["status"]["message"]["taskId"], task["id"], "the agent's message carries the gateway's task id");
    assert!(task["metadata"]["dev.switchyard/upstream"]["taskId"].is_string(), "{task}");
    assert_ne!(task["metadata"]["dev.switchyard/upstream"]["taskId"], task["id"]);

    // The agent's refusal reaches the client as the agent's error; the task it would have
    // started is recorded as failed with the reason; nothing is retried.
    let (_, refused) = rpc(
        &gw.http,
        &base(&gw),
        None,
        "SendMessage",
        json!({"message": {"messageId": "refuse-1", "role": "ROLE_USER", "parts": [{"text": "refuse"}]}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32004, "UnsupportedOperation, as the agent said: {refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("refused by the internal agent"));
    let (_, listed) = rpc(&gw.http, &base(&gw), None, "ListTasks", json!({"status": "TASK_STATE_FAILED"})).await;
    let reason = listed["result"]["tasks"][0]["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(reason.contains("refused by the internal agent"), "{listed}");
    assert_eq!(agent.received().iter().filter(|m| *m == "refuse-1").count(), 1);

    // A slow task; the gateway dies one second in (the agent has sent WORKING and a chunk).
    let started = lines(&py(&["start", &base(&gw), "JSONRPC", "slow:8"]).await);
    let id = started.first().and_then(|l| l["task"].as_str()).unwrap_or_else(|| panic!("{started:?}")).to_string();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    gw.kill9();
    let gw = Gateway::start(opts);
    let out = py(&["resubscribe", &base(&gw), "HTTP+JSON", &id]).await;
    let events = lines(&out);
    assert!(out.status.success(), "{events:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Vec<String> = events
        .iter()
        .filter_map(|e| e.get("event"))
        .map(|e| {
            if let Some(t) = e.get("task") {
                let parts: Vec<&str> = t["artifacts"][0]["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                format!("task:{}:{}", t["status"]["state"].as_str().unwrap_or_default(), parts.join(""))
            } else if let Some(s) = e.get("statusUpdate") {
                format!("status:{}", s["status"]["state"].as_str().unwrap_or_default())
            } else if let Some(a) = e.get("artifactUpdate") {
                format!("artifact:{}:{}", a["artifact"]["parts"][0]["text"].as_str().unwrap_or_default(), a["append"])
            } else {
                "other".into()
            }
        })
        .collect();
    assert_eq!(
        seen,
        ["task:TASK_STATE_WORKING:part-1 ", "artifact:part-2:true", "status:TASK_STATE_COMPLETED"],
        "{events:#?}"
    );
    assert_eq!(events.last().map(|e| e["final"].clone()), Some(json!("TASK_STATE_COMPLETED")));

    // The internal agent got the message once; the lost send was reconciled, not repeated.
    let received = agent.received();
    assert_eq!(received.iter().filter(|m| m.starts_with("test-resubscribe-message-id")).count(), 1, "{received:?}");
    let runs = gw.all("default").await;
    let run = runs.iter().find(|i| i["request"]["taskId"] == id.as_str()).unwrap_or_else(|| panic!("{runs:#?}"));
    assert_eq!(run["attempts"], 1, "{run}");
    assert_eq!(run["state"]["state"], "succeeded", "{run}");
    assert_eq!(run["state"]["resolution"]["principal"]["subject"], "a2a-supervisor", "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_artifact_bytes_live_in_the_artifact_store_not_the_task_row() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let (_agent, gw) = proxied(dir.path());
    let url = format!("{}/a2a/internal", gw.base);
    let n = 300_000usize;
    let (_, sent) = rpc(
        &gw.http,
        &url,
        None,
        "SendMessage",
        json!({"message": {"messageId": "big-1", "role": "ROLE_USER", "parts": [{"text": format!("big:{n}")}]}}),
    )
    .await;
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{}",
        sent.to_string().chars().take(500).collect::<String>()
    );
    let part = &task["artifacts"][0]["parts"][0];
    let expected: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let raw =
        base64::engine::general_purpose::STANDARD.decode(part["raw"].as_str().unwrap_or_default()).unwrap_or_default();
    assert!(raw == expected, "the client gets the agent's bytes back ({} bytes)", raw.len());
    assert_eq!(part["filename"], "big.bin");
    let kept = &part["metadata"]["dev.switchyard/artifact"];
    assert_eq!(kept["size"], n);
    let id = kept["id"].as_str().unwrap_or_else(|| panic!("{kept}"));
    // The bytes are an artifact of the caller's tenant, served (verified) by /artifacts.
    let resp = gw
        .http
        .get(format!("{}/artifacts/{id}", gw.base))
        .bearer_auth(switchyard_tests::gateway::TOKEN)
        .header("x-switchyard-tenant", "default")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.bytes().await.unwrap_or_default().as_ref(), expected.as_slice());
    // The durable records hold a reference, not the bytes (the send was answered once its task
    // ended, while its outcome commits).
    let runs = gw.all_settled("default").await;
    let run =
        runs.iter().find(|i| i["request"]["message"]["messageId"] == "big-1").unwrap_or_else(|| panic!("{runs:#?}"));
    let stored = run["state"]["result"].to_string();
    assert!(stored.contains("switchyard-artifact:art_") && stored.len() < 10_000, "{stored}");
    // GetTask reads it back too.
    let (_, got) = rpc(&gw.http, &url, None, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["result"]["artifacts"][0]["parts"][0]["raw"], part["raw"]);
}

/// An internal agent whose card lists only gRPC (the Python SDK's gRPC handler): the gateway's
/// A2A client reaches it over gRPC for sends, streams, the agent's refusals and cancellation,
/// and a client of the gateway sees the same as over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_only_internal_agent_is_reached_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start_grpc_only(dir.path());
    let card: serde_json::Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", agent.url)).await.unwrap().json().await.unwrap();
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["protocolBinding"].as_str())
        .collect();
    assert_eq!(bindings, ["GRPC"], "{card}");
    let opts =
        Options { data_dir: dir.path().join("d"), config: Some(config(dir.path(), &agent.url)), ..Options::default() };
    let gw = Gateway::start(opts);
    let url = format!("{}/a2a/internal", gw.base);
    let send =
        |id: &str, text: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}});

    let (_, echo) = rpc(&gw.http, &url, None, "SendMessage", send("grpc-echo-1", "over grpc")).await;
    let task = &echo["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{echo}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "echo: over grpc", "{echo}");
    assert!(task["metadata"]["dev.switchyard/upstream"]["taskId"].is_string(), "{task}");

    let (_, refused) = rpc(&gw.http, &url, None, "SendMessage", send("grpc-refuse-1", "refuse")).await;
    assert_eq!(refused["error"]["code"], -32004, "the agent's UnsupportedOperation, over gRPC: {refused}");

    // A task waiting for input is canceled at the agent, over gRPC, then at the gateway.
    let (_, asked) = rpc(&gw.http, &url, None, "SendMessage", send("grpc-ask-1", "ask")).await;
    let waiting = &asked["result"]["task"];
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let (_, canceled) = rpc(&gw.http, &url, None, "CancelTask", json!({"id": waiting["id"]})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");

    // A streamed task: the gateway mirrors the agent's gRPC stream (the agent sleeps 5 s
    // between its two chunks, so the subscription starts while the task runs).
    let started = lines(&py(&["start", &gw.base, "JSONRPC", "slow:5"]).await);
    let id = started.first().and_then(|l| l["task"].as_str()).unwrap_or_else(|| panic!("{started:?}")).to_string();
    let out = py(&["resubscribe", &gw.base, "GRPC", &id]).await;
    let events = lines(&out);
    assert!(out.status.success(), "{events:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(events.last().map(|e| e["final"].clone()), Some(json!("TASK_STATE_COMPLETED")), "{events:#?}");
    let (_, got) = rpc(&gw.http, &url, None, "GetTask", json!({"id": id})).await;
    let parts: Vec<&str> = got["result"]["artifacts"][0]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(parts.concat(), "part-1 part-2", "both chunks mirrored from the gRPC stream: {got}");

    let received = agent.received();
    for m in ["grpc-echo-1", "grpc-refuse-1", "grpc-ask-1"] {
        assert_eq!(received.iter().filter(|r| *r == m).count(), 1, "{m} once: {received:?}");
    }
}

/// Multi-turn through the proxy: the agent's stream for a follow-up opens with the task as it
/// was (still `INPUT_REQUIRED`, as the JS SDK sends every turn), then answers. The gateway reads
/// on: the follow-up completes the task (before the fix it stayed `INPUT_REQUIRED` for good).
/// The request's metadata and accepted output modes are passed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_whose_stream_opens_with_the_waiting_task_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, gw) = proxied(dir.path());
    let url = format!("{}/a2a/internal", gw.base);
    let send = |id: &str, text: &str, task: Option<&str>| {
        let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(t) = task {
            m["taskId"] = json!(t);
        }
        json!({ "message": m })
    };
    // The request's own metadata and accepted output modes reach the agent.
    let mut first = send("turn-1", "ask", None);
    first["metadata"] = json!({"trace": "t-1"});
    first["configuration"] = json!({"acceptedOutputModes": ["text/plain"]});
    let (_, asked) = rpc(&gw.http, &url, None, "SendMessage", first).await;
    let task = asked["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let id = task["id"].as_str().unwrap_or_default().to_string();
    let (_, answered) = rpc(&gw.http, &url, None, "SendMessage", send("turn-2", "blue", Some(&id))).await;
    let done = &answered["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
    assert_eq!(done["status"]["message"]["parts"][0]["text"], "echo: blue", "{answered}");
    let (_, got) = rpc(&gw.http, &url, None, "GetTask", json!({"id": id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(agent.received(), ["turn-1", "turn-2"], "each turn reached the agent once");
    let log = std::fs::read_to_string(&agent.log).unwrap_or_default();
    let turn1: serde_json::Value = log.lines().next().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default();
    assert_eq!(turn1["metadata"], json!({"trace": "t-1"}), "{turn1}");
    assert_eq!(turn1["modes"], json!(["text/plain"]), "{turn1}");
}

/// The gateway's card for an agent behind it keeps the agent's identity (name, description,
/// version, skills, modes) with the gateway's own interfaces and capabilities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_of_an_internal_agent_keeps_its_identity() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, gw) = proxied(dir.path());
    let card: serde_json::Value = gw
        .http
        .get(format!("{}/a2a/internal/.well-known/agent-card.json", gw.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "internal", "{card}");
    assert_eq!(card["description"], "An internal agent behind the gateway", "{card}");
    let skills: Vec<&str> = card["skills"].as_array().into_iter().flatten().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(skills, ["echo", "report"], "{card}");
    assert_eq!(card["defaultInputModes"], json!(["text"]), "the agent's modes, nothing added: {card}");
    let interfaces = card["supportedInterfaces"].as_array().cloned().unwrap_or_default();
    assert!(
        interfaces.iter().all(|i| i["url"].as_str().is_some_and(|u| !u.contains(&agent.url))),
        "the interfaces are the gateway's: {card}"
    );
    assert!(interfaces.iter().any(|i| i["url"].as_str().is_some_and(|u| u.ends_with("/a2a/internal"))), "{card}");
}

/// An agent that answers with a message (no task) is seen answering with exactly that message,
/// blocking and streaming, and leaves no task behind (it used to become a completed task:
/// `task(SUBMITTED)` then a status update on a stream, and a phantom task in ListTasks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_message_answer_stays_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, gw) = proxied(dir.path());
    let url = format!("{}/a2a/internal", gw.base);
    let say = |id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "say:hi"}]}});
    let (_, blocking) = rpc(&gw.http, &url, None, "SendMessage", say("say-1")).await;
    assert_eq!(blocking["result"]["message"]["parts"][0]["text"], "said: hi", "{blocking}");
    assert!(blocking["result"].get("task").is_none(), "{blocking}");

    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": say("say-2")});
    let text = gw
        .http
        .post(&url)
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap_or_default();
    let events: Vec<serde_json::Value> =
        text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect();
    assert_eq!(events.len(), 1, "exactly one event: {events:#?}");
    assert_eq!(events[0]["result"]["message"]["parts"][0]["text"], "said: hi", "{events:#?}");

    let (_, listed) = rpc(&gw.http, &url, None, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "no task was made: {listed}");
    assert_eq!(agent.received(), ["say-1", "say-2"], "each message reached the agent once");
}

/// A resent message (same caller, `messageId` and content) is the same message whatever the
/// caller saw of the first send: a stream dropped after its first event, on one binding, then the
/// same message on another attaches to the run still going, and once it ended the same message
/// still answers with its task (within the dedupe window, default 10 minutes). The agent (the
/// official Python SDK's) receives it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_message_attaches_to_its_run_on_every_binding_and_answers_with_it_after() {
    use futures::StreamExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (agent, gw) = proxied(dir.path());
    let url = format!("{}/a2a/internal", gw.base);
    let message = json!({"messageId": "resent-1", "role": "ROLE_USER", "parts": [{"text": "slow:2"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}});
    let resp = gw.http.post(&url).header("a2a-version", "1.0").json(&body).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        let Ok(Some(Ok(bytes))) = chunk else { panic!("no first event: {seen}") };
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    let first: serde_json::Value = seen
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_else(|| panic!("{seen}"));
    let task_id = first["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{first}")).to_string();
    // The caller had its first event, then its connection dropped while the agent works.
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(stream);

    // The same message over HTTP+JSON, blocking: the run still going, followed to its end.
    let rest = gw
        .http
        .post(format!("{url}/rest/message:send"))
        .header("a2a-version", "1.0")
        .json(&json!({"message": message}))
        .send()
        .await
        .unwrap();
    let resent: serde_json::Value = rest.json().await.unwrap();
    assert_eq!(resent["task"]["id"], task_id.as_str(), "attached to the first run: {resent}");
    assert_eq!(resent["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{resent}");
    // Ended: the same message answers with the same task, over JSON-RPC.
    let (_, again) = rpc(&gw.http, &url, None, "SendMessage", json!({"message": message})).await;
    assert_eq!(again["result"]["task"]["id"], task_id.as_str(), "{again}");
    assert_eq!(agent.received(), ["resent-1"], "the agent received the message once");
    let (_, listed) = rpc(&gw.http, &url, None, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
}

/// After the dedupe window (here 1 s), the same message is a new one: it runs again, in a task
/// of its own, and a resend of that one attaches to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_dedupe_window_the_same_message_is_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let card = format!("{}/.well-known/agent-card.json", agent.url);
    let conf = format!(
        "[[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = \"{card}\"\nmessage_dedupe_window_s = 1\n"
    );
    let config = write_gateway_config(dir.path(), "anonymous = true", &conf);
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(config), ..Options::default() });
    let url = format!("{}/a2a/internal", gw.base);
    let send = json!({"message": {"messageId": "window-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}});
    let (_, one) = rpc(&gw.http, &url, None, "SendMessage", send.clone()).await;
    let (_, same) = rpc(&gw.http, &url, None, "SendMessage", send.clone()).await;
    assert_eq!(same["result"]["task"]["id"], one["result"]["task"]["id"], "within the window: {same}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (_, two) = rpc(&gw.http, &url, None, "SendMessage", send.clone()).await;
    assert_eq!(two["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{two}");
    assert_ne!(two["result"]["task"]["id"], one["result"]["task"]["id"], "after the window: {two}");
    let (_, attached) = rpc(&gw.http, &url, None, "SendMessage", send).await;
    assert_eq!(attached["result"]["task"]["id"], two["result"]["task"]["id"], "{attached}");
    assert_eq!(agent.received(), ["window-1", "window-1"]);
}
