//! The policy enforcement point across replicas: two real gateway binaries on one PostgreSQL,
//! each fronting its own copy of the fixture upstream (both write one call log, which counts
//! physical calls). A call held on replica A survives `kill -9` of A, is approved on replica B
//! and runs exactly once; a grant revoked through replica A is refused by replica B at its next
//! decision.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{GRANT_META, UpstreamSpec, call, call_with_meta, connect, text_of, write_config};

/// `count_write` is an unlisted write: held (sensitive) unless a grant lets it run.
const POLICY: &str = r#"
[[policy.rules]]
upstream = "fx"
operation = "echo"
tier = "routine"
"#;

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| panic!("{e}"))
}

fn calls(log: &Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().count()
}

/// Two replicas' options on `url`, one config (one grant key) for both.
fn replicas(dir: &Path, url: &str) -> (Options, Options, std::path::PathBuf) {
    let log = dir.join("calls.log");
    let key = dir.join("grant-key");
    let policy = format!("[policy]\ngrant_key_file = \"{}\"\n{POLICY}", key.display());
    let upstream = UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log.display().to_string())]);
    let config = write_config(dir, &[upstream], &policy);
    let opts = |name: &str| Options {
        data_dir: dir.join(name),
        store_url: Some(url.to_string()),
        config: Some(config.clone()),
        ..Options::default()
    };
    (opts("a"), opts("b"), log)
}

/// Polls `id` on `gw` until it is in `state` (or 30 s pass).
async fn wait_state(gw: &Gateway, id: &str, state: &str) -> Value {
    let mut inv = Value::Null;
    for _ in 0..300 {
        inv = gw.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap_or_else(|e| panic!("{e}")).1;
        if inv["state"]["state"] == state {
            return inv;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("invocation {id} did not reach {state}: {inv}");
}

fn with_grant(key: &str, grant: &str) -> rmcp::model::CallToolRequestParams {
    call_with_meta("fx__count_write", json!({"key": key}), &[(GRANT_META, json!(grant))])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_held_on_one_replica_is_approved_on_another_after_kill_9_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = switchyard_tests::pg::database().await;
    let (a_opts, b_opts, log) = replicas(dir.path(), &url);
    let mut a = Gateway::start(a_opts.clone());
    let b = Gateway::start(b_opts);

    let client = connect(&format!("{}/mcp", a.base), true).await;
    let held = to_json(&client.call_tool(call("fx__count_write", json!({"key": "h1"}))).await.unwrap());
    assert_eq!(held["structuredContent"]["state"], "awaiting_approval", "{held}");
    let id = held["structuredContent"]["invocation"].as_str().unwrap_or_default().to_string();
    drop(client);
    a.kill9();

    // Replica B sees the held call (it is committed) and approves it; B runs it.
    let (_, pending) = b.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap();
    assert_eq!(pending["state"]["state"], "awaiting_approval", "{pending}");
    assert_eq!(calls(&log), 0, "nothing reached the upstream before the approval");
    let approve = b
        .http
        .post(format!("{}/admin/v1/invocations/{id}/approve", b.base))
        .bearer_auth(switchyard_tests::gateway::TOKEN)
        .header("x-switchyard-subject", "ops")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(approve.status().as_u16(), 200);
    let done = wait_state(&b, &id, "succeeded").await;
    assert_eq!(done["state"]["result"]["content"][0]["text"], "wrote h1", "{done}");

    // Replica A comes back; recovery finds nothing left to run: one physical call in all.
    let a = Gateway::start(a_opts);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(calls(&log), 1, "exactly one physical call for the approved call");
    let (_, seen_by_a) = a.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap();
    assert_eq!(seen_by_a["state"]["state"], "succeeded", "{seen_by_a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_revoked_through_one_replica_is_refused_by_another_at_its_next_decision() {
    let dir = tempfile::tempdir().unwrap();
    let url = switchyard_tests::pg::database().await;
    let (a_opts, b_opts, log) = replicas(dir.path(), &url);
    let a = Gateway::start(a_opts);
    let b = Gateway::start(b_opts);

    let token = a.mint_grant("anonymous", &["--upstream", "fx", "--operation", "count_write"]);

    let on_b = connect(&format!("{}/mcp", b.base), true).await;
    let r = to_json(&on_b.call_tool(with_grant("g1", &token)).await.unwrap());
    assert_eq!(text_of(&r), "wrote g1", "replica B honours a grant minted through A: {r}");

    let (_, listed) = a.cli(&["grants", "list"]);
    let id = listed.lines().nth(1).and_then(|l| l.split_whitespace().next()).unwrap_or_default().to_string();
    let (ok, out) = a.cli(&["grants", "revoke", &id]);
    assert!(ok, "{out}");
    let r = to_json(&on_b.call_tool(with_grant("g2", &token)).await.unwrap());
    assert_eq!(r["structuredContent"]["state"], "awaiting_approval", "B refuses the revoked grant at once: {r}");
    assert_eq!(calls(&log), 1, "only the granted call reached the upstream");
    let _ = on_b.cancel().await;
}
