//! The task store contract (`TaskStore` and `PushOutbox`, the A2A face's durable tasks): every
//! test runs against SQLite, a throw-away PostgreSQL database and the contract's in-memory port,
//! through the ports only.

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_contract::{
    InvocationId, NewDelivery, PushOutbox, RunCursor, TaskId, TaskQuery, TaskRecord, TaskScope, TaskStateName,
    TaskStore,
};
use switchyard_store::StoreOptions;

type Ports = (Arc<dyn TaskStore>, Arc<dyn PushOutbox>);

async fn sqlite() -> (Ports, Option<tempfile::TempDir>) {
    let (dir, url) = switchyard_tests::sqlite_url();
    let s = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    ((s.tasks, s.outbox), Some(dir))
}

async fn postgres() -> (Ports, Option<tempfile::TempDir>) {
    let url = switchyard_tests::pg::database().await;
    let s = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    ((s.tasks, s.outbox), None)
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let ((s, o), _d) = super::sqlite().await;
                super::$name(s, o).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let ((s, o), _d) = super::postgres().await;
                super::$name(s, o).await;
            }
            /// The contract's in-memory port, which the faces' in-process tests run on.
            #[tokio::test]
            async fn memory() {
                let m = std::sync::Arc::new(switchyard_contract::memory::MemoryTasks::default());
                super::$name(m.clone(), m).await;
            }
        }
    )*};
}

contract!(
    create_is_once_and_reads_are_scoped,
    updates_are_compare_and_set_with_gapless_events,
    list_is_newest_first_keyset_paginated_and_filtered,
    push_configs_and_the_outbox,
    racing_creates_and_chained_updates_apply_once_each,
);

/// Alice's scope from its stored form (`<tenant>/<space>`).
fn scope(key: &str) -> TaskScope {
    TaskScope::stored(key, "alice").unwrap_or_else(|e| panic!("{e}"))
}

fn state_of(stored: &str) -> TaskStateName {
    TaskStateName::parse(stored).unwrap_or_else(|| panic!("{stored} is not a task state"))
}

fn tid(id: &str) -> TaskId {
    TaskId::from(id)
}

fn task(id: &str, scope: &str, ctx: &str, state: &str, status_ms: i64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        scope: self::scope(scope),
        agent: "tck".into(),
        context_id: ctx.into(),
        state: state_of(state),
        status_ms,
        version: 1,
        run_cursor: None,
        body: json!({"id": id, "state": state}),
    }
}

async fn create_is_once_and_reads_are_scoped(s: Arc<dyn TaskStore>, _: Arc<dyn PushOutbox>) {
    let t = task("t1", "red/", "c1", "TASK_STATE_SUBMITTED", 10);
    assert!(s.create(&t, &[json!({"task": "created"})]).await.unwrap_or_else(|e| panic!("{e}")));
    let again = task("t1", "red/", "other", "TASK_STATE_WORKING", 11);
    assert!(!s.create(&again, &[json!({"x": 1})]).await.unwrap_or_else(|e| panic!("{e}")), "an existing id is kept");
    assert_eq!(s.get(&scope("red/"), &tid("t1")).await.unwrap_or_else(|e| panic!("{e}")), Some(t));
    assert_eq!(
        s.get(&scope("blue/"), &tid("t1")).await.unwrap_or_else(|e| panic!("{e}")),
        None,
        "another scope sees nothing"
    );
    // Another subject of the tenant sees nothing either; a tenant-wide reader sees the task.
    let tenant = switchyard_contract::TenantId::new("red").unwrap_or_else(|e| panic!("{e}"));
    let bob = switchyard_contract::Principal::new(tenant, "bob");
    let mine = s.get(&TaskScope::of(&bob, ""), &tid("t1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(mine, None, "another subject's task is not bob's");
    let all = s.get(&TaskScope::tenant_wide(&bob, ""), &tid("t1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.map(|r| r.scope.owner().to_string()), Some("alice".to_string()), "tasks:admin reads it");
    for (reader, expected) in [(TaskScope::of(&bob, ""), 0), (TaskScope::tenant_wide(&bob, ""), 1)] {
        let q = TaskQuery {
            scope: reader,
            agent: "tck".into(),
            context_id: None,
            state: None,
            status_after_ms: None,
            after: None,
            limit: 10,
        };
        let (page, total) = s.list(&q).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((page.len(), total), (expected, i64::try_from(expected).unwrap_or(0)));
    }
    let events = s.events_after(&tid("t1"), 0, 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events, vec![(1, json!({"task": "created"}))]);
}

async fn updates_are_compare_and_set_with_gapless_events(s: Arc<dyn TaskStore>, _: Arc<dyn PushOutbox>) {
    let t = task("t2", "red/", "c", "TASK_STATE_SUBMITTED", 10);
    assert!(s.create(&t, &[json!(1)]).await.unwrap_or_else(|e| panic!("{e}")));
    let next = TaskRecord {
        state: TaskStateName::Working,
        version: 3,
        run_cursor: Some(RunCursor { invocation: InvocationId::new(), step: 1 }),
        ..t.clone()
    };
    assert!(s.update(&next, 1, &[json!(2), json!(3)], &[]).await.unwrap_or_else(|e| panic!("{e}")));
    let stale = TaskRecord { state: TaskStateName::Failed, version: 2, ..t.clone() };
    assert!(
        !s.update(&stale, 1, &[json!("lost")], &[]).await.unwrap_or_else(|e| panic!("{e}")),
        "a stale version writes nothing"
    );
    assert_eq!(s.get(&scope("red/"), &tid("t2")).await.unwrap_or_else(|e| panic!("{e}")), Some(next));
    let all: Vec<Value> =
        s.events_after(&tid("t2"), 0, 10).await.unwrap_or_else(|e| panic!("{e}")).into_iter().map(|(_, v)| v).collect();
    assert_eq!(all, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(s.events_after(&tid("t2"), 2, 10).await.unwrap_or_else(|e| panic!("{e}")), vec![(3, json!(3))]);
    // Concurrent writers at one version: exactly one wins.
    let cur =
        s.get(&scope("red/"), &tid("t2")).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("gone"));
    let mut joins = Vec::new();
    for i in 0..8 {
        let (s, cur) = (s.clone(), cur.clone());
        joins.push(tokio::spawn(async move {
            let mine = TaskRecord { version: cur.version + 1, body: json!({"writer": i}), ..cur.clone() };
            s.update(&mine, cur.version, &[json!({"writer": i})], &[]).await.unwrap_or_else(|e| panic!("{e}"))
        }));
    }
    let mut wins = 0;
    for j in joins {
        wins += usize::from(j.await.unwrap_or_else(|e| panic!("{e}")));
    }
    assert_eq!(wins, 1);
    assert_eq!(s.events_after(&tid("t2"), 3, 10).await.unwrap_or_else(|e| panic!("{e}")).len(), 1);
    // The sweep's read: the version of each task that exists, in one statement.
    let mut versions = s.versions(&[tid("t2"), tid("nope"), tid("t2")]).await.unwrap_or_else(|e| panic!("{e}"));
    versions.dedup();
    assert_eq!(versions, vec![(tid("t2"), 4)]);
    let many: Vec<TaskId> = (0..1200).map(|i| tid(&format!("x{i}"))).chain([tid("t2")]).collect();
    assert_eq!(
        s.versions(&many).await.unwrap_or_else(|e| panic!("{e}")),
        vec![(tid("t2"), 4)],
        "past one chunk of 500"
    );
}

async fn list_is_newest_first_keyset_paginated_and_filtered(s: Arc<dyn TaskStore>, _: Arc<dyn PushOutbox>) {
    for (i, (ctx, state)) in [
        ("a", "TASK_STATE_COMPLETED"),
        ("b", "TASK_STATE_WORKING"),
        ("a", "TASK_STATE_WORKING"),
        ("a", "TASK_STATE_COMPLETED"),
        ("b", "TASK_STATE_COMPLETED"),
    ]
    .into_iter()
    .enumerate()
    {
        let ms = 100 + i64::try_from(i).unwrap_or(0) * 10;
        assert!(
            s.create(&task(&format!("l{i}"), "red/", ctx, state, ms), &[json!(0)])
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        );
    }
    assert!(
        s.create(&task("other", "blue/", "a", "TASK_STATE_COMPLETED", 500), &[json!(0)])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let base = TaskQuery {
        scope: scope("red/"),
        agent: "tck".into(),
        context_id: None,
        state: None,
        status_after_ms: None,
        after: None,
        limit: 2,
    };
    let mut seen = Vec::new();
    let mut q = base.clone();
    loop {
        let (page, total) = s.list(&q).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(total, 5, "total ignores the cursor");
        if page.is_empty() {
            break;
        }
        q.after = page.last().map(|t| (t.status_ms, t.id.clone()));
        seen.extend(page.into_iter().map(|t| t.id));
    }
    assert_eq!(seen, ["l4", "l3", "l2", "l1", "l0"], "newest status first, each once");
    let (ctx_a, n) = s
        .list(&TaskQuery { context_id: Some("a".into()), limit: 10, ..base.clone() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((ctx_a.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), n), (vec!["l3", "l2", "l0"], 3));
    let (working, _) = s
        .list(&TaskQuery { state: Some(TaskStateName::Working), status_after_ms: Some(115), limit: 10, ..base.clone() })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(working.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["l2"]);
}

async fn push_configs_and_the_outbox(s: Arc<dyn TaskStore>, o: Arc<dyn PushOutbox>) {
    let t = task("p1", "red/", "c", "TASK_STATE_WORKING", 10);
    assert!(s.create(&t, &[json!(0)]).await.unwrap_or_else(|e| panic!("{e}")));
    s.put_push_config(&tid("p1"), "cfg-1", &json!({"url": "https://a"})).await.unwrap_or_else(|e| panic!("{e}"));
    s.put_push_config(&tid("p1"), "cfg-1", &json!({"url": "https://b"})).await.unwrap_or_else(|e| panic!("{e}"));
    s.put_push_config(&tid("p1"), "cfg-2", &json!({"url": "https://c"})).await.unwrap_or_else(|e| panic!("{e}"));
    let configs = s.push_configs(&tid("p1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        configs,
        vec![("cfg-1".into(), json!({"url": "https://b"})), ("cfg-2".into(), json!({"url": "https://c"}))]
    );
    assert!(s.delete_push_config(&tid("p1"), "cfg-2").await.unwrap_or_else(|e| panic!("{e}")));
    assert!(
        !s.delete_push_config(&tid("p1"), "cfg-2").await.unwrap_or_else(|e| panic!("{e}")),
        "deleting twice is a no-op"
    );

    // Deliveries are queued with the event, in the same transaction.
    let d = NewDelivery {
        config_id: "cfg-1".into(),
        config: json!({"url": "https://b"}),
        payload: json!({"statusUpdate": 1}),
    };
    let next = TaskRecord { version: 2, ..t.clone() };
    assert!(s.update(&next, 1, &[json!({"statusUpdate": 1})], &[d]).await.unwrap_or_else(|e| panic!("{e}")));
    let later = NewDelivery {
        config_id: "cfg-1".into(),
        config: json!({"url": "https://b"}),
        payload: json!({"statusUpdate": 2}),
    };
    let after = TaskRecord { version: 3, ..t.clone() };
    assert!(s.update(&after, 2, &[json!({"statusUpdate": 2})], &[later]).await.unwrap_or_else(|e| panic!("{e}")));
    let ok =
        |r: Result<Vec<switchyard_contract::Delivery>, switchyard_contract::Error>| r.unwrap_or_else(|e| panic!("{e}"));
    let pending = || async { o.pending_deliveries().await.unwrap_or_else(|e| panic!("{e}")) };
    assert_eq!(pending().await, 2, "both deliveries wait");
    let due = ok(o.claim_deliveries(150, 10).await);
    assert_eq!(due.len(), 1, "one webhook's deliveries go one at a time, in order");
    assert!(ok(o.claim_deliveries(150, 10).await).is_empty(), "claimed");
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    let lapsed = ok(o.claim_deliveries(150, 10).await);
    assert_eq!(lapsed.iter().map(|d| d.id).collect::<Vec<_>>(), vec![due[0].id], "an unfinished claim falls due again");
    assert_eq!((due[0].task_id.as_str(), due[0].attempts, &due[0].payload), ("p1", 0, &json!({"statusUpdate": 1})));
    o.retry_delivery(due[0].id, 300, "503").await.unwrap_or_else(|e| panic!("{e}"));
    assert!(ok(o.claim_deliveries(150, 10).await).is_empty(), "not due before its retry time");
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let retry = ok(o.claim_deliveries(150, 10).await);
    assert_eq!(retry[0].attempts, 1);
    assert_eq!(pending().await, 2, "a retried delivery still waits");
    o.finish_delivery(retry[0].id, None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pending().await, 1);
    let next = ok(o.claim_deliveries(150, 10).await);
    assert_eq!(
        next.iter().map(|d| d.payload.clone()).collect::<Vec<_>>(),
        vec![json!({"statusUpdate": 2})],
        "then the next one"
    );
    o.finish_delivery(next[0].id, None).await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    assert!(ok(o.claim_deliveries(150, 10).await).is_empty(), "delivered is done");
    assert_eq!(pending().await, 0);
}

/// Writes racing on one task (on SQLite they share a commit): of the creates of one id exactly
/// one applies, with its own events alone; updates chained on the versions they read each apply
/// once, numbering their events on without a gap.
async fn racing_creates_and_chained_updates_apply_once_each(s: Arc<dyn TaskStore>, _: Arc<dyn PushOutbox>) {
    let mut joins = Vec::new();
    for i in 0..16 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            let mine =
                TaskRecord { body: json!({"creator": i}), ..task("race", "red/", "c", "TASK_STATE_SUBMITTED", 5) };
            let won = s.create(&mine, &[json!({"creator": i})]).await.unwrap_or_else(|e| panic!("{e}"));
            (i, won)
        }));
    }
    let mut winners = Vec::new();
    for j in joins {
        let (i, won) = j.await.unwrap_or_else(|e| panic!("{e}"));
        if won {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one create of an id applies: {winners:?}");
    let kept =
        s.get(&scope("red/"), &tid("race")).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("gone"));
    assert_eq!(kept.body, json!({"creator": winners[0]}));
    let events = s.events_after(&tid("race"), 0, 10).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events, vec![(1, json!({"creator": winners[0]}))], "the losers' events were not written");
    // Updates each at the version the one before leaves, sent without waiting: in order, each
    // applies; one at a version already passed does not.
    let mut joins = Vec::new();
    for v in 1..=6 {
        let (s, base) = (s.clone(), kept.clone());
        let next = TaskRecord { version: v + 1, body: json!({"v": v + 1}), ..base };
        joins.push(tokio::spawn(async move {
            // Each waits for the one before to be visible, so the chain is ordered but the
            // writes still arrive close together.
            loop {
                let cur = s.get(&scope("red/"), &tid("race")).await.unwrap_or_else(|e| panic!("{e}"));
                if cur.is_some_and(|c| c.version >= v) {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let applied = s.update(&next, v, &[json!({"v": v + 1})], &[]).await.unwrap_or_else(|e| panic!("{e}"));
            let stale = s.update(&next, v, &[json!("stale")], &[]).await.unwrap_or_else(|e| panic!("{e}"));
            (applied, stale)
        }));
    }
    for j in joins {
        assert_eq!(j.await.unwrap_or_else(|e| panic!("{e}")), (true, false));
    }
    let events = s.events_after(&tid("race"), 1, 10).await.unwrap_or_else(|e| panic!("{e}"));
    let seqs: Vec<i64> = events.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, (2..=7).collect::<Vec<_>>());
    assert!(events.iter().all(|(seq, e)| *e == json!({"v": seq})), "{events:?}");
}

/// The fenced create (a proxied send's marker), on both databases: it writes only while the
/// named attempt is its invocation's current one with a live lease — never for another attempt,
/// never once the lease has ended — and never over an existing id.
async fn fenced_create_takes_the_attempts_lease(url: &str) {
    use switchyard_contract::{AttemptId, EffectClass, NewInvocation, Principal, RequestDigest, Target, TenantId};
    let s = switchyard_store::connect(url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    let worker = switchyard_contract::WorkerId::new();
    let attempt = AttemptId::new();
    let draft = NewInvocation {
        id: InvocationId::new(),
        principal: Principal::new(TenantId::new("acme").unwrap_or_else(|e| panic!("{e}")), "alice"),
        target: Target {
            upstream: "a2a-agent-internal".into(),
            operation: "SendMessage".into(),
            effect: EffectClass::Write,
        },
        request: json!({}),
        digest: RequestDigest::compute("a2a-agent-internal", "SendMessage", &json!({}))
            .unwrap_or_else(|e| panic!("{e}")),
        ingress_key: None,
        parent: None,
        trace: None,
        worker,
        lease_ttl_ms: 60_000,
        hold: None,
        first_attempt: Some(attempt),
        proves_unsent: true,
        audit: None,
    };
    let run = draft.id;
    s.invocations.admit(draft).await.unwrap_or_else(|e| panic!("{e}"));
    let marker = |id: &str| task(id, "acme/", "c", "TASK_STATE_SUBMITTED", 1);
    let events = [json!({"task": {}})];
    let tasks = s.tasks.clone();
    let fenced = async |id: &str, attempt: AttemptId| {
        tasks.create_fenced(&marker(id), &events, run, attempt).await.unwrap_or_else(|e| panic!("{e}"))
    };
    assert!(fenced("m1", attempt).await, "the current attempt, its lease live: written");
    assert!(!fenced("m1", attempt).await, "an existing id: not written");
    assert!(!fenced("m2", AttemptId::new()).await, "another attempt: not written");
    s.invocations.release_leases(worker).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!fenced("m3", attempt).await, "the lease ended: not written");
    let scope = self::scope("acme/");
    assert!(s.tasks.get(&scope, &tid("m2")).await.ok().flatten().is_none());
    assert!(s.tasks.get(&scope, &tid("m3")).await.ok().flatten().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_create_sqlite() {
    let (_dir, url) = switchyard_tests::sqlite_url();
    fenced_create_takes_the_attempts_lease(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_create_postgres() {
    fenced_create_takes_the_attempts_lease(&switchyard_tests::pg::database().await).await;
}
