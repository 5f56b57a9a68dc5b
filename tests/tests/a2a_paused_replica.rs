//! A replica paused past its lease never sends what another replica took over: two gateways on
//! one PostgreSQL database in front of an internal agent (the official Python SDK). Replica A
//! takes a first message, records its attempt and is stopped (`SIGSTOP`) before it writes the
//! sent marker; its lease runs out, replica B recovers the send (no marker: nothing was sent,
//! `not applied`) and the caller sends the message again through B, which delivers it. Then A
//! is resumed (`SIGCONT`). Before, A wrote the marker regardless and sent: the agent received
//! the message twice. Now the marker is a fenced mutex — written only while A's attempt is still
//! the call's current one with a live lease — and A sends nothing.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::a2a::{InternalAgent, rpc, write_gateway_config};
use switchyard_tests::gateway::{Gateway, Options};

fn signal(gw: &Gateway, sig: &str) {
    let ok = std::process::Command::new("kill").args([sig, &gw.pid().to_string()]).status();
    assert!(ok.is_ok_and(|s| s.success()), "kill {sig}");
}

/// The sends of `message_id`, oldest first, as B's admin API lists them.
async fn sends(gw: &Gateway, message_id: &str) -> Vec<Value> {
    let mut all: Vec<Value> =
        gw.all("default").await.into_iter().filter(|i| i["request"]["message"]["messageId"] == message_id).collect();
    all.sort_by_key(|i| i["created_at_ms"].as_i64());
    all
}

async fn until(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    for _ in 0..300 {
        if ok().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen in 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_paused_past_its_lease_does_not_send_what_another_took_over() {
    let dir = tempfile::tempdir().unwrap();
    let agent = InternalAgent::start(dir.path());
    let card = format!("{}/.well-known/agent-card.json", agent.url);
    let agents = format!("[[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = \"{card}\"\n");
    let config = write_gateway_config(dir.path(), "anonymous = true", &agents);
    let store = switchyard_tests::pg::database().await;
    let replica = |name: &str, env: Vec<(String, String)>| Options {
        data_dir: dir.path().join(name),
        store_url: Some(store.clone()),
        config: Some(config.clone()),
        env,
        ..Options::default()
    };
    // A stops for 1.5 s after recording the attempt: the window in which it is frozen.
    let pause = vec![("SWITCHYARD_FAULT_PAUSE".to_string(), "attempt_recorded:1500".to_string())];
    let a = Gateway::start(replica("a", pause));
    let b = Gateway::start(replica("b", Vec::new()));
    let message = json!({"message": {"messageId": "paused-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}});

    let url_a = format!("{}/a2a/internal", a.base);
    let (http, m) = (a.http.clone(), message.clone());
    let abandoned = tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(2), rpc(&http, &url_a, None, "SendMessage", m)).await;
    });
    until("A recording the attempt", async || {
        sends(&b, "paused-1").await.first().is_some_and(|i| i["state"]["state"] == "dispatching")
    })
    .await;
    signal(&a, "-STOP");
    let _ = abandoned.await;

    // B takes the send over once A's lease (2 s) runs out: no marker, so nothing was sent.
    until("B reconciling the send not applied", async || {
        sends(&b, "paused-1").await.first().is_some_and(|i| i["state"]["error"]["code"] == "reconciled_not_applied")
    })
    .await;
    assert!(agent.received().is_empty(), "nothing reached the agent yet");
    // The caller sends the same message again, through B: it runs, once.
    let url_b = format!("{}/a2a/internal", b.base);
    let (_, again) = rpc(&b.http, &url_b, None, "SendMessage", message.clone()).await;
    assert_eq!(again["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{again}");
    assert_eq!(agent.received(), ["paused-1"]);

    // A wakes up where it stopped, past the point where it would have sent.
    signal(&a, "-CONT");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = std::fs::read_to_string(dir.path().join("a").join("gateway.log")).unwrap_or_default();
    assert_eq!(agent.received(), ["paused-1"], "the resumed replica sent it again:\n{log}");
    assert!(log.contains("nothing sent") || log.contains("lease lost"), "A said why it stopped:\n{log}");
    let first = sends(&b, "paused-1").await.into_iter().next().unwrap_or_default();
    assert_eq!(first["state"]["error"]["code"], "reconciled_not_applied", "A's late outcome changed nothing: {first}");
}
