//! Lost sends to an internal agent (the official Python SDK), reconciled from evidence after a
//! `kill -9` of the gateway at chosen points (issue 11, items 19 and 25):
//! - killed after the attempt was recorded but before the sent marker was written: nothing can
//!   have been sent, so the send is reconciled `not applied`, and a resend of the same message
//!   runs (the agent receives it once);
//! - killed after the agent's answer was mirrored into the task but before the invocation's
//!   outcome was committed: the caller already has that task as its answer (the mirrored task is
//!   recorded, so it need not wait for the outcome), and the send is reconciled `applied` from it.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::{InternalAgent, rpc, write_gateway_config};
use switchyard_tests::gateway::{Gateway, Options};

fn options(dir: &std::path::Path, agent: &InternalAgent, fault: Option<&str>) -> Options {
    let card = format!("{}/.well-known/agent-card.json", agent.url);
    let agents = format!("[[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = \"{card}\"\n");
    let env = fault.map(|f| vec![("SWITCHYARD_FAULT_PAUSE".to_string(), f.to_string())]).unwrap_or_default();
    Options {
        data_dir: dir.join("d"),
        config: Some(write_gateway_config(dir, "anonymous = true", &agents)),
        env,
        ..Options::default()
    }
}

fn message(id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]}})
}

/// Sends and gives up after `ms` (the gateway is paused at a fault point meanwhile).
async fn send_and_abandon(gw: &Gateway, id: &str, ms: u64) {
    let url = format!("{}/a2a/internal", gw.base);
    let _ =
        tokio::time::timeout(Duration::from_millis(ms), rpc(&gw.http, &url, None, "SendMessage", message(id))).await;
}

/// The invocation of the first send of `message_id`, once it is no longer `state`.
async fn settled_send(gw: &Gateway, message_id: &str, not: &str) -> Value {
    for _ in 0..200 {
        let all = gw.all("default").await;
        let mut sends: Vec<&Value> =
            all.iter().filter(|i| i["request"]["message"]["messageId"] == message_id).collect();
        sends.sort_by_key(|i| i["created_at_ms"].as_i64());
        if let Some(first) = sends.first()
            && first["state"]["state"] != not
            && first["state"]["state"] != "dispatching"
        {
            return (*first).clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the send of {message_id} never settled: {:#?}", gw.all("default").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_lost_before_its_task_existed_is_not_applied_and_a_resend_runs() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let mut gw = Gateway::start(options(dir.path(), &agent, Some("attempt_recorded")));
    send_and_abandon(&gw, "lost-before-task", 1500).await;
    gw.kill9();
    let gw = Gateway::start(options(dir.path(), &agent, None));
    let lost = settled_send(&gw, "lost-before-task", "unknown").await;
    assert_eq!(lost["state"]["state"], "failed", "{lost}");
    assert_eq!(lost["state"]["error"]["code"], "reconciled_not_applied", "{lost}");
    assert_eq!(lost["state"]["resolution"]["principal"]["subject"], "a2a-supervisor", "{lost}");
    assert!(agent.received().is_empty(), "nothing reached the agent");
    // The client sends the same message again: it runs, once.
    let url = format!("{}/a2a/internal", gw.base);
    let (_, again) = rpc(&gw.http, &url, None, "SendMessage", message("lost-before-task")).await;
    assert_eq!(again["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{again}");
    assert_eq!(agent.received(), ["lost-before-task"]);
    // The same message once more: it ran, so it answers with that run's task.
    let (_, twice) = rpc(&gw.http, &url, None, "SendMessage", message("lost-before-task")).await;
    assert_eq!(twice["result"]["task"]["id"], again["result"]["task"]["id"], "{twice}");
    assert_eq!(agent.received(), ["lost-before-task"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_lost_after_its_task_completed_is_applied_from_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let mut gw = Gateway::start(options(dir.path(), &agent, Some("after_upstream_reply")));
    // The mirrored task is the answer, recorded before the outcome: the caller has it although
    // the gateway stops before committing that outcome.
    let url = format!("{}/a2a/internal", gw.base);
    let send = rpc(&gw.http, &url, None, "SendMessage", message("lost-after-reply"));
    let (_, told) = tokio::time::timeout(Duration::from_secs(10), send).await.unwrap();
    assert_eq!(told["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{told}");
    let all = gw.all("default").await;
    let run = all.iter().find(|i| i["request"]["message"]["messageId"] == "lost-after-reply");
    assert_eq!(run.map(|i| &i["state"]["state"]), Some(&json!("dispatching")), "answered before the outcome: {all:#?}");
    gw.kill9();
    let gw = Gateway::start(options(dir.path(), &agent, None));
    let done = settled_send(&gw, "lost-after-reply", "unknown").await;
    assert_eq!(done["state"]["state"], "succeeded", "{done}");
    assert_eq!(done["state"]["resolution"]["principal"]["subject"], "a2a-supervisor", "{done}");
    assert_eq!(done["state"]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["state"]["result"]["task"]["id"], told["result"]["task"]["id"], "what the caller was told: {done}");
    let url = format!("{}/a2a/internal", gw.base);
    let (_, read) = rpc(&gw.http, &url, None, "GetTask", json!({"id": told["result"]["task"]["id"]})).await;
    assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{read}");
    assert_eq!(agent.received(), ["lost-after-reply"], "sent once, never again");
}
