//! Crash tests: the real `switchyard` binary on PostgreSQL and on SQLite (the embedded default),
//! 200 `write` calls against the
//! counting demo upstream plus `read_only` calls, `kill -9` at three points, restart, and check
//! that every admitted invocation is there, is terminal or `unknown`, that the upstream saw at
//! most one physical call per invocation, and that the reads were retried to completion.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, call_log};

const WRITES: usize = 200;
const READS: usize = 20;
const TENANT: &str = "crash";

struct Scenario {
    _dir: tempfile::TempDir,
    opts: Options,
}

#[derive(Debug, Clone, Copy)]
enum Db {
    Postgres,
    Sqlite,
}

async fn scenario(db: Db) -> Scenario {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let env = [
        ("SWITCHYARD__ENGINE__LEASE_TTL_MS", "1500"),
        ("SWITCHYARD__ENGINE__BACKOFF_MAX_MS", "300"),
        ("SWITCHYARD__ENGINE__RECOVERY_INTERVAL_MS", "250"),
        ("SWITCHYARD__ENGINE__ATTEMPT_TIMEOUT_MS", "20000"),
    ];
    let opts = Options {
        data_dir: dir.path().join("data"),
        store_url: match db {
            Db::Postgres => Some(switchyard_tests::pg::database().await),
            Db::Sqlite => None,
        },
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        config: None,
        listen: None,
        wrapper: Vec::new(),
    };
    Scenario { _dir: dir, opts }
}

fn with_fault(opts: &Options, point: &str) -> Options {
    let mut o = opts.clone();
    o.env.push(("SWITCHYARD_FAULT_PAUSE".into(), point.into()));
    o
}

/// Submits every call (32 at a time) without waiting for outcomes; returns key → invocation id
/// for the calls whose admission was answered.
async fn submit_all(gw: &Gateway, delay_ms: u64) -> HashMap<String, String> {
    let calls = (0..WRITES).map(|i| ("count", format!("w-{i}"))).chain((0..READS).map(|i| ("echo", format!("r-{i}"))));
    let results: Vec<_> = futures::stream::iter(calls)
        .map(|(op, key)| async move {
            let r = gw.submit(TENANT, op, json!({ "delay_ms": delay_ms, "key": key }), Some(&key), 0).await;
            (key, r)
        })
        .buffer_unordered(32)
        .collect()
        .await;
    results
        .into_iter()
        .filter_map(|(key, r)| match r {
            Ok((201, v)) => Some((key, v["id"].as_str().unwrap_or_default().to_string())),
            _ => None,
        })
        .collect()
}

/// After a restart the client retries every call with the same key and body, as a real client
/// would; already admitted calls must come back as the same invocation.
async fn resubmit_all(gw: &Gateway, delay_ms: u64, admitted: &HashMap<String, String>) -> HashMap<String, String> {
    let mut ids = HashMap::new();
    let keys: Vec<_> = (0..WRITES)
        .map(|i| ("count", format!("w-{i}")))
        .chain((0..READS).map(|i| ("echo", format!("r-{i}"))))
        .collect();
    for (op, key) in keys {
        let (status, v) = gw
            .submit(TENANT, op, json!({ "delay_ms": delay_ms, "key": key }), Some(&key), 0)
            .await
            .unwrap_or_else(|e| panic!("resubmit {key}: {e}"));
        let id = v["id"].as_str().unwrap_or_default().to_string();
        match admitted.get(&key) {
            Some(before) => {
                assert_eq!(status, 200, "{key} was admitted before the crash: {v}");
                assert_eq!(&id, before, "{key} must attach to its original invocation");
            }
            None => assert!(status == 200 || status == 201, "{key}: {status} {v}"),
        }
        ids.insert(key, id);
    }
    ids
}

/// Waits until no invocation is admitted, dispatching or retrying; returns all of them.
async fn settled(gw: &Gateway) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = gw.all(TENANT).await;
        let active = all
            .iter()
            .filter(|i| matches!(i["state"]["state"].as_str(), Some("admitted" | "dispatching" | "retrying")))
            .count();
        if active == 0 {
            return all;
        }
        assert!(Instant::now() < deadline, "{active} invocations still active after 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Restarts the gateway without faults, lets the client retry every call, waits for recovery,
/// and runs the shared checks. Returns the gateway, the states counted, and the call log.
async fn restart_and_check(
    s: &Scenario,
    admitted: &HashMap<String, String>,
    delay_ms: u64,
) -> (Gateway, HashMap<String, usize>, Vec<(String, String)>) {
    let gw = Gateway::start(s.opts.clone());
    let ids = resubmit_all(&gw, delay_ms, admitted).await;
    let all = settled(&gw).await;
    let log = call_log(&s.opts.data_dir);
    let states = check(&all, admitted, &ids, &log);
    (gw, states, log)
}

/// The checks every scenario shares; returns the count of invocations per state.
fn check(
    all: &[Value],
    admitted: &HashMap<String, String>,
    ids: &HashMap<String, String>,
    log: &[(String, String)],
) -> HashMap<String, usize> {
    let by_id: HashMap<&str, &Value> = all.iter().map(|i| (i["id"].as_str().unwrap_or_default(), i)).collect();
    for (key, id) in admitted {
        assert!(by_id.contains_key(id.as_str()), "admitted invocation {id} ({key}) is missing after restart");
    }
    assert_eq!(all.len(), WRITES + READS, "one invocation per idempotency key");
    assert_eq!(ids.values().collect::<HashSet<_>>().len(), WRITES + READS);
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (inv, _) in log {
        *calls.entry(inv.as_str()).or_default() += 1;
    }
    for (inv, n) in &calls {
        assert_eq!(*n, 1, "the upstream saw {n} physical calls for {inv}");
        assert!(by_id.contains_key(inv), "a physical call for an invocation that does not exist: {inv}");
    }
    let mut states: HashMap<String, usize> = HashMap::new();
    for inv in all {
        let state = inv["state"]["state"].as_str().unwrap_or_default().to_string();
        let key = inv["ingress_key"].as_str().unwrap_or_default();
        if key.starts_with("r-") {
            assert_eq!(state, "succeeded", "read {key} was not retried to completion: {inv}");
        } else {
            assert!(matches!(state.as_str(), "succeeded" | "failed" | "unknown"), "write {key} is {state}");
            assert!(inv["attempts"].as_u64().unwrap_or(9) <= 1, "write {key} was dispatched twice: {inv}");
            if state == "succeeded" {
                let id = inv["id"].as_str().unwrap_or_default();
                assert_eq!(calls.get(id), Some(&1), "succeeded write {key} has no physical call");
            }
        }
        *states.entry(state).or_default() += 1;
    }
    eprintln!("states after recovery: {states:?}; physical calls: {}", log.len());
    states
}

async fn kill_before_dispatch(db: Db) {
    let s = scenario(db).await;
    let mut gw = Gateway::start(with_fault(&s.opts, "before_dispatch"));
    let admitted = submit_all(&gw, 0).await;
    assert_eq!(admitted.len(), WRITES + READS, "every call is admitted before any dispatch");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(call_log(&s.opts.data_dir).is_empty(), "nothing went upstream before the kill");
    gw.kill9();

    let (_gw, states, log) = restart_and_check(&s, &admitted, 0).await;
    assert_eq!(states.get("succeeded"), Some(&(WRITES + READS)), "nothing was dispatched, so recovery dispatches all");
    assert_eq!(log.len(), WRITES);
}

async fn kill_during_the_upstream_call(db: Db) {
    let s = scenario(db).await;
    let mut gw = Gateway::start(s.opts.clone());
    let submitting = {
        let gw = &gw;
        async move { submit_all(gw, 1500).await }
    };
    let watcher = async {
        let deadline = Instant::now() + Duration::from_secs(30);
        while call_log(&s.opts.data_dir).len() < 40 {
            assert!(Instant::now() < deadline, "calls never reached the upstream");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // Kill as soon as 40 writes are in flight, while submissions are still arriving.
    let admitted = tokio::select! {
        a = submitting => a,
        _ = watcher => HashMap::new(),
    };
    gw.kill9();
    // Recover what the client saw admitted from the database instead, to be strict about it.
    let in_flight_before = call_log(&s.opts.data_dir).len();
    assert!(in_flight_before >= 40);

    let gw = Gateway::start(s.opts.clone());
    let known: HashMap<String, String> = gw
        .all(TENANT)
        .await
        .iter()
        .map(|i| {
            (
                i["ingress_key"].as_str().unwrap_or_default().to_string(),
                i["id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for (k, id) in &admitted {
        assert_eq!(known.get(k), Some(id), "answered admission {k} lost");
    }
    let ids = resubmit_all(&gw, 1500, &known).await;
    let all = settled(&gw).await;
    let log = call_log(&s.opts.data_dir);
    let states = check(&all, &known, &ids, &log);
    assert!(
        states.get("unknown").copied().unwrap_or(0) >= 1,
        "writes in flight at the kill must be unknown: {states:?}"
    );
}

async fn kill_after_the_upstream_replied_before_the_outcome_committed(db: Db) {
    let s = scenario(db).await;
    let mut gw = Gateway::start(with_fault(&s.opts, "after_upstream_reply"));
    let admitted = submit_all(&gw, 0).await;
    assert_eq!(admitted.len(), WRITES + READS);
    let deadline = Instant::now() + Duration::from_secs(30);
    while call_log(&s.opts.data_dir).len() < WRITES {
        assert!(Instant::now() < deadline, "not every write reached the upstream");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gw.kill9();

    let (gw, states, log) = restart_and_check(&s, &admitted, 0).await;
    assert_eq!(states.get("unknown"), Some(&WRITES), "every write's reply was lost: unknown, never re-sent");
    assert_eq!(log.len(), WRITES, "no write was sent twice");

    // An operator reconciles one; the client's retry with the same key then gets that result.
    let id = &admitted["w-7"];
    let (ok, out) = gw.cli(&["reconcile", id, "applied", "--result", r#"{"reconciled":true}"#, "--by", "ops-alice"]);
    assert!(ok, "{out}");
    let (status, v) = gw
        .submit(TENANT, "count", json!({ "delay_ms": 0, "key": "w-7" }), Some("w-7"), 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
    assert_eq!(v["state"]["state"], "succeeded", "{v}");
    assert_eq!(v["state"]["result"], json!({"reconciled": true}));
    assert_eq!(v["state"]["resolution"]["principal"]["subject"], "ops-alice");
    let (ok, out) = gw.cli(&["reconcile", id, "applied", "--result", r#"{"reconciled":true}"#, "--by", "ops-alice"]);
    assert!(ok && out.contains("already reconciled"), "{out}");
    let (ok, out) = gw.cli(&["reconcile", id, "not-applied"]);
    assert!(!ok && out.contains("different decision"), "{out}");
    let (ok, out) = gw.cli(&["invocations", "events", id]);
    assert!(ok && out.contains("\"type\":\"reconciled\"") && out.contains("outcome_unknown"), "{out}");
    assert_eq!(call_log(&s.opts.data_dir).len(), WRITES, "reconciliation sends nothing upstream");
}

/// Many calls admitted at once, and `kill -9` while commits are in flight. The admissions,
/// attempts and outcomes of many calls share commits (SQLite's group commit; PostgreSQL's
/// batched statements): the writer is stopped before committing a batch of at least 8 changes
/// (`SWITCHYARD_FAULT_PAUSE=before_shared_commit`) and the kill comes then. Read straight from
/// the database at the moment of the kill: every answered admission is there, every invocation
/// there is whole (its row agrees with a gapless event log that starts at its admission), and
/// nothing of the stopped batch is there, so each call is either recorded and answered or not
/// recorded at all. After a restart every key names exactly one invocation.
async fn kill_while_commits_are_shared(db: Db) {
    const CALLS: usize = 600;
    let s = scenario(db).await;
    let mut gw = Gateway::start(with_fault(&s.opts, "before_shared_commit"));
    let (http, base) = (gw.http.clone(), gw.base.clone());
    let answered = std::sync::Arc::new(std::sync::Mutex::new(HashMap::<String, String>::new()));
    let flood = {
        let answered = answered.clone();
        tokio::spawn(async move {
            futures::stream::iter(0..CALLS)
                .map(|i| {
                    let (http, base, answered) = (http.clone(), base.clone(), answered.clone());
                    async move {
                        let key = format!("g-{i}");
                        let body = json!({"upstream": "demo", "operation": "count", "request": {"i": i}, "idempotency_key": key});
                        let resp = http
                            .post(format!("{base}/admin/v1/invocations?wait_ms=0"))
                            .bearer_auth(switchyard_tests::gateway::TOKEN)
                            .header("x-switchyard-tenant", TENANT)
                            .json(&body)
                            .send()
                            .await;
                        if let Ok(r) = resp
                            && r.status().as_u16() == 201
                            && let Ok(v) = r.json::<Value>().await
                        {
                            let id = v["id"].as_str().unwrap_or_default().to_string();
                            answered.lock().unwrap_or_else(|e| e.into_inner()).insert(key, id);
                        }
                    }
                })
                .buffer_unordered(64)
                .collect::<Vec<()>>()
                .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = s.opts.data_dir.join("gateway.log");
    let paused = || std::fs::read_to_string(&log).unwrap_or_default().contains("pausing before a shared commit");
    while !paused() {
        assert!(Instant::now() < deadline, "the flood never got that far");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // Every commit before the stopped one has been answered by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    gw.kill9();
    let _ = flood.await;
    let answered = answered.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(answered.len() < CALLS, "the kill came after every call was answered: nothing was in flight");

    // The database as the kill left it, through the store port.
    let url =
        s.opts.store_url.clone().unwrap_or_else(|| format!("sqlite://{}/switchyard.db", s.opts.data_dir.display()));
    let opts = switchyard_store::StoreOptions { migrate: false, ..Default::default() };
    let store = switchyard_store::connect(&url, &opts).await.unwrap_or_else(|e| panic!("{e}")).invocations;
    let tenant = switchyard_contract::TenantId::new(TENANT).unwrap_or_else(|e| panic!("{e}"));
    let mut present = HashMap::new();
    let mut query = switchyard_contract::ListQuery { limit: Some(500), ..Default::default() };
    loop {
        let page = store.list(&tenant, &query).await.unwrap_or_else(|e| panic!("{e}"));
        for inv in page.items {
            let events = store.events(inv.id, 0, 1_000).await.unwrap_or_else(|e| panic!("{e}"));
            let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, (1..=inv.last_seq).collect::<Vec<_>>(), "{} is not whole: {inv:?}", inv.id);
            assert!(
                matches!(events.first().map(|e| &e.kind), Some(switchyard_contract::EventKind::Admitted { .. })),
                "{} does not start at its admission",
                inv.id
            );
            let key = inv.ingress_key.as_ref().map(|k| k.as_str().to_string()).unwrap_or_default();
            present.insert(key, inv.id.to_string());
        }
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    drop(store);
    for (key, id) in &answered {
        assert_eq!(present.get(key), Some(id), "answered admission {key} is missing after the kill");
    }
    let unanswered_present = present.keys().filter(|k| !answered.contains_key(*k)).count();
    assert_eq!(unanswered_present, 0, "a change of the stopped shared commit was recorded");
    assert!(answered.len() + 8 <= CALLS, "the stopped commit held at least 8 changes of unanswered calls");
    eprintln!(
        "{db:?} at the kill: {} answered, {} recorded but unanswered, {} neither (of {CALLS})",
        answered.len(),
        unanswered_present,
        CALLS - present.len()
    );

    // A client retries every call with its key: each key names exactly one invocation.
    let gw = Gateway::start(s.opts.clone());
    let mut ids = HashSet::new();
    for i in 0..CALLS {
        let key = format!("g-{i}");
        let (status, v) =
            gw.submit(TENANT, "count", json!({"i": i}), Some(&key), 0).await.unwrap_or_else(|e| panic!("{key}: {e}"));
        let id = v["id"].as_str().unwrap_or_default().to_string();
        match present.get(&key) {
            Some(before) => assert_eq!((status, &id), (200, before), "{key} must attach to what the kill left"),
            None => assert_eq!(status, 201, "{key} was never recorded: admitted now"),
        }
        ids.insert(id);
    }
    assert_eq!(ids.len(), CALLS);
    assert_eq!(settled(&gw).await.len(), CALLS);
}

/// Each scenario on each database.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::$name(super::Db::Postgres).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name(super::Db::Sqlite).await;
            }
        }
    )*};
}

on_both!(
    kill_before_dispatch,
    kill_during_the_upstream_call,
    kill_after_the_upstream_replied_before_the_outcome_committed,
    kill_while_commits_are_shared,
);

/// Two replicas share one PostgreSQL. Replica A admits calls and dies before dispatching them;
/// replica B, still running, takes their leases over and completes each exactly once. Calls
/// submitted to B meanwhile are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_surviving_replica_recovers_a_dead_replicas_invocations() {
    let s = scenario(Db::Postgres).await;
    let mut b_opts = s.opts.clone();
    b_opts.data_dir = s.opts.data_dir.with_file_name("replica-b");
    let b = Gateway::start(b_opts.clone());
    let mut a = Gateway::start(with_fault(&s.opts, "before_dispatch"));
    let mut from_a = Vec::new();
    for i in 0..40 {
        let key = format!("a-{i}");
        let (status, v) = a.submit(TENANT, "count", json!({"i": i}), Some(&key), 0).await.unwrap();
        assert_eq!(status, 201);
        from_a.push(v["id"].as_str().unwrap_or_default().to_string());
    }
    let (status, v) = b.submit(TENANT, "count", json!({"b": 1}), Some("b-1"), 5000).await.unwrap();
    assert_eq!((status, v["state"]["state"].as_str()), (201, Some("succeeded")));
    a.kill9();
    let all = settled(&b).await;
    assert_eq!(all.len(), 41);
    assert!(all.iter().all(|i| i["state"]["state"] == "succeeded"), "B completed everything A left behind");
    for id in &from_a {
        let inv = all.iter().find(|i| i["id"] == *id.as_str()).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(inv["lease"]["fence"], 2, "taken over once, with a new fence");
    }
    // A never dispatched; B's call log holds exactly one call per invocation.
    assert!(call_log(&s.opts.data_dir).is_empty());
    let log = call_log(&b_opts.data_dir);
    assert_eq!(log.len(), 41);
    assert_eq!(log.iter().map(|(inv, _)| inv).collect::<HashSet<_>>().len(), 41);
}
