//! The audit log end to end: two real gateway replicas on one PostgreSQL record every policy
//! decision of a mixed load (allowed, denied, held, deferred) on their own chains, approvals and
//! denials through the admin API and grants through the command line join them, and
//! `switchyard audit verify` passes; then a row changed, a row removed and two rows swapped in
//! the database (behind the append-only triggers' back) are each named by `verify`, which exits
//! non-zero. A decision that cannot be recorded admits nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, TOKEN};

const POLICY: &str = r#"
[[policy.envelope]]
operation = "drop_*"
reason = "destructive operations are not allowed"

[[policy.rules]]
upstream = "demo"
operation = "echo"
tier = "routine"

[[policy.rules]]
upstream = "demo"
operation = "limited"
tier = "routine"

[[policy.quotas]]
operation = "limited"
rate_per_s = 1.0
burst = 1

[audit]
checkpoint_interval_s = 1
"#;

/// A config with the policy above, every replica signing grants with one shared key and
/// checkpoints with another.
fn config(dir: &Path) -> PathBuf {
    let (key, audit_key) = (dir.join("grant-key"), dir.join("audit-key"));
    let policy = POLICY.replace("[audit]\n", &format!("[audit]\nkey_file = \"{}\"\n", audit_key.display()));
    let text = format!("[policy]\ngrant_key_file = \"{}\"\n{policy}", key.display());
    let path = dir.join("switchyard.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

fn replica(dir: &Path, name: &str, url: &str, config: &Path) -> Gateway {
    Gateway::start(Options {
        data_dir: dir.join(name),
        store_url: Some(url.to_string()),
        config: Some(config.to_path_buf()),
        env: vec![("SWITCHYARD__AUDIT__PARTITION".into(), format!("\"{name}\""))],
        ..Options::default()
    })
}

/// Submits `op` to the demo upstream as `subject`; returns the HTTP status and body.
async fn submit(gw: &Gateway, subject: &str, op: &str, n: usize) -> (u16, Value) {
    let resp = gw
        .http
        .post(format!("{}/admin/v1/invocations", gw.base))
        .bearer_auth(TOKEN)
        .header("x-switchyard-subject", subject)
        .json(&json!({"upstream": "demo", "operation": op, "request": {"n": n}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("submit: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Every exported row (`switchyard audit export`).
fn export(gw: &Gateway) -> Vec<Value> {
    let (ok, out) = gw.cli(&["audit", "export", "--since", "1d"]);
    assert!(ok, "{out}");
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn verdicts(rows: &[Value]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for r in rows.iter().filter(|r| r["kind"] == "decision") {
        *n.entry(r["detail"]["verdict"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_mixed_decisions_on_two_replicas_verify() {
    let dir = tempfile::tempdir().unwrap();
    let url = switchyard_tests::pg::database().await;
    let cfg = config(dir.path());
    let (a, b) = (replica(dir.path(), "replica-a", &url, &cfg), replica(dir.path(), "replica-b", &url, &cfg));

    // 10,000 calls, 32 at a time, alternating replicas: 4 in 10 allowed, 3 denied by the
    // envelope, 1 held (an unlisted write), 2 over a quota (nearly all deferred).
    let ops = ["echo", "echo", "echo", "echo", "drop_table", "drop_table", "drop_table", "count", "limited", "limited"];
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    let mut held = Vec::new();
    for chunk in (0..10_000).collect::<Vec<usize>>().chunks(32) {
        let calls = chunk.iter().map(|&i| {
            let gw = if i % 2 == 0 { &a } else { &b };
            async move { (i, submit(gw, "alice", ops[i % 10], i).await) }
        });
        for (i, (status, body)) in futures::future::join_all(calls).await {
            *statuses.entry(status).or_default() += 1;
            if ops[i % 10] == "count" {
                assert_eq!(status, 202, "{body}");
                held.push(body["id"].as_str().unwrap_or_else(|| panic!("no id: {body}")).to_string());
            }
        }
    }
    assert_eq!(statuses.get(&403), Some(&3000), "{statuses:?}");
    assert_eq!(statuses.get(&202), Some(&1000), "{statuses:?}");
    assert!(statuses.get(&429).copied().unwrap_or(0) >= 1900, "{statuses:?}");

    // Approval steps through the admin API (someone other than the caller) and grants through
    // the command line join the log.
    for id in &held[..3] {
        let (status, body) =
            a.post("default", &format!("/admin/v1/invocations/{id}/approve"), json!({})).await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    for id in &held[3..5] {
        let (status, body) = b
            .post("default", &format!("/admin/v1/invocations/{id}/deny"), json!({"reason": "not today"}))
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let (ok, out) = a.cli(&["grants", "mint", "--subject", "alice", "--ceiling", "sensitive"]);
    assert!(ok, "{out}");
    let grant = out
        .lines()
        .find_map(|l| l.strip_prefix("grant "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no grant id: {out}"))
        .to_string();
    let (ok, out) = a.cli(&["grants", "revoke", &grant]);
    assert!(ok, "{out}");

    let rows = export(&a);
    let v = verdicts(&rows);
    assert_eq!(v.values().sum::<usize>(), 10_000, "one decision recorded per call: {v:?}");
    assert_eq!((v.get("deny"), v.get("hold")), (Some(&3000), Some(&1000)), "{v:?}");
    assert_eq!(v.get("allow").copied().unwrap_or(0) + v.get("defer").copied().unwrap_or(0), 6000, "{v:?}");
    let kinds = |k: &str| rows.iter().filter(|r| r["kind"] == k).count();
    assert_eq!((kinds("approval.approved"), kinds("approval.denied")), (3, 2));
    assert_eq!((kinds("grant.minted"), kinds("grant.revoked")), (1, 1));
    let parts = |p: &str| rows.iter().filter(|r| r["partition"] == p).count();
    assert!(parts("replica-a") >= 5000 && parts("replica-b") >= 5000, "each replica chains its own decisions");
    assert_eq!(parts("cli"), 2);
    let denial = rows.iter().find(|r| r["detail"]["verdict"] == "deny").unwrap_or_else(|| panic!("no denial"));
    assert_eq!(denial["actor"], "alice");
    assert_eq!(denial["detail"]["reason"], "destructive operations are not allowed");
    assert!(denial["detail"]["digest"].as_str().is_some_and(|d| !d.is_empty()), "{denial}");
    let approval = rows.iter().find(|r| r["kind"] == "approval.approved").unwrap_or_else(|| panic!("no approval"));
    assert_eq!((approval["actor"].as_str(), approval["detail"]["caller"].as_str()), (Some("admin"), Some("alice")));

    let (ok, out) = a.cli(&["audit", "checkpoint"]);
    assert!(ok && out.contains("over 3 partitions"), "{out}");
    let (ok, out) = b.cli(&["audit", "verify"]);
    assert!(ok, "{out}");
    assert!(out.contains("audit log ok") && out.contains("in 3 partitions"), "{out}");
}

/// A fresh log of about 60 entries on one replica; returns its database, dir and the gateway.
async fn small_log() -> (String, tempfile::TempDir, Gateway) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = switchyard_tests::pg::database().await;
    let cfg = config(dir.path());
    let gw = replica(dir.path(), "replica-a", &url, &cfg);
    for i in 0..60 {
        submit(&gw, "alice", ["echo", "drop_table", "count"][i % 3], i).await;
    }
    let (ok, out) = gw.cli(&["audit", "verify"]);
    assert!(ok && out.contains("60 rows"), "{out}");
    (url, dir, gw)
}

/// Runs `sql` with the append-only trigger off, as someone with the database's credentials.
fn tamper(url: &str, sql: &str) {
    let sql = format!(
        "BEGIN; ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only; {sql}; \
         ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only; COMMIT;"
    );
    switchyard_tests::pg::psql(url, &sql).unwrap_or_else(|e| panic!("{e}"));
}

fn verify_fails_naming(gw: &Gateway, named: &str) {
    let (ok, out) = gw.cli(&["audit", "verify"]);
    assert!(!ok, "verify passed a tampered log: {out}");
    assert!(out.contains(named) && out.contains("TAMPERED"), "expected `{named}`: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_a_tampered_row() {
    let (url, _dir, gw) = small_log().await;
    tamper(
        &url,
        "UPDATE audit_log SET detail = replace(detail, '\"deny\"', '\"allow\"') WHERE part = 'replica-a' AND seq = 2",
    );
    verify_fails_naming(&gw, "replica-a #2: changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_a_deleted_row() {
    let (url, _dir, gw) = small_log().await;
    tamper(&url, "DELETE FROM audit_log WHERE part = 'replica-a' AND seq = 17");
    verify_fails_naming(&gw, "replica-a #17: removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_a_swapped_pair() {
    let (url, _dir, gw) = small_log().await;
    tamper(
        &url,
        "UPDATE audit_log SET seq = -seq WHERE part = 'replica-a' AND seq IN (30, 31); \
         UPDATE audit_log SET seq = CASE seq WHEN -30 THEN 31 ELSE 30 END WHERE part = 'replica-a' AND seq IN (-30, -31)",
    );
    verify_fails_naming(&gw, "replica-a #30 and #31: swapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_that_cannot_be_recorded_admits_nothing() {
    let (url, _dir, gw) = small_log().await;
    let before = gw.all("default").await.len();
    switchyard_tests::pg::psql(&url, "ALTER TABLE audit_log RENAME TO audit_log_away").unwrap();
    let (status, body) = submit(&gw, "alice", "echo", 1000).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.to_string().contains("audit log"), "{body}");
    assert_eq!(gw.all("default").await.len(), before, "nothing was admitted");
    switchyard_tests::pg::psql(&url, "ALTER TABLE audit_log_away RENAME TO audit_log").unwrap();
    let (status, body) = submit(&gw, "alice", "echo", 1001).await;
    assert_eq!(status, 201, "the log is back: {body}");
    let (ok, out) = gw.cli(&["audit", "verify"]);
    assert!(ok && out.contains("61 rows"), "the failed batch left no hole: {out}");
}

/// A gateway that stops signs the log's tail: before, rows appended after the last periodic
/// checkpoint were left unsigned at shutdown (a tail that could be cut off unnoticed), and
/// `audit verify` did not say so. Now `verify` names the unsigned tail, and a graceful stop
/// signs it, with the audit key (never the grant key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_gateway_signs_the_tail_and_verify_names_an_unsigned_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("switchyard.toml");
    std::fs::write(&path, "[policy]\n\n[audit]\ncheckpoint_interval_s = 3600\n").unwrap();
    let mut gw =
        Gateway::start(Options { data_dir: dir.path().join("d"), config: Some(path.clone()), ..Options::default() });
    for n in 0..3 {
        let (status, body) = submit(&gw, "alice", "echo", n).await;
        assert!((200..300).contains(&status), "{body}");
    }
    let (ok, before) = gw.cli(&["audit", "verify"]);
    assert!(ok && before.contains("rows after the last signed checkpoint"), "{before}");
    assert!(gw.terminate(), "a graceful stop");
    let (ok, after) = gw.cli(&["audit", "verify"]);
    assert!(ok && !after.contains("after the last signed checkpoint"), "{after}");
    assert!(after.contains("audit log ok") && after.contains("1 checkpoints"), "{after}");
    // Checkpoints are signed with a key of their own: whoever mints grants cannot re-sign history.
    let d = dir.path().join("d");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    assert_ne!(read("audit-signing-key"), read("grant-signing-key"));
    let grants = d.join("grant-signing-key");
    std::fs::write(&path, format!("[policy]\n\n[audit]\nkey_file = {:?}\n", grants.display().to_string())).unwrap();
    let (ok, out) = gw.cli(&["audit", "verify"]);
    assert!(!ok && out.contains("checkpoints need a key of their own"), "{out}");
}
