//! The store contract suite: every test runs against SQLite and against a throw-away
//! PostgreSQL cluster, through the `InvocationStore` port only.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;
use switchyard_contract::state::NewInvocation;
use switchyard_contract::{
    Admission, AttemptId, EffectClass, Error, EventKind, IngressKey, InvocationId, InvocationState, InvocationStore,
    ListQuery, Principal, RequestDigest, StateName, Target, TenantId, TraceParent, WorkerId,
};
use switchyard_store::StoreOptions;

struct Backend {
    store: Arc<dyn InvocationStore>,
    _dir: Option<tempfile::TempDir>,
}

async fn sqlite() -> Backend {
    let (dir, url) = switchyard_tests::sqlite_url();
    let store =
        switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}")).invocations;
    Backend { store, _dir: Some(dir) }
}

async fn postgres() -> Backend {
    let url = switchyard_tests::pg::database().await;
    let store =
        switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}")).invocations;
    Backend { store, _dir: None }
}

/// Generates `mod name { sqlite, postgres }` running `name(store)` on each backend.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let b = super::sqlite().await;
                super::$name(b.store.clone()).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let b = super::postgres().await;
                super::$name(b.store.clone()).await;
            }
        }
    )*};
}

contract!(
    admit_commits_the_invocation_and_its_first_event,
    ingress_key_returns_the_existing_invocation,
    concurrent_admissions_with_one_key_create_one_invocation,
    transitions_append_gapless_events_and_errors_change_nothing,
    concurrent_transitions_are_serialized,
    terminal_rows_are_immutable_in_the_database,
    list_pages_newest_first_with_filters,
    expired_leases_are_taken_once_with_a_higher_fence,
    released_leases_are_recoverable_at_once,
    tenants_do_not_see_each_other,
    held_transitions_apply_only_to_the_current_record,
    a_failed_change_among_concurrent_ones_is_undone_alone,
    a_read_commits_its_first_attempt_with_its_admission,
    unknown_invocations_are_counted_per_upstream,
    a_bad_row_among_concurrent_admissions_and_held_changes_fails_alone,
);

fn tenant(t: &str) -> TenantId {
    TenantId::new(t).unwrap_or_else(|e| panic!("{e}"))
}

fn draft(t: &str, key: Option<&str>, request: serde_json::Value, ttl_ms: i64) -> NewInvocation {
    let digest = RequestDigest::compute("demo", "count", &request).unwrap_or_else(|e| panic!("{e}"));
    NewInvocation {
        id: InvocationId::new(),
        principal: Principal::new(tenant(t), "tester"),
        target: Target { upstream: "demo".into(), operation: "count".into(), effect: EffectClass::Write },
        request,
        digest,
        ingress_key: key.map(|k| IngressKey::new(k).unwrap_or_else(|e| panic!("{e}"))),
        worker: WorkerId::new(),
        lease_ttl_ms: ttl_ms,
        hold: None,
        parent: None,
        trace: None,
        first_attempt: None,
        proves_unsent: false,
        audit: None,
    }
}

async fn created(store: &Arc<dyn InvocationStore>, d: NewInvocation) -> switchyard_contract::Invocation {
    match store.admit(d).await {
        Ok(Admission::Created(inv)) => inv,
        other => panic!("expected a new invocation, got {other:?}"),
    }
}

async fn admit_commits_the_invocation_and_its_first_event(store: Arc<dyn InvocationStore>) {
    let inv = created(&store, draft("a", None, json!({"x": [1, 2.5, "s"]}), 30_000)).await;
    let stored = store.get(None, inv.id).await.ok().flatten();
    assert_eq!(stored.as_ref(), Some(&inv), "what admit returns is what is stored");
    assert_eq!(inv.state, InvocationState::Admitted);
    assert_eq!(inv.last_seq, 1);
    let events = store.events(inv.id, 0, 10).await.unwrap_or_default();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].seq, 1);
    assert!(matches!(events[0].kind, EventKind::Admitted { .. }));
    let now = store.now().await.unwrap_or_default();
    assert!(inv.lease.expires_at_ms.is_some_and(|t| t > now && t <= now + 30_000));
    // The caller's trace context is kept with the call (a driver that takes it up later
    // continues the caller's trace).
    let context = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Some("k=v"));
    let mut traced = draft("a", None, json!({}), 30_000);
    traced.trace = context.clone();
    let inv = created(&store, traced).await;
    assert_eq!(store.get(None, inv.id).await.ok().flatten().and_then(|i| i.trace), context);
    assert_eq!(inv.trace, context);
}

async fn ingress_key_returns_the_existing_invocation(store: Arc<dyn InvocationStore>) {
    let first = created(&store, draft("a", Some("k1"), json!({"n": 1}), 30_000)).await;
    match store.admit(draft("a", Some("k1"), json!({"n": 2}), 30_000)).await {
        Ok(Admission::Existing(inv)) => assert_eq!(inv.id, first.id),
        other => panic!("expected the existing invocation, got {other:?}"),
    }
    // The same key in another tenant is another invocation.
    let other = created(&store, draft("b", Some("k1"), json!({"n": 1}), 30_000)).await;
    assert_ne!(other.id, first.id);
    assert_eq!(store.events(first.id, 0, 10).await.map(|e| e.len()).ok(), Some(1), "no event for the duplicate");
    // Found by its key, in its tenant only.
    let key = |k: &str| IngressKey::new(k).unwrap_or_else(|e| panic!("{e}"));
    let tenant = |t: &str| TenantId::new(t).unwrap_or_else(|e| panic!("{e}"));
    let found = store.by_key(&tenant("a"), &key("k1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.map(|i| i.id), Some(first.id));
    let found = store.by_key(&tenant("b"), &key("k1")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.map(|i| i.id), Some(other.id));
    assert!(store.by_key(&tenant("c"), &key("k1")).await.is_ok_and(|f| f.is_none()), "another tenant's key is absent");
    assert!(store.by_key(&tenant("a"), &key("k2")).await.is_ok_and(|f| f.is_none()));
}

async fn concurrent_admissions_with_one_key_create_one_invocation(store: Arc<dyn InvocationStore>) {
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = store.clone();
            tokio::spawn(async move { s.admit(draft("a", Some("race"), json!({}), 30_000)).await })
        })
        .collect();
    let mut ids = HashSet::new();
    let mut creations = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(Admission::Created(inv))) => {
                creations += 1;
                ids.insert(inv.id);
            }
            Ok(Ok(Admission::Existing(inv))) => {
                ids.insert(inv.id);
            }
            other => panic!("admission failed: {other:?}"),
        }
    }
    assert_eq!(creations, 1);
    assert_eq!(ids.len(), 1);
}

async fn transitions_append_gapless_events_and_errors_change_nothing(store: Arc<dyn InvocationStore>) {
    let d = draft("a", None, json!({}), 30_000);
    let worker = d.worker;
    let inv = created(&store, d).await;
    let fence = inv.lease.fence;
    let (after, events) = store
        .transition(inv.id, Box::new(move |i, now| i.begin_attempt(worker, fence, now, 30_000)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.state.name(), StateName::Dispatching);
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
    assert_eq!(store.get(None, inv.id).await.ok().flatten().as_ref(), Some(&after));

    let refused = store
        .transition(
            inv.id,
            Box::new(|i, _| {
                i.attempts = 99;
                Err(Error::conflict("no"))
            }),
        )
        .await;
    assert!(refused.is_err());
    assert_eq!(store.get(None, inv.id).await.ok().flatten(), Some(after), "a failed transition changes nothing");
    let missing = store.transition(InvocationId::new(), Box::new(|_, _| Ok(Vec::new()))).await;
    assert_eq!(missing.err().map(|e| e.kind()), Some(switchyard_contract::ErrorKind::NotFound));
}

async fn concurrent_transitions_are_serialized(store: Arc<dyn InvocationStore>) {
    let d = draft("a", None, json!({}), 30_000);
    let inv = created(&store, d).await;
    let principal = inv.principal.clone();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (s, p) = (store.clone(), principal.clone());
            tokio::spawn(async move {
                s.transition(inv.id, Box::new(move |_, _| Ok(vec![EventKind::CancelRequested { by: p.clone() }]))).await
            })
        })
        .collect();
    for t in tasks {
        assert!(matches!(t.await, Ok(Ok(_))));
    }
    let events = store.events(inv.id, 0, 100).await.unwrap_or_default();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=21).collect::<Vec<u64>>());
    let tail = store.events(inv.id, 19, 100).await.unwrap_or_default();
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![20, 21]);
    assert_eq!(store.events(inv.id, 0, 5).await.map(|e| e.len()).ok(), Some(5));
}

/// Many changes at once (on SQLite they share commits): one whose row update succeeds and whose
/// event append then fails is undone entirely and answered with an error; every neighbour commits.
async fn a_failed_change_among_concurrent_ones_is_undone_alone(store: Arc<dyn InvocationStore>) {
    let mut invs = Vec::new();
    for _ in 0..8 {
        invs.push(created(&store, draft("a", None, json!({}), 30_000)).await);
    }
    let victim = invs[0].clone();
    let by = victim.principal.clone();
    let mut tasks = Vec::new();
    for round in 0..8 {
        for inv in &invs {
            let (s, p, id) = (store.clone(), by.clone(), inv.id);
            // In round 3 the first invocation gets a change that rewinds its sequence: the row
            // update goes through, the event append collides with event 1 and fails.
            let bad = round == 3 && id == victim.id;
            tasks.push(tokio::spawn(async move {
                let outcome = s
                    .transition(
                        id,
                        Box::new(move |i, _| {
                            if bad {
                                i.last_seq = 0;
                            }
                            Ok(vec![EventKind::CancelRequested { by: p.clone() }])
                        }),
                    )
                    .await;
                (bad, outcome.map(drop))
            }));
        }
        // And admissions in between, so batches mix both kinds.
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            (false, s.admit(draft("a", None, json!({"round": round}), 30_000)).await.map(drop))
        }));
    }
    let mut failed = 0;
    for t in tasks {
        let (bad, outcome) = t.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.is_err(), bad, "only the bad change fails: {:?}", outcome.err());
        failed += usize::from(bad);
    }
    assert_eq!(failed, 1);
    for inv in &invs {
        let row = store.get(None, inv.id).await.ok().flatten().unwrap_or_else(|| panic!("row"));
        let events = store.events(inv.id, 0, 100).await.unwrap_or_default();
        let expected = if inv.id == victim.id { 8 } else { 9 };
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=expected).collect::<Vec<u64>>());
        assert_eq!(row.last_seq, expected, "the row agrees with its events");
    }
    assert_eq!(store.list(&tenant("a"), &ListQuery::default()).await.map(|p| p.items.len()).ok(), Some(16));
}

/// Admissions and held-lease changes of many calls at once (they share statements on
/// PostgreSQL and commits on SQLite), one of them an admission the database refuses (its id is
/// taken): that one fails alone, every other is written with its events, and what each caller
/// was answered is what is stored.
async fn a_bad_row_among_concurrent_admissions_and_held_changes_fails_alone(store: Arc<dyn InvocationStore>) {
    let mut admitted = Vec::new();
    for _ in 0..12 {
        admitted.push(created(&store, draft("a", None, json!({}), 30_000)).await);
    }
    let mut duplicate = draft("a", None, json!({"again": true}), 30_000);
    duplicate.id = admitted[0].id;
    let mut held = Vec::new();
    for inv in admitted.clone() {
        let s = store.clone();
        held.push(tokio::spawn(async move {
            let (worker, fence) = (inv.lease.owner.unwrap_or_else(WorkerId::new), inv.lease.fence);
            s.transition_held(&inv, Box::new(move |i, now| i.begin_attempt(worker, fence, now, 30_000))).await
        }));
    }
    let mut fresh = Vec::new();
    for n in 0..12 {
        let s = store.clone();
        fresh.push(tokio::spawn(
            async move { s.admit(draft("a", Some(&format!("k-{n}")), json!({"n": n}), 30_000)).await },
        ));
    }
    let s = store.clone();
    let bad = tokio::spawn(async move { s.admit(duplicate).await });
    assert!(bad.await.unwrap_or_else(|e| panic!("{e}")).is_err(), "a taken id is refused");
    for t in held {
        let (inv, events) = t.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inv.state.name(), StateName::Dispatching);
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
        assert_eq!(store.get(None, inv.id).await.ok().flatten().as_ref(), Some(&inv), "answered as stored");
        let stored = store.events(inv.id, 0, 100).await.unwrap_or_default();
        assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);
    }
    for t in fresh {
        let inv = match t.await.unwrap_or_else(|e| panic!("{e}")) {
            Ok(Admission::Created(inv)) => inv,
            other => panic!("expected a new invocation, got {other:?}"),
        };
        assert_eq!(store.get(None, inv.id).await.ok().flatten().as_ref(), Some(&inv), "answered as stored");
        assert_eq!(store.events(inv.id, 0, 100).await.map(|e| e.len()).ok(), Some(1));
    }
    let first = store.get(None, admitted[0].id).await.ok().flatten().unwrap_or_else(|| panic!("row"));
    assert_eq!(first.request, json!({}), "the refused admission changed nothing");
    assert_eq!(store.list(&tenant("a"), &ListQuery::default()).await.map(|p| p.items.len()).ok(), Some(24));
}

/// A `read_only` call that asks for it is admitted with its first attempt recorded, in the same
/// commit, under the attempt id it chose; a write never is (its attempt commits on its own,
/// after the admission).
async fn a_read_commits_its_first_attempt_with_its_admission(store: Arc<dyn InvocationStore>) {
    let mut read = draft("a", Some("r-1"), json!({"q": 1}), 30_000);
    read.target.effect = EffectClass::ReadOnly;
    let attempt = AttemptId::new();
    read.first_attempt = Some(attempt);
    read.trace = TraceParent::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Some("k=v"));
    let inv = created(&store, read.clone()).await;
    assert!(
        matches!(inv.state, InvocationState::Dispatching { attempt: a, attempt_no: 1, .. } if a == attempt),
        "{:?}",
        inv.state
    );
    assert_eq!((inv.attempts, inv.last_seq), (1, 2));
    let stored = store.get(None, inv.id).await.ok().flatten();
    assert_eq!(stored.as_ref(), Some(&inv), "what the store answered is what it committed");
    let kinds: Vec<_> =
        store.events(inv.id, 0, 10).await.unwrap_or_default().into_iter().map(|e| (e.seq, e.kind.name())).collect();
    assert_eq!(kinds, vec![(1, "admitted"), (2, "dispatch_started")]);
    // The same key again attaches to it, attempt and all.
    let again = store.admit(read).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(again, Admission::Existing(ref i) if i.id == inv.id && i.attempts == 1));

    let mut write = draft("a", None, json!({"w": 1}), 30_000);
    write.first_attempt = Some(AttemptId::new());
    let inv = created(&store, write).await;
    assert_eq!((inv.state.name(), inv.attempts, inv.last_seq), (StateName::Admitted, 0, 1));
}

async fn terminal_rows_are_immutable_in_the_database(store: Arc<dyn InvocationStore>) {
    let inv = created(&store, draft("a", None, json!({}), 30_000)).await;
    let by = inv.principal.clone();
    store
        .transition(inv.id, Box::new(move |i, now| i.request_cancel(by.clone(), now)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A buggy transition that rewrites a terminal state is refused by the database itself.
    let rewrite = store
        .transition(
            inv.id,
            Box::new(|i, _| {
                i.state = InvocationState::Admitted;
                Ok(Vec::new())
            }),
        )
        .await;
    assert_eq!(rewrite.err().map(|e| e.kind()), Some(switchyard_contract::ErrorKind::Conflict));
    let now = store.get(None, inv.id).await.ok().flatten().map(|i| i.state.name());
    assert_eq!(now, Some(StateName::Canceled));
}

async fn list_pages_newest_first_with_filters(store: Arc<dyn InvocationStore>) {
    let mut ids = Vec::new();
    for n in 0..7 {
        ids.push(created(&store, draft("lister", None, json!({ "n": n }), 30_000)).await.id);
    }
    let by = Principal::new(tenant("lister"), "x");
    store
        .transition(ids[0], Box::new(move |i, now| i.request_cancel(by.clone(), now)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let t = tenant("lister");
    let mut seen = Vec::new();
    let mut q = ListQuery { limit: Some(3), ..ListQuery::default() };
    let mut pages = 0;
    loop {
        let page = store.list(&t, &q).await.unwrap_or_else(|e| panic!("{e}"));
        pages += 1;
        seen.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let canceled = store.list(&t, &ListQuery { state: Some(StateName::Canceled), ..ListQuery::default() }).await;
    assert_eq!(canceled.map(|p| p.items.iter().map(|i| i.id).collect::<Vec<_>>()).ok(), Some(vec![ids[0]]));
    // By upstream, alone and with a state.
    let mut elsewhere = draft("lister", None, json!({"n": "other"}), 30_000);
    elsewhere.target.upstream = "other".into();
    let other = created(&store, elsewhere).await.id;
    let by_upstream = |upstream: &str, state: Option<StateName>| {
        let q = ListQuery { upstreams: vec![upstream.into()], state, ..ListQuery::default() };
        let (store, t) = (store.clone(), t.clone());
        async move { store.list(&t, &q).await.map(|p| p.items.iter().map(|i| i.id).collect::<Vec<_>>()).ok() }
    };
    assert_eq!(by_upstream("other", None).await, Some(vec![other]));
    assert_eq!(by_upstream("demo", None).await.map(|v| v.len()), Some(7));
    assert_eq!(by_upstream("other", Some(StateName::Canceled)).await, Some(vec![]));
    assert_eq!(by_upstream("nowhere", None).await, Some(vec![]));
    let both = ListQuery { upstreams: vec!["other".into(), "demo".into()], ..ListQuery::default() };
    assert_eq!(store.list(&t, &both).await.map(|p| p.items.len()).ok(), Some(8), "either of two upstreams");
    let bad = store.list(&t, &ListQuery { cursor: Some("garbage".into()), ..ListQuery::default() }).await;
    assert!(bad.is_err());
    let too_big = store.list(&t, &ListQuery { limit: Some(501), ..ListQuery::default() }).await;
    assert!(too_big.is_err());
}

async fn expired_leases_are_taken_once_with_a_higher_fence(store: Arc<dyn InvocationStore>) {
    let live = created(&store, draft("a", None, json!({}), 60_000)).await;
    let mut expiring = Vec::new();
    for _ in 0..6 {
        expiring.push(created(&store, draft("a", None, json!({}), 1)).await);
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (w1, w2) = (WorkerId::new(), WorkerId::new());
    let (a, b) = tokio::join!(store.acquire_expired(w1, 30_000, 4), store.acquire_expired(w2, 30_000, 4));
    let (a, b) = (a.unwrap_or_else(|e| panic!("{e}")), b.unwrap_or_else(|e| panic!("{e}")));
    let taken: HashSet<_> = a.iter().chain(b.iter()).map(|i| i.id).collect();
    assert_eq!(a.len() + b.len(), 6, "every expired lease is taken, none twice");
    assert_eq!(taken, expiring.iter().map(|i| i.id).collect());
    assert!(!taken.contains(&live.id), "a live lease is not taken");
    for inv in a.iter().chain(b.iter()) {
        assert_eq!(inv.lease.fence.0, 2);
        assert!(inv.lease.owner == Some(w1) || inv.lease.owner == Some(w2));
    }
    let again = store.acquire_expired(WorkerId::new(), 30_000, 10).await.unwrap_or_default();
    assert!(again.is_empty(), "fresh leases are not taken again");
}

async fn released_leases_are_recoverable_at_once(store: Arc<dyn InvocationStore>) {
    let d = draft("a", None, json!({}), 60_000);
    let worker = d.worker;
    let inv = created(&store, d).await;
    assert_eq!(store.release_leases(worker).await.ok(), Some(1));
    let taken = store.acquire_expired(WorkerId::new(), 30_000, 10).await.unwrap_or_default();
    assert_eq!(taken.iter().map(|i| i.id).collect::<Vec<_>>(), vec![inv.id]);
}

async fn tenants_do_not_see_each_other(store: Arc<dyn InvocationStore>) {
    let inv = created(&store, draft("red", None, json!({}), 30_000)).await;
    assert!(store.get(Some(&tenant("red")), inv.id).await.ok().flatten().is_some());
    assert!(store.get(Some(&tenant("blue")), inv.id).await.ok().flatten().is_none());
    let blue = store.list(&tenant("blue"), &ListQuery::default()).await.map(|p| p.items.len());
    assert_eq!(blue.ok(), Some(0));
}

async fn held_transitions_apply_only_to_the_current_record(store: Arc<dyn InvocationStore>) {
    let d = draft("a", None, json!({}), 30_000);
    let worker = d.worker;
    let admitted = created(&store, d).await;
    let fence = admitted.lease.fence;
    // A current copy: applied, and what it returns is what is stored.
    let (dispatching, evs) = store
        .transition_held(&admitted, Box::new(move |i, now| i.begin_attempt(worker, fence, now, 30_000)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(evs.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
    assert_eq!(store.get(None, dispatching.id).await.ok().flatten().as_ref(), Some(&dispatching));
    let db_now = store.now().await.unwrap_or_default();
    assert!(dispatching.lease.expires_at_ms.is_some_and(|t| t > db_now + 25_000), "lease counted on the store clock");

    // Someone else changes the row (a cancel request): the stale copy falls back to the locked
    // path, and the transition sees the fresh record.
    let by = dispatching.principal.clone();
    store
        .transition(dispatching.id, Box::new(move |i, now| i.request_cancel(by.clone(), now)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (renewed, _) = store
        .transition_held(&dispatching, Box::new(move |i, now| i.renew(worker, fence, now, 30_000)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(renewed.cancel.is_some(), "the fallback saw the cancel request");
    assert_eq!(renewed.last_seq, 3);

    // Two racing holders with the same copy: each event is appended once, in order, no gaps.
    let copy = renewed.clone();
    let (a, b) = tokio::join!(
        store.transition_held(&copy, Box::new(|_, _| Ok(vec![EventKind::CancelRequested { by: alice() }]))),
        store.transition_held(&copy, Box::new(|_, _| Ok(vec![EventKind::CancelRequested { by: alice() }]))),
    );
    assert!(a.is_ok() && b.is_ok());
    let seqs: Vec<u64> = store.events(copy.id, 0, 100).await.unwrap_or_default().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);

    // An expired lease: refused on the store's clock, nothing changed.
    let d = draft("a", None, json!({}), 1);
    let w2 = d.worker;
    let short = created(&store, d).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let f2 = short.lease.fence;
    let refused = store.transition_held(&short, Box::new(move |i, now| i.begin_attempt(w2, f2, now, 30_000))).await;
    assert_eq!(refused.err().map(|e| e.kind()), Some(switchyard_contract::ErrorKind::Conflict));
    assert_eq!(store.get(None, short.id).await.ok().flatten().map(|i| i.state), Some(InvocationState::Admitted));
}

fn alice() -> Principal {
    Principal::new(tenant("a"), "alice")
}

/// An invocation whose attempt started, on a fresh PostgreSQL store.
struct Dispatching {
    pg: switchyard_store::PgStore,
    store: Arc<dyn InvocationStore>,
    dispatching: switchyard_contract::Invocation,
    worker: WorkerId,
    fence: switchyard_contract::Fence,
    attempt: switchyard_contract::AttemptId,
}

async fn dispatching_on_postgres() -> Dispatching {
    let url = switchyard_tests::pg::database().await;
    let pg = switchyard_store::PgStore::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    let store: Arc<dyn InvocationStore> = Arc::new(pg.clone());
    let d = draft("a", None, json!({}), 30_000);
    let worker = d.worker;
    let admitted = created(&store, d).await;
    let fence = admitted.lease.fence;
    let (dispatching, evs) = store
        .transition_held(&admitted, Box::new(move |i, now| i.begin_attempt(worker, fence, now, 30_000)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let EventKind::DispatchStarted { attempt, .. } = evs[0].kind else { panic!("{evs:?}") };
    Dispatching { pg, store, dispatching, worker, fence, attempt }
}

/// PostgreSQL's held-lease fast path estimates the database clock locally; a local clock far
/// ahead must not turn a live lease's outcome into a late one (the database's clock decides).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_local_clock_does_not_judge_a_lease_on_postgres() {
    let Dispatching { pg, store, dispatching, worker, fence, attempt } = dispatching_on_postgres().await;
    pg.skew_estimate_for_tests(60_000); // the local clock runs a minute ahead
    let outcome = switchyard_contract::state::AttemptOutcome::Succeeded(json!({"ok": true}));
    let (done, evs) = store
        .transition_held(
            &dispatching,
            Box::new(move |i, now| Ok(i.record_outcome(worker, fence, attempt, outcome.clone(), now, 30_000))),
        )
        .await
        .unwrap();
    assert_eq!(done.state.name(), StateName::Succeeded, "{evs:?}");
    assert!(evs.iter().all(|e| !matches!(e.kind, EventKind::LateOutcome { .. })), "{evs:?}");
}

/// A local clock behind the database must not shorten a retry's backoff: the time a retry may
/// start is counted on the database's clock, like the event that records it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_local_clock_does_not_shorten_a_backoff_on_postgres() {
    let Dispatching { pg, store, dispatching, worker, fence, attempt } = dispatching_on_postgres().await;
    pg.skew_estimate_for_tests(-5_000); // the local clock runs five seconds behind
    let error = switchyard_contract::FailureRecord::new(
        switchyard_contract::FailureCode::UpstreamUnavailable,
        "down",
        true,
        switchyard_contract::ErrorSource::Upstream,
    );
    let (retrying, evs) = store
        .transition_held(
            &dispatching,
            Box::new(move |i, now| {
                let outcome = switchyard_contract::state::AttemptOutcome::Retry {
                    error: error.clone(),
                    retry_at_ms: now + 1_000,
                };
                Ok(i.record_outcome(worker, fence, attempt, outcome, now, 30_000))
            }),
        )
        .await
        .unwrap();
    let InvocationState::Retrying { retry_at_ms, .. } = retrying.state else { panic!("{:?}", retrying.state) };
    let recorded = evs.iter().find(|e| e.kind.name() == "attempt_failed").map(|e| e.at_ms);
    assert!(recorded.is_some_and(|at| retry_at_ms - at >= 1_000), "retry at {retry_at_ms}, recorded at {recorded:?}");
    let stored = store.get(None, retrying.id).await.ok().flatten().map(|i| i.state);
    assert_eq!(stored, Some(retrying.state), "what the caller holds is what the database holds");
}

/// A database that cannot hand out a connection fails a call fast ("unavailable, nothing
/// changed") after `acquire_timeout`, instead of stalling it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_or_absent_database_fails_calls_fast_on_postgres() {
    let url = switchyard_tests::pg::database().await;
    let opts = StoreOptions {
        max_connections: 1,
        acquire_timeout: std::time::Duration::from_millis(300),
        ..StoreOptions::default()
    };
    let pg = switchyard_store::PgStore::connect(&url, &opts).await.unwrap();
    let held = pg.pool().acquire().await.unwrap();
    let t0 = std::time::Instant::now();
    let r = pg.admit(draft("a", None, json!({}), 30_000)).await;
    assert_eq!(r.err().map(|e| e.kind()), Some(switchyard_contract::ErrorKind::Unavailable));
    assert!(t0.elapsed() < std::time::Duration::from_secs(2), "waited {:?}", t0.elapsed());
    drop(held);
    assert!(pg.admit(draft("a", None, json!({}), 30_000)).await.is_ok(), "fine once a connection is free");
}

/// `unknown_counts` (for `GET /metrics`) counts the `unknown` invocations of every tenant, per
/// upstream, and nothing else.
async fn unknown_invocations_are_counted_per_upstream(store: Arc<dyn InvocationStore>) {
    assert_eq!(store.unknown_counts().await.unwrap_or_else(|e| panic!("{e}")), Vec::<(String, u64)>::new());
    for t in ["a", "b", "c"] {
        let d = draft(t, None, json!({}), 30_000);
        let worker = d.worker;
        let inv = created(&store, d).await;
        let fence = inv.lease.fence;
        let (started, _) = store
            .transition(inv.id, Box::new(move |i, now| i.begin_attempt(worker, fence, now, 30_000)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let switchyard_contract::InvocationState::Dispatching { attempt, .. } = started.state else {
            panic!("not dispatching: {started:?}")
        };
        if t == "c" {
            continue; // still in flight: not unknown
        }
        let lost = switchyard_contract::state::AttemptOutcome::Unknown { reason: "connection lost".into() };
        store
            .transition(
                inv.id,
                Box::new(move |i, now| Ok(i.record_outcome(worker, fence, attempt, lost.clone(), now, 30_000))),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(store.unknown_counts().await.unwrap_or_else(|e| panic!("{e}")), vec![("demo".to_string(), 2)]);
}

/// The schema's own guarantees on PostgreSQL, asked in SQL behind the store's back, after the
/// migrations that made rows cheaper (issue 18): a terminal result cannot be rewritten (G10) while
/// a terminal row's other columns can; events are append-only and gapless per invocation (G9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_refuses_what_the_guarantees_forbid_on_postgres() {
    let url = switchyard_tests::pg::database().await;
    let pg = switchyard_store::PgStore::connect(&url, &StoreOptions::default()).await.unwrap();
    let store: Arc<dyn InvocationStore> = Arc::new(pg.clone());
    let inv = created(&store, draft("a", None, json!({}), 30_000)).await;
    let by = inv.principal.clone();
    store.transition(inv.id, Box::new(move |i, now| i.request_cancel(by.clone(), now))).await.unwrap();
    let before = store.events(inv.id, 0, 100).await.unwrap();
    assert_eq!(before.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=before.len() as u64).collect::<Vec<_>>());
    let id = inv.id.to_string();
    let run = |sql: &'static str| {
        let (pool, id) = (pg.pool().clone(), id.clone());
        async move { sqlx::query(sql).bind(id).execute(&pool).await.map(|r| r.rows_affected()).map_err(|e| e.to_string()) }
    };
    let refused = run("UPDATE invocations SET state = 'admitted' WHERE id = $1").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("terminal and immutable")), "{refused:?}");
    let refused = run("UPDATE invocations SET state_data = '{}'::jsonb WHERE id = $1").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("terminal and immutable")), "{refused:?}");
    assert_eq!(run("UPDATE invocations SET lease_owner = NULL WHERE id = $1").await, Ok(1), "other columns move");
    let refused = run("UPDATE invocation_events SET kind = 'x' WHERE invocation_id = $1").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("append-only")), "{refused:?}");
    let refused = run("DELETE FROM invocation_events WHERE invocation_id = $1").await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("append-only")), "{refused:?}");
    let refused = run("INSERT INTO invocation_events (invocation_id, seq, event_id, kind, data, at_ms) \
         VALUES ($1, 1, 'evt_again', 'admitted', '{}'::jsonb, 0)")
    .await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("invocation_events_pkey")),
        "a sequence is taken once: {refused:?}"
    );
    let after = store.events(inv.id, 0, 100).await.unwrap();
    assert_eq!(after, before, "the journal is as it was");
}

/// The batched write's function is planned once per connection (a generic plan): planned for each
/// call's values, it cost three re-plannings of about 0.3 ms per durable call on PostgreSQL (see
/// the migration). And it still writes what it is given: a cached plan serves every batch size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batched_write_is_planned_once_per_connection_on_postgres() {
    let url = switchyard_tests::pg::database().await;
    let pg = switchyard_store::PgStore::connect(&url, &StoreOptions::default()).await.unwrap();
    let config: Vec<String> =
        sqlx::query_scalar("SELECT unnest(proconfig) FROM pg_proc WHERE proname = 'switchyard_write_batch'")
            .fetch_all(pg.pool())
            .await
            .unwrap();
    for setting in ["plan_cache_mode=force_generic_plan", "enable_seqscan=off"] {
        assert!(config.iter().any(|c| c == setting), "{setting} in {config:?}");
    }
    let store: Arc<dyn InvocationStore> = Arc::new(pg);
    let one = created(&store, draft("a", None, json!({"n": 0}), 30_000)).await;
    let many = futures::future::join_all((1..=20).map(|n| created(&store, draft("a", None, json!({"n": n}), 30_000))));
    let many = many.await;
    for inv in std::iter::once(&one).chain(&many) {
        assert_eq!(store.get(None, inv.id).await.ok().flatten().as_ref(), Some(inv), "{}", inv.id);
    }
}

/// A pooled connection is not pinged before each statement (a round trip each), but one idle for
/// a while is: after the server ended every connection of the store (a restart, a failover), the
/// next write after a pause is served on a new connection, not failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_server_ended_is_replaced_after_a_pause_on_postgres() {
    let url = switchyard_tests::pg::database().await;
    let pg = switchyard_store::PgStore::connect(&url, &StoreOptions::default()).await.unwrap();
    let store: Arc<dyn InvocationStore> = Arc::new(pg);
    let before = futures::future::join_all((0..4).map(|n| created(&store, draft("a", None, json!({"n": n}), 30_000))));
    before.await;
    let ended = switchyard_tests::pg::psql(
        &url,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .unwrap();
    assert!(ended.trim().parse::<u32>().is_ok_and(|n| n >= 1), "ended {ended:?} connections");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let after = created(&store, draft("a", None, json!({"n": "after"}), 30_000)).await;
    assert_eq!(store.get(None, after.id).await.ok().flatten().as_ref(), Some(&after));
}

/// SQLite's group commit keeps the one writer connection between its batches while calls keep
/// coming; another store's write (the vault's, here) must still get it at once, not when the
/// calls stop.
async fn another_store_writes_while_calls_keep_coming(url: String) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let stores = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}"));
    let stop = Arc::new(AtomicBool::new(false));
    let admitted = Arc::new(AtomicUsize::new(0));
    let mut load = Vec::new();
    for w in 0..8 {
        let (store, stop, admitted) = (stores.invocations.clone(), stop.clone(), admitted.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                created(&store, draft("t", None, json!({"w": w, "n": n}), 30_000)).await;
                admitted.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    while admitted.load(Ordering::SeqCst) < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    for i in 0..20 {
        let name = format!("secret-{i}");
        let put = stores.vault.put(&name, "sealed");
        match tokio::time::timeout(std::time::Duration::from_secs(5), put).await {
            Ok(r) => r.unwrap_or_else(|e| panic!("{e}")),
            Err(_) => panic!("write {i} of another store waited 5 s for the group commit's connection"),
        }
    }
    let during = admitted.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    for task in load {
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(admitted.load(Ordering::SeqCst) > during, "the calls kept coming while the other store wrote");
    let stored = stores.vault.get("secret-19").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.as_deref(), Some("sealed"));
}

mod another_store_writes_while_calls_keep_coming {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        let (_dir, url) = switchyard_tests::sqlite_url();
        super::another_store_writes_while_calls_keep_coming(url).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::another_store_writes_while_calls_keep_coming(switchyard_tests::pg::database().await).await;
    }
}
