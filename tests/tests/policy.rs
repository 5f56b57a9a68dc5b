//! The policy enforcement point end to end: the real gateway binary with a `[policy]` section,
//! fronting the fixture upstream over stdio, driven by rmcp clients of both eras and the admin
//! API. A denial is the tool's `isError` answer and nothing is admitted; a held call is
//! committed `awaiting_approval`, reaches the upstream only once approved (the fixture's call
//! log counts physical calls), and survives `kill -9` of the gateway; a denied approval runs
//! nothing; a caller cannot approve its own call.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{GRANT_META, KEY_META, UpstreamSpec, call, call_with_meta, connect, text_of, write_config};

const POLICY: &str = r#"
[[policy.envelope]]
upstream = "fx"
operation = "ask_name"
reason = "the assistant may not ask for names"

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

/// Polls the invocation until it is in `state` (or 30 s pass).
async fn wait_state(gw: &Gateway, id: &str, state: &str) -> Value {
    for _ in 0..300 {
        let (_, inv) =
            gw.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap_or_else(|e| panic!("{e}"));
        if inv["state"]["state"] == state {
            return inv;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("invocation {id} did not reach {state}");
}

async fn held_call(gw: &Gateway, modern: bool, key: &str) -> String {
    let client = connect(&format!("{}/mcp", gw.base), modern).await;
    let r = client.call_tool(call("fx__count_write", json!({"key": key}))).await.unwrap_or_else(|e| panic!("{e}"));
    let r = to_json(&r);
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["state"], "awaiting_approval", "{r}");
    assert!(text_of(&r).contains("waits for approval"), "{r}");
    let _ = client.cancel().await;
    r["structuredContent"]["invocation"].as_str().unwrap_or_else(|| panic!("no invocation: {r}")).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_allowed_denied_or_held_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let upstream = UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)]);
    let config = write_config(dir.path(), &[upstream], POLICY);
    let opts = Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() };
    let mut gw = Gateway::start(opts.clone());
    let url = format!("{}/mcp", gw.base);

    for modern in [true, false] {
        let client = connect(&url, modern).await;
        // A routine call runs.
        let r = client.call_tool(call("fx__echo", json!({"text": "hi"}))).await.unwrap();
        assert_eq!(text_of(&to_json(&r)), "hi");
        // A call the envelope refuses is the tool's answer, and nothing is admitted.
        let before = gw.all("default").await.len();
        let r = client.call_tool(call("fx__ask_name", json!({}))).await.unwrap();
        let r = to_json(&r);
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["state"], "denied", "{r}");
        assert_eq!(r["structuredContent"]["reason"], "the assistant may not ask for names", "{r}");
        assert_eq!(gw.all("default").await.len(), before, "a denied call leaves no invocation");
        let _ = client.cancel().await;
    }

    // An unlisted write is sensitive: held, committed, not sent.
    let id = held_call(&gw, true, "k1").await;
    let (status, shown) = gw.get("default", &format!("/admin/v1/invocations/{id}")).await.unwrap();
    assert_eq!((status, shown["state"]["state"].as_str()), (200, Some("awaiting_approval")), "{shown}");
    let (_, listed) = gw.cli(&["approvals", "list"]);
    assert!(listed.contains(&id) && listed.contains("sensitive"), "{listed}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(calls(&log), 0, "a held call does not reach the upstream");

    // Its own caller cannot approve it; someone else can, and it runs once.
    let own = gw
        .http
        .post(format!("{}/admin/v1/invocations/{id}/approve", gw.base))
        .bearer_auth(switchyard_tests::gateway::TOKEN)
        .header("x-switchyard-tenant", "default")
        .header("x-switchyard-subject", "anonymous")
        .send()
        .await
        .unwrap();
    assert_eq!(own.status().as_u16(), 403, "four eyes");
    let (status, _) = gw.post("other", &format!("/admin/v1/invocations/{id}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 404, "another tenant cannot see it, let alone approve it");
    let (status, _) = gw.post("other", &format!("/admin/v1/invocations/{id}/deny"), json!({})).await.unwrap();
    assert_eq!(status, 404);
    let (status, approved) =
        gw.post("default", &format!("/admin/v1/invocations/{id}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 200, "{approved}");
    let done = wait_state(&gw, &id, "succeeded").await;
    assert_eq!(done["state"]["result"]["content"][0]["text"], "wrote k1", "{done}");
    assert_eq!(calls(&log), 1, "approved: exactly one physical call");
    let (status, again) = gw.post("default", &format!("/admin/v1/invocations/{id}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 409, "approving twice is refused: {again}");

    // The approval binds to the exact call: with its key, the same call attaches to the held
    // invocation; the same key with another argument is refused and admits nothing.
    let client = connect(&url, true).await;
    let keyed = |key: &str| call_with_meta("fx__count_write", json!({"key": key}), &[(KEY_META, json!("pay-1"))]);
    let held = to_json(&client.call_tool(keyed("k9")).await.unwrap());
    let again = to_json(&client.call_tool(keyed("k9")).await.unwrap());
    assert_eq!(held["structuredContent"]["state"], "awaiting_approval", "{held}");
    assert_eq!(held["structuredContent"]["invocation"], again["structuredContent"]["invocation"], "{again}");
    let changed = client.call_tool(keyed("k10")).await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(changed.contains("different request"), "a changed argument is another call: {changed}");
    let _ = client.cancel().await;
    let held_id = held["structuredContent"]["invocation"].as_str().unwrap_or_default().to_string();
    gw.post("default", &format!("/admin/v1/invocations/{held_id}/deny"), json!({})).await.unwrap();

    // A denied approval runs nothing.
    let id = held_call(&gw, false, "k2").await;
    let (status, denied) =
        gw.post("default", &format!("/admin/v1/invocations/{id}/deny"), json!({"reason": "not today"})).await.unwrap();
    assert_eq!(status, 200, "{denied}");
    assert_eq!(denied["state"]["error"]["code"], "approval_denied", "{denied}");
    assert_eq!(denied["state"]["error"]["message"], "not today", "{denied}");
    assert_eq!(calls(&log), 1);

    // A held call survives kill -9; approved from the CLI, the restarted gateway runs it once.
    let id = held_call(&gw, true, "k3").await;
    gw.kill9();
    let gw = Gateway::start(opts);
    let (ok, out) = gw.cli(&["approvals", "approve", &id, "--by", "ops"]);
    assert!(ok, "{out}");
    let done = wait_state(&gw, &id, "succeeded").await;
    assert_eq!(done["state"]["result"]["content"][0]["text"], "wrote k3", "{done}");
    assert_eq!(calls(&log), 2, "exactly one physical call for k3");
}

/// An approval is a single-use grant bound to the held call (listed with `grants list`, spent
/// by that call when it runs), and the operator's envelope is asked again when an approved call
/// is about to run: a write frozen after it was held is refused (`policy_denied`) and never
/// reaches the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_spent_by_its_call_and_an_envelope_made_since_still_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let upstream = || UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)]);
    let config = write_config(dir.path(), &[upstream()], POLICY);
    let opts = Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() };
    let mut gw = Gateway::start(opts.clone());

    let first = held_call(&gw, true, "a1").await;
    let (status, _) = gw.post("default", &format!("/admin/v1/invocations/{first}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 200);
    wait_state(&gw, &first, "succeeded").await;
    let (_, listed) = gw.cli(&["grants", "list"]);
    let line = listed.lines().find(|l| l.starts_with("apr_")).unwrap_or_else(|| panic!("no approval grant: {listed}"));
    assert!(line.contains(&format!("used by {first}")), "spent by its call: {listed}");

    // Held now; the operator freezes writes (a new envelope) and restarts; then it is approved.
    let second = held_call(&gw, true, "a2").await;
    gw.kill9();
    let frozen = format!(
        "{POLICY}\n[[policy.envelope]]\nupstream = \"fx\"\noperation = \"count_write\"\nreason = \"writes are frozen\"\n"
    );
    write_config(dir.path(), &[upstream()], &frozen);
    let gw = Gateway::start(opts);
    let (status, approved) =
        gw.post("default", &format!("/admin/v1/invocations/{second}/approve"), json!({})).await.unwrap();
    assert_eq!(status, 200, "{approved}");
    let refused = wait_state(&gw, &second, "failed").await;
    assert_eq!(refused["state"]["error"]["code"], "policy_denied", "{refused}");
    assert_eq!(refused["state"]["error"]["message"], "writes are frozen", "{refused}");
    assert_eq!(calls(&log), 1, "the frozen write never reached the upstream");
    let (_, events) = gw.get("default", &format!("/admin/v1/invocations/{second}/events")).await.unwrap();
    let kinds: Vec<&str> = events.as_array().into_iter().flatten().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["admitted", "approved", "failed"], "{events}");
    assert_eq!(events[2]["resolution"]["by"], "policy", "{events}");
    let proof = events[1]["grant"].as_str().unwrap_or_default();
    assert_eq!(proof.split('.').count(), 3, "the approval's proof is its signed grant: {events}");
}

/// A quota defers a flooding tenant (429 with `Retry-After` on the admin API, a JSON-RPC error
/// with `retryAfterMs` on MCP) while another tenant's calls go through; nothing deferred is
/// admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_defers_a_flooding_tenant_and_not_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let quota = r#"
[policy]
default_write_tier = "routine"

[[policy.quotas]]
id = "demo-per-tenant"
upstream = "demo"
rate_per_s = 0.01
burst = 3

[[policy.quotas]]
upstream = "fx"
rate_per_s = 0.01
burst = 1
"#;
    let config = write_config(dir.path(), &[UpstreamSpec::stdio("fx", &[])], quota);
    let gw = Gateway::start(Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() });

    let mut statuses = Vec::new();
    for i in 0..8 {
        let url = format!("{}/admin/v1/invocations", gw.base);
        let resp = gw
            .http
            .post(url)
            .bearer_auth(switchyard_tests::gateway::TOKEN)
            .header("x-switchyard-tenant", "flood")
            .json(&json!({"upstream": "demo", "operation": "echo", "request": {"i": i}}))
            .send()
            .await
            .unwrap();
        let retry_after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
        statuses.push((resp.status().as_u16(), retry_after));
    }
    assert!(statuses[..3].iter().all(|(s, _)| *s == 201), "the burst goes through: {statuses:?}");
    for (status, retry_after) in &statuses[3..] {
        assert_eq!(*status, 429, "{statuses:?}");
        let secs: u64 = retry_after.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(secs >= 1, "Retry-After says when: {statuses:?}");
    }
    assert_eq!(gw.all("flood").await.len(), 3, "nothing deferred was admitted");
    let (status, calm) = gw.submit("calm", "echo", json!({}), None, 0).await.unwrap();
    assert_eq!(status, 201, "another tenant is not starved: {calm}");

    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let first = client.call_tool(call("fx__echo", json!({"text": "a"}))).await.unwrap();
    assert_eq!(text_of(&to_json(&first)), "a");
    let over = client.call_tool(call("fx__echo", json!({"text": "b"}))).await.err().map(|e| e.to_string());
    let over = over.unwrap_or_default();
    assert!(over.contains("over quota") && over.contains("retryAfterMs"), "{over}");
    let _ = client.cancel().await;
}

/// A concurrency limit lets a tenant run at most its share of calls at once: the next is
/// deferred (429, nothing admitted) while the slow ones run, another tenant is not held back,
/// and a slot is free again when its call ends (or when a resent key attaches to a running
/// call instead of starting one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_defers_calls_beyond_it_until_a_slot_frees() {
    let dir = tempfile::tempdir().unwrap();
    let limit = r#"
[policy]
default_write_tier = "routine"

[[policy.concurrency]]
id = "two-at-once"
upstream = "demo"
max_in_flight = 2
"#;
    let config = write_config(dir.path(), &[], limit);
    let gw = Gateway::start(Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() });
    let slow = |i: u32| json!({"delay_ms": 1500, "i": i});
    let (a, _) = gw.submit("busy", "echo", slow(1), Some("slow-1"), 0).await.unwrap();
    // The same key again attaches to the running call: the slot it took is given back at once.
    let (again, _) = gw.submit("busy", "echo", slow(1), Some("slow-1"), 0).await.unwrap();
    let (b, _) = gw.submit("busy", "echo", slow(2), None, 0).await.unwrap();
    assert_eq!((a, again, b), (201, 200, 201));
    let (status, over) = gw.submit("busy", "echo", slow(3), None, 0).await.unwrap();
    assert_eq!(status, 429, "{over}");
    assert!(over.to_string().contains("two-at-once"), "{over}");
    assert_eq!(gw.all("busy").await.len(), 2, "nothing deferred was admitted");
    let (status, _) = gw.submit("other", "echo", slow(4), None, 0).await.unwrap();
    assert_eq!(status, 201, "another tenant has slots of its own");
    // Once the slow calls end, there is room again.
    let mut status = 0;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = gw.submit("busy", "echo", json!({"i": 5}), None, 0).await.unwrap().0;
        if status == 201 {
            break;
        }
    }
    assert_eq!(status, 201, "a slot freed when a call ended");
}

/// A grant minted with `switchyard grants mint` lets its subject's sensitive call run at once;
/// a forged one, or the same grant once revoked, changes nothing (the call is held again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_lets_its_subjects_calls_run_until_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_s = log.display().to_string();
    let config = write_config(dir.path(), &[UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log_s)])], POLICY);
    let gw = Gateway::start(Options { data_dir: dir.path().to_path_buf(), config: Some(config), ..Options::default() });
    let token = gw.mint_grant("anonymous", &["--upstream", "fx", "--operation", "count_write"]);
    let with_grant =
        |key: &str, grant: &str| call_with_meta("fx__count_write", json!({"key": key}), &[(GRANT_META, json!(grant))]);
    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let r = to_json(&client.call_tool(with_grant("g1", &token)).await.unwrap());
    assert_eq!(text_of(&r), "wrote g1", "the grant lets it run: {r}");
    assert_eq!(calls(&log), 1);

    let mut forged = token.clone();
    forged.push('x');
    let r = to_json(&client.call_tool(with_grant("g2", &forged)).await.unwrap());
    assert_eq!(r["structuredContent"]["state"], "awaiting_approval", "a forged grant changes nothing: {r}");

    let (_, listed) = gw.cli(&["grants", "list"]);
    let id = listed.lines().nth(1).and_then(|l| l.split_whitespace().next()).unwrap_or_default().to_string();
    assert!(id.starts_with("grt_") && listed.contains("active"), "{listed}");
    let (ok, out) = gw.cli(&["grants", "revoke", &id]);
    assert!(ok, "{out}");
    let r = to_json(&client.call_tool(with_grant("g3", &token)).await.unwrap());
    assert_eq!(r["structuredContent"]["state"], "awaiting_approval", "a revoked grant changes nothing: {r}");
    assert_eq!(calls(&log), 1, "only the granted call reached the upstream");
    let _ = client.cancel().await;
}

/// A Cedar policy set (`[policy.cedar]`) decides in place of the tiers, through the real binary:
/// a permitted call runs, a `@hold` permit holds it for approval with its reason, a `forbid`
/// refuses it with its `@reason` (MCP `isError`, nothing admitted), a call no policy permits is
/// refused; every decision's audit basis names the policy set's hash. A policy set that does not
/// validate against the gateway's schema stops `validate-config` and the gateway's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cedar_policy_set_allows_holds_and_denies() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let policies = dir.path().join("policies.cedar");
    std::fs::write(
        &policies,
        r#"
@id("echo-for-all")
permit(principal, action == Switchyard::Action::"tools/call", resource == Switchyard::Operation::"fx/echo");

@id("writes-wait")
@hold("writes wait for the on-call engineer")
permit(principal in Switchyard::Tenant::"default", action, resource) when { resource.effect == "write" };

@id("names-stay-private")
@reason("names stay private")
forbid(principal, action, resource) when { resource.name == "ask_name" };
"#,
    )
    .unwrap();
    let cedar = format!("[policy.cedar]\npolicies = \"{}\"\n", policies.display());
    let upstream = UpstreamSpec::stdio("fx", &[("FIXTURE_CALL_LOG", &log.display().to_string())]);
    let config = write_config(dir.path(), &[upstream], &cedar);
    let gw = Gateway::start(Options {
        data_dir: dir.path().to_path_buf(),
        config: Some(config.clone()),
        ..Options::default()
    });

    let client = connect(&format!("{}/mcp", gw.base), true).await;
    let ran = to_json(&client.call_tool(call("fx__echo", json!({"text": "hi"}))).await.unwrap());
    assert_eq!(text_of(&ran), "hi", "{ran}");
    let held = to_json(&client.call_tool(call("fx__count_write", json!({"key": "c1"}))).await.unwrap());
    assert_eq!(held["structuredContent"]["state"], "awaiting_approval", "{held}");
    assert_eq!(held["structuredContent"]["reason"], "writes wait for the on-call engineer", "{held}");
    assert!(text_of(&held).contains("writes wait for the on-call engineer"), "{held}");
    let denied = to_json(&client.call_tool(call("fx__ask_name", json!({}))).await.unwrap());
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(denied["structuredContent"]["reason"], "names stay private", "{denied}");
    let _ = client.cancel().await;
    // A tenant the `writes-wait` permit does not name: no policy permits its write.
    let (status, refused) = gw.submit("acme", "count", json!({}), None, 0).await.unwrap();
    assert_eq!(status, 403, "{refused}");
    assert!(refused.to_string().contains("no Cedar policy permits this call"), "{refused}");
    assert_eq!(calls(&log), 0, "only echo ran (it does not count)");
    assert_eq!(gw.all("acme").await.len(), 0, "nothing refused was admitted");

    let (ok, out) = gw.cli(&["audit", "export", "--since", "1h"]);
    assert!(ok, "{out}");
    let decisions: Vec<Value> =
        out.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|r| r["kind"] == "decision").collect();
    assert_eq!(decisions.len(), 4, "{out}");
    assert!(decisions.iter().all(|d| d.to_string().contains("cedar ")), "each basis names the policy set: {out}");

    // A policy naming an attribute the gateway never sends does not validate: nothing starts.
    std::fs::write(&policies, "permit(principal, action, resource) when { resource.owner == \"me\" };").unwrap();
    let (ok, out) = gw.cli(&["validate-config"]);
    assert!(!ok && out.contains("does not validate against the gateway's schema"), "{out}");
}
