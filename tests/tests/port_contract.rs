//! The store ports beside the invocation store — pinned definitions, grants, kept conformance
//! runs — run on SQLite and on a throw-away PostgreSQL cluster (and, where the contract has one,
//! on its in-memory port), through the ports only.

use std::sync::Arc;

use serde_json::json;
use switchyard_contract::Error;
use switchyard_store::StoreOptions;

/// The pinned-definition port (`BindingStore`): trust on first use, a changed digest stops
/// matching its approval until approved again. The same assertions on SQLite, PostgreSQL and
/// the contract's in-memory port (which the faces' tests run on).
async fn bindings_pin_on_first_use_and_withhold_a_change(b: Arc<dyn switchyard_contract::BindingStore>) {
    let ok = |r: Result<switchyard_contract::Binding, Error>| r.unwrap_or_else(|e| panic!("{e}"));
    let first = ok(b.observe("fx", "tool", "echo", "sha256:a").await);
    assert!(first.is_approved());
    assert_eq!(first.approved_by.as_deref(), Some(switchyard_contract::FIRST_USE));
    assert!(ok(b.observe("fx", "tool", "echo", "sha256:a").await).is_approved(), "the same digest again");
    let changed = ok(b.observe("fx", "tool", "echo", "sha256:b").await);
    assert!(!changed.is_approved(), "a changed schema is withheld");
    assert_eq!(changed.approved_digest.as_deref(), Some("sha256:a"));
    ok(b.observe("other", "tool", "echo", "sha256:c").await);
    // A skill of the same name, changed too: approving one kind leaves the other withheld.
    ok(b.observe("fx", "skill", "echo", "sha256:s1").await);
    assert!(!ok(b.observe("fx", "skill", "echo", "sha256:s2").await).is_approved());
    let approved = b.approve("fx", Some(("echo", &["tool", "tool-meta"])), "operator").await;
    assert_eq!(approved.unwrap_or_else(|e| panic!("{e}")), 1);
    let listed = b.list(Some("fx")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 2, "{listed:?}");
    let of = |kind: &str| listed.iter().find(|l| l.kind == kind).cloned();
    assert!(of("tool").is_some_and(|t| t.is_approved() && t.approved_by.as_deref() == Some("operator")));
    assert!(of("skill").is_some_and(|s| !s.is_approved()), "the skill is approved apart: {listed:?}");
    assert_eq!(b.approve("fx", Some(("echo", &["skill"])), "operator").await.unwrap_or_else(|e| panic!("{e}")), 1);
    assert_eq!(b.approve("fx", None, "operator").await.unwrap_or_else(|e| panic!("{e}")), 0, "nothing left to approve");
}

/// Generates `mod name { sqlite, postgres[, memory] }` running `name` on the `field` store of
/// each database, and on the contract's memory port `memory` when one is named.
macro_rules! port_contract {
    ($name:ident, $field:ident $(, memory: $memory:ty)?) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let (_dir, url) = switchyard_tests::sqlite_url();
                let s = switchyard_store::connect(&url, &super::StoreOptions::default()).await;
                super::$name(s.unwrap().$field).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let url = switchyard_tests::pg::database().await;
                let s = switchyard_store::connect(&url, &super::StoreOptions::default()).await;
                super::$name(s.unwrap().$field).await;
            }
            $(
                #[tokio::test]
                async fn memory() {
                    super::$name(std::sync::Arc::new(<$memory>::default())).await;
                }
            )?
        }
    };
}

port_contract!(bindings_pin_on_first_use_and_withhold_a_change, bindings, memory: switchyard_contract::memory::MemoryBindings);

/// The grant port (`GrantStore`): a revocation is final; a single-use grant is spent once, and
/// again only by the call it was spent for (a driver taking that call over after a crash);
/// a revoked grant cannot be spent, a spent one cannot be revoked. The same assertions on
/// SQLite, PostgreSQL and the contract's in-memory port.
async fn grants_are_revoked_and_spent_once(g: Arc<dyn switchyard_contract::GrantStore>) {
    let ok = |r: Result<bool, Error>| r.unwrap_or_else(|e| panic!("{e}"));
    let tenant = |t: &str| switchyard_contract::TenantId::new(t).unwrap_or_else(|e| panic!("{e}"));
    let (red, blue) = (tenant("red"), tenant("blue"));
    for (id, t) in [("grt_a", &red), ("apr_b", &red), ("apr_c", &blue)] {
        g.record(id, t, "alice", &json!({ "jti": id })).await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(g.record("grt_a", &red, "alice", &json!({})).await.is_err(), "an id is recorded once");
    assert!(ok(g.revoke("grt_a", "ops").await));
    assert!(!ok(g.revoke("grt_a", "ops").await), "already revoked");
    assert!(!ok(g.spend("grt_a", "used by inv_1").await), "a revoked grant is not spent");
    assert!(ok(g.spend("apr_b", "used by inv_1").await));
    assert!(ok(g.spend("apr_b", "used by inv_1").await), "the same call spends it again");
    assert!(!ok(g.spend("apr_b", "used by inv_2").await), "another call does not");
    assert!(!ok(g.revoke("apr_b", "ops").await), "a spent grant is not revoked");
    assert!(!ok(g.spend("apr_nope", "used by inv_1").await), "an unknown grant is not spent");
    assert!(ok(g.is_revoked("apr_b").await) && ok(g.is_revoked("grt_a").await) && !ok(g.is_revoked("apr_c").await));
    let listed = g.list(Some(&red)).await.unwrap_or_else(|e| panic!("{e}"));
    let mut ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["apr_b", "grt_a"], "red's grants only");
    let spent = listed.iter().find(|r| r.id == "apr_b").map(|r| r.revoked_by.clone());
    assert_eq!(spent, Some(Some("used by inv_1".to_string())));
    assert_eq!(g.list(None).await.map(|l| l.len()).unwrap_or(0), 3);
}

port_contract!(grants_are_revoked_and_spent_once, grants, memory: switchyard_contract::memory::MemoryGrants);

async fn conformance_runs_are_kept_newest_first(runs: Arc<dyn switchyard_contract::ConformanceRuns>) {
    let run = |id: &str, started_ms: i64, passed: bool| switchyard_contract::ConformanceRun {
        id: id.to_string(),
        suite: "mcp-server".to_string(),
        target: "http://127.0.0.1:1/mcp".to_string(),
        started_ms,
        finished_ms: started_ms + 5,
        passed,
        summary: json!({ "id": id, "legs": [] }),
    };
    for r in [run("run_a", 10, true), run("run_b", 30, false), run("run_c", 20, true)] {
        runs.record(&r).await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(runs.record(&run("run_a", 40, true)).await.is_err(), "an id is recorded once");
    let listed = runs.list(2).await.unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["run_b", "run_c"], "newest first, bounded");
    assert_eq!(listed.first(), Some(&run("run_b", 30, false)), "every field round-trips");
    let got = runs.get("run_a").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.map(|r| r.summary), Some(json!({ "id": "run_a", "legs": [] })));
    assert_eq!(runs.get("run_nope").await.ok(), Some(None));
}

port_contract!(conformance_runs_are_kept_newest_first, conformance);
