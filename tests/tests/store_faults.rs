//! A lost commit acknowledgment, made to happen: the gateway reaches PostgreSQL through a
//! fault-injecting TCP proxy that lets an admission's statement through and cuts the connection
//! as the database starts answering it — the row is committed, the gateway never hears so.
//! Before, the caller was told "nothing was changed, retry later" (`retry_safe: true`) for a
//! call that was admitted and then ran: a client that retried ran the write twice. Now the
//! store reads the row back and the caller is answered with the call it made (had the row not
//! been there, the answer would name the invocation and say it may still run: never "retry").

use serde_json::json;
use switchyard_tests::fault_proxy::{FaultProxy, Target};
use switchyard_tests::gateway::{Gateway, Options, call_log};

/// The unix socket and the database name of a test database's URL
/// (`postgres://…/<db>?host=<dir>&port=<port>`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_whose_commit_answer_is_lost_is_never_answered_retry_safe() {
    let url = switchyard_tests::pg::database().await;
    let (socket, db) = switchyard_tests::pg::socket_and_db(&url);
    let proxy = FaultProxy::start(Target::Unix(socket)).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let store_url = format!("postgres://postgres@{}/{db}?sslmode=disable", proxy.addr);
    let gw = Gateway::start(Options { data_dir: data.clone(), store_url: Some(store_url), ..Options::default() });

    // A write goes through untouched first (and warms the pool).
    let (status, first) = gw.submit("default", "count", json!({"n": 0}), None, 5000).await.unwrap();
    assert!((200..300).contains(&status), "{first}");

    let mut answered = Vec::new();
    for i in 1..=3 {
        let marker = format!("lost-ack-{i}-{}", uuid::Uuid::new_v4().simple());
        proxy.arm(marker.as_bytes()).await;
        let (status, body) = gw.submit("default", "count", json!({"marker": marker}), None, 5000).await.unwrap();
        assert_eq!(proxy.cuts(), i, "the proxy cut the admission's answer");
        answered.push((marker, status, body));
    }

    let all = gw.all_settled("default").await;
    for (marker, status, body) in &answered {
        let admitted = all.iter().find(|inv| inv["request"]["marker"] == marker.as_str());
        let retry_safe = body["error"]["retry_safe"] == true;
        let log = || std::fs::read_to_string(data.join("gateway.log")).unwrap_or_default();
        assert!(
            !(admitted.is_some() && retry_safe),
            "admitted as {:?} but answered retry-safe ({status}): {body}\n{}",
            admitted.map(|i| i["id"].clone()),
            log()
        );
        // The database answers a statement only after it committed, so the commit landed and
        // the store, reading the row back, answers with the call that was admitted.
        let inv = admitted.unwrap_or_else(|| panic!("not admitted ({status}): {body}"));
        assert!((200..300).contains(status) && body["id"] == inv["id"], "({status}) {body}\n{}", log());
    }
    // Every admitted write ran once, however its answer went.
    let counted = all.iter().filter(|i| i["target"]["operation"] == "count").count();
    assert_eq!(call_log(&data).len(), counted, "{all:?}");
}
