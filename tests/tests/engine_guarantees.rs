//! The engine's guarantees G1–G10, each shown by a test, on SQLite and on PostgreSQL, with the
//! real stores and a scriptable upstream. G6 runs two engines on one database.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;
use switchyard_contract::{
    Decision, Engine, EngineConfig, ErrorKind, Event, EventKind, FaultPoint, Invocation, InvocationId, InvocationState,
    InvocationStore, Invocations, ListQuery, NoFaults, Principal, StateName, Submission, TenantId, client_stays,
};
use switchyard_store::StoreOptions;
use switchyard_tests::guarantees::{
    Db, Gate, alice, call, config, engine, events, kinds, postgres, sqlite, submit, until,
};
use switchyard_tests::stores::Partition;
use switchyard_tests::upstream::{OneUpstream, Scripted, per_invocation};

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::sqlite().await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::postgres().await).await;
            }
        }
    )*};
}

on_both!(
    g1_g3_admission_commits_and_the_attempt_is_recorded_before_dispatch,
    g3_a_write_proven_unsent_records_its_attempt_with_its_admission,
    g3_a_read_is_sent_while_its_admission_commits_and_answered_after_it,
    g2_one_key_one_invocation_and_a_different_request_conflicts,
    g4_a_lost_write_is_unknown_until_reconciled,
    g4_a_write_that_times_out_is_unknown,
    g5_read_only_is_retried_with_bounded_attempts,
    g6_a_worker_whose_lease_expired_cannot_commit,
    g6_an_answer_recorded_late_before_recovery_settles_the_call,
    g7_recovery_takes_over_an_invocation_its_worker_abandoned,
    g8_cancellation_before_and_during_dispatch,
    g9_watch_resumes_without_gaps_or_duplicates,
    g10_terminal_results_cannot_change,
    shutdown_releases_leases_for_immediate_recovery,
    a_store_outage_at_the_outcome_commit_does_not_lose_the_outcome,
    a_panicking_driver_does_not_hold_up_shutdown,
    a_held_call_runs_once_approved_by_another_principal_on_any_worker,
    a_held_call_nobody_approves_in_time_expires_and_runs_nothing,
    a_call_names_its_parent_only_within_its_tenant,
    a_read_answers_an_mcp_caller_from_its_reply_and_a_crash_before_the_commit_runs_it_again,
    a_reply_its_upstream_recorded_answers_every_caller_before_the_commit,
    upstreams_built_with_the_engine_s_port_reach_it_until_it_is_dropped,
);

async fn g1_g3_admission_commits_and_the_attempt_is_recorded_before_dispatch(db: Db) {
    let store = db.open().await;
    let up = Scripted::new(false);
    up.observe(store.clone());
    let e = engine(store.clone(), &up, Arc::new(NoFaults), config(2000));
    let inv = submit(&e, "w_ok").await;
    // G1: what submit answered is committed, with its first event.
    let stored = store.get(None, inv.id).await.ok().flatten().unwrap_or_else(|| panic!("not committed"));
    assert_eq!((stored.id, &stored.digest, &stored.target), (inv.id, &inv.digest, &inv.target));
    assert!(stored.digest.as_str().starts_with("sha256:"));
    until(&e, inv.id, StateName::Succeeded).await;
    let seen = up.calls();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].attempt_was_committed, "G3: the upstream was called before the attempt was committed");
    assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "dispatch_started", "succeeded"]);
    // Nothing is admitted for an unknown upstream.
    let refused = e.submit(Submission { upstream: "nope".into(), ..call("w_ok", json!({}), None) }).await;
    assert_eq!(refused.err().map(|e| e.kind), Some(ErrorKind::NotFound));
}

/// G3 for a write whose upstream proves an unsent attempt (it records evidence before it sends,
/// as the A2A proxy's sent marker): its first attempt commits with its admission, still before
/// the upstream is called. A write without that proof is admitted alone.
async fn g3_a_write_proven_unsent_records_its_attempt_with_its_admission(db: Db) {
    let store = db.open().await;
    let up = Scripted::new(false);
    up.observe(store.clone());
    let e = engine(store.clone(), &up, Arc::new(NoFaults), config(2000));
    let proven = e.submit(call("w_ok", json!({"evidence": true}), None)).await;
    let proven = proven.unwrap_or_else(|err| panic!("{err}")).invocation;
    assert!(matches!(proven.state, InvocationState::Dispatching { attempt_no: 1, .. }), "{:?}", proven.state);
    let plain = submit(&e, "w_ok").await;
    assert_eq!(plain.state.name(), StateName::Admitted);
    for inv in [&proven, &plain] {
        until(&e, inv.id, StateName::Succeeded).await;
        assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "dispatch_started", "succeeded"]);
    }
    let seen = up.calls();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.attempt_was_committed), "G3: an attempt commits before its call");
}

/// G3 for a read: its first attempt, recorded in the admission's own commit, is sent while that
/// commit runs (a read has no effect to lose), and its caller is answered only once it committed
/// (G1). When that commit fails, nobody is answered and nothing is recorded. A write is never sent
/// before its attempt commits.
async fn g3_a_read_is_sent_while_its_admission_commits_and_answered_after_it(db: Db) {
    let store = Partition::new(db.open().await);
    let up = Scripted::new(false);
    up.observe(store.clone());
    let e = engine(store.clone(), &up, Arc::new(NoFaults), config(2000));
    let submit_held = |op: &'static str, n: u32| {
        store.hold_admissions(true);
        let e = e.clone();
        tokio::spawn(async move { e.submit(call(op, json!({ "n": n }), None)).await })
    };

    let submitting = submit_held("ok", 1);
    up.wait_for_calls(1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!submitting.is_finished(), "G1: the caller is answered only after the admission commits");
    store.hold_admissions(false);
    let inv = submitting.await.ok().and_then(Result::ok).unwrap_or_else(|| panic!("not admitted")).invocation;
    let InvocationState::Dispatching { attempt, attempt_no: 1, .. } = inv.state else { panic!("{:?}", inv.state) };
    assert_eq!(up.calls()[0].call.attempt, attempt, "the attempt sent is the one the admission recorded");
    until(&e, inv.id, StateName::Succeeded).await;
    assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "dispatch_started", "succeeded"]);
    assert_eq!(up.calls().len(), 1, "the early reply settles it: sent once");

    // The admission's commit fails: the read went out, but nobody is answered and nothing is kept.
    let submitting = submit_held("ok", 2);
    up.wait_for_calls(2).await;
    store.set_cut(true);
    store.hold_admissions(false);
    let refused = submitting.await.ok().map(|r| r.err().map(|e| e.kind));
    assert_eq!(refused, Some(Some(ErrorKind::Unavailable)));
    store.set_cut(false);
    let kept = store.list(&alice().tenant, &ListQuery::default()).await.map(|p| p.items.len()).ok();
    assert_eq!(kept, Some(1), "the failed admission left no record");

    // A write waits for its attempt's commit.
    let submitting = submit_held("w_ok", 3);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(up.calls().len(), 2, "G3: a write is not sent before its attempt commits");
    store.hold_admissions(false);
    let inv = submitting.await.ok().and_then(Result::ok).unwrap_or_else(|| panic!("not admitted")).invocation;
    until(&e, inv.id, StateName::Succeeded).await;
    assert!(up.calls()[2].attempt_was_committed, "G3: the write's attempt committed before its call");

    // Configured off, a read waits for its admission's commit too.
    let cfg = EngineConfig { send_reads_with_admission: false, ..config(2000) };
    let strict = engine(store.clone(), &up, Arc::new(NoFaults), cfg);
    store.hold_admissions(true);
    let submitting = tokio::spawn(async move { strict.submit(call("ok", json!({ "n": 4 }), None)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(up.calls().len(), 3, "configured off, a read is not sent before its admission commits");
    store.hold_admissions(false);
    assert!(submitting.await.is_ok_and(|r| r.is_ok()));
    up.wait_for_calls(4).await;
    assert!(up.calls()[3].attempt_was_committed);
}

async fn g2_one_key_one_invocation_and_a_different_request_conflicts(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let first =
        e.submit(call("w_ok", json!({"a": 1, "b": [1, 2]}), Some("order-9"))).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(first.created);
    until(&e, first.invocation.id, StateName::Succeeded).await;
    // Same request, keys in another order and 1.0 for 1: the same canonical digest.
    let text = r#"{"b": [1.0, 2], "a": 1}"#;
    let again = e.submit(call("w_ok", serde_json::from_str(text).unwrap_or_default(), Some("order-9"))).await;
    let again = again.unwrap_or_else(|e| panic!("{e}"));
    assert!(!again.created);
    assert_eq!(again.invocation.id, first.invocation.id);
    assert_eq!(again.invocation.state.name(), StateName::Succeeded, "the retry sees the result");
    let conflict = e.submit(call("w_ok", json!({"a": 2}), Some("order-9"))).await;
    assert_eq!(conflict.err().map(|e| e.kind), Some(ErrorKind::Conflict));
    assert_eq!(up.calls().len(), 1, "nothing dispatched for the duplicate or the conflict");

    // A keyed read is not sent before its key is checked: a reuse with other arguments is
    // refused with "nothing was dispatched", and nothing was (it used to go out with the
    // admission, before the key was found).
    let read = e.submit(call("ok", json!({"n": 1}), Some("read-7"))).await.unwrap_or_else(|e| panic!("{e}"));
    until(&e, read.invocation.id, StateName::Succeeded).await;
    for n in 2..5 {
        let conflict = e.submit(call("ok", json!({ "n": n }), Some("read-7"))).await;
        assert_eq!(conflict.err().map(|e| e.kind), Some(ErrorKind::Conflict));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(up.calls().len(), 2, "G2: a read whose key names another request is never sent");
}

async fn g4_a_lost_write_is_unknown_until_reconciled(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(600));
    let inv = submit(&e, "w_lost").await;
    let unknown = until(&e, inv.id, StateName::Unknown).await;
    assert!(unknown.lease.owner.is_none(), "an unknown invocation holds no lease");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(e.recover_once().await.ok(), Some(0), "recovery never picks up an unknown write");
    assert_eq!(up.calls().len(), 1, "never re-dispatched automatically");
    assert_eq!(e.get(&alice().tenant, inv.id).await.map(|i| i.state.name()).ok(), Some(StateName::Unknown));

    let ops = Principal::new(alice().tenant, "ops");
    let not_applied = Decision::NotApplied { message: "checked the ledger: not there".into() };
    let done = e.reconcile(&ops, inv.id, not_applied.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.state.name(), StateName::Failed);
    let same = e.reconcile(&ops, inv.id, not_applied).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(same, done, "repeating the decision is idempotent");
    let other = e.reconcile(&ops, inv.id, Decision::Applied { result: json!(1) }).await;
    assert_eq!(other.err().map(|e| e.kind), Some(ErrorKind::Conflict));
    let evs = events(&e, inv.id).await;
    assert_eq!(kinds(&evs), ["admitted", "dispatch_started", "outcome_unknown", "reconciled", "failed"]);
    assert!(matches!(&evs[3].kind, EventKind::Reconciled { by, .. } if by.subject == "ops"), "audited with who");
    // Another tenant cannot reconcile it (and does not learn it exists).
    let stranger = Principal::new(TenantId::new("other").unwrap_or_else(|e| panic!("{e}")), "x");
    let denied = e.reconcile(&stranger, inv.id, Decision::Applied { result: json!(1) }).await;
    assert_eq!(denied.err().map(|e| e.kind), Some(ErrorKind::NotFound));
}

async fn g4_a_write_that_times_out_is_unknown(db: Db) {
    let up = Scripted::new(false);
    let cfg = EngineConfig { attempt_timeout: Duration::from_millis(300), ..config(2000) };
    let e = engine(db.open().await, &up, Arc::new(NoFaults), cfg);
    let inv = submit(&e, "w_gate").await;
    let unknown = until(&e, inv.id, StateName::Unknown).await;
    assert_eq!(unknown.attempts, 1);
    up.open_gate();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(up.calls().len(), 1);
}

async fn g5_read_only_is_retried_with_bounded_attempts(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let ok = submit(&e, "flaky:2").await;
    let done = until(&e, ok.id, StateName::Succeeded).await;
    assert_eq!(done.attempts, 3);
    let evs = events(&e, ok.id).await;
    let retries: Vec<_> =
        evs.iter().filter(|e| matches!(e.kind, EventKind::AttemptFailed { retry_at_ms: Some(_), .. })).collect();
    assert_eq!(retries.len(), 2);
    let gaps: Vec<i64> =
        evs.windows(2).filter(|w| w[0].kind.name() == "attempt_failed").map(|w| w[1].at_ms - w[0].at_ms).collect();
    assert!(gaps.iter().all(|g| *g >= 10), "backoff between attempts: {gaps:?}");

    let never = submit(&e, "flaky:99").await;
    let failed = until(&e, never.id, StateName::Failed).await;
    assert_eq!(failed.attempts, 3, "bounded by max_attempts");
    match failed.state {
        switchyard_contract::InvocationState::Failed { error, .. } => {
            assert_eq!(error.code.as_str(), "attempts_exhausted")
        }
        other => panic!("{other:?}"),
    }
    // A write that is unavailable is not retried.
    let write = submit(&e, "w_flaky:99").await;
    assert_eq!(until(&e, write.id, StateName::Failed).await.attempts, 1);
    assert_eq!(per_invocation(&up.calls()).get(&write.id.to_string()), Some(&1));
}

/// Engine A starts an attempt, loses the database, its lease expires, engine B takes over and
/// finishes; A's late outcome is refused and recorded as a late event.
async fn g6_a_worker_whose_lease_expired_cannot_commit(db: Db) {
    for (op, final_state) in [("gate", StateName::Succeeded), ("w_gate", StateName::Unknown)] {
        let up = Scripted::new(false);
        let a_store = Partition::new(db.open().await);
        let a = engine(a_store.clone(), &up, Arc::new(NoFaults), config(500));
        let b = engine(db.open().await, &up, Arc::new(NoFaults), config(500));
        let inv = submit(&a, op).await;
        up.wait_for_calls(1).await;
        a_store.set_cut(true);
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(b.recover_once().await.ok(), Some(1), "B takes the expired lease");
        let after = until(&b, inv.id, final_state).await;
        assert_eq!(after.lease.fence.0, 2);
        a_store.set_cut(false);
        up.open_gate();
        // A's reply arrives now; it must be refused.
        for _ in 0..300 {
            if kinds(&events(&b, inv.id).await).contains(&"late_outcome") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let evs = events(&b, inv.id).await;
        let late = evs.iter().find_map(|e| match &e.kind {
            EventKind::LateOutcome { fence, worker, .. } => Some((*fence, *worker)),
            _ => None,
        });
        assert_eq!(late, Some((switchyard_contract::Fence(1), a.worker())), "{op}: {:?}", kinds(&evs));
        let now = b.get(&alice().tenant, inv.id).await.unwrap_or_else(|e| panic!("{e}"));
        if op == "gate" {
            assert_eq!(now.state, after.state, "{op}: the late outcome was not applied");
        } else {
            // The write's only attempt answered after all: that answer resolves the `unknown`.
            assert_eq!(now.state.name(), StateName::Succeeded, "{op}: {:?}", kinds(&evs));
            assert_eq!(kinds(&evs[evs.len() - 2..]), ["late_outcome", "succeeded"]);
        }
        let expected_calls = if op == "gate" { 2 } else { 1 };
        assert_eq!(up.calls().len(), expected_calls, "{op}: a write is never re-dispatched by the new worker");
    }
}

/// Engine A's lease runs out while its upstream works (A cannot reach the database to renew
/// it); the reply then arrives before anyone took the call over, and A's commit is recorded as
/// a late outcome. Engine B, recovering the call, finds that answer in the journal and settles
/// the call with it: the gateway holds the evidence, so the outcome is not `unknown`.
async fn g6_an_answer_recorded_late_before_recovery_settles_the_call(db: Db) {
    for (op, settled) in [("w_gate", StateName::Succeeded), ("gate", StateName::Succeeded)] {
        let up = Scripted::new(false);
        let a_store = Partition::new(db.open().await);
        let a = engine(a_store.clone(), &up, Arc::new(NoFaults), config(500));
        let inv = submit(&a, op).await;
        up.wait_for_calls(1).await;
        a_store.set_cut(true);
        tokio::time::sleep(Duration::from_millis(700)).await;
        a_store.set_cut(false);
        up.open_gate();
        let b = engine(db.open().await, &up, Arc::new(NoFaults), config(500));
        for _ in 0..300 {
            if kinds(&events(&b, inv.id).await).contains(&"late_outcome") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(b.recover_once().await.ok(), Some(1), "{op}: B takes the expired lease");
        let done = until(&b, inv.id, settled).await;
        let evs = kinds(&events(&b, inv.id).await);
        assert_eq!(evs[evs.len() - 2..], ["late_outcome", "succeeded"], "{op}: {evs:?}");
        assert_eq!(done.lease.fence.0, 2);
        assert_eq!(up.calls().len(), 1, "{op}: nothing is sent again");
    }
}

async fn g7_recovery_takes_over_an_invocation_its_worker_abandoned(db: Db) {
    let up = Scripted::new(false);
    // Worker A admits and then hangs before dispatching, as if the process had stopped.
    let a = engine(db.open().await, &up, Gate::new(FaultPoint::BeforeDispatch), config(400));
    let inv = submit(&a, "w_ok").await;
    let b = engine(db.open().await, &up, Arc::new(NoFaults), config(400));
    let _recovery = b.start();
    let done = until(&b, inv.id, StateName::Succeeded).await;
    assert_eq!(done.lease.fence.0, 2);
    assert_eq!(up.calls().len(), 1, "dispatched exactly once, by the worker that recovered it");
}

async fn g8_cancellation_before_and_during_dispatch(db: Db) {
    // Before dispatch: final at once; the upstream is never called.
    let up = Scripted::new(true);
    let gate = Gate::new(FaultPoint::BeforeDispatch);
    let e = engine(db.open().await, &up, gate.clone(), config(2000));
    let inv = submit(&e, "w_ok").await;
    let canceled = e.cancel(&alice(), inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(canceled.state.name(), StateName::Canceled);
    gate.open.send_replace(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(up.calls().is_empty());
    assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "cancel_requested", "canceled"]);

    // In flight, and the upstream confirms: canceled.
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let inv = submit(&e, "w_hang").await;
    up.wait_for_calls(1).await;
    let pending = e.cancel(&alice(), inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(pending.cancel.is_some(), "the request is recorded durably");
    until(&e, inv.id, StateName::Canceled).await;
    assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "dispatch_started", "cancel_requested", "canceled"]);

    // The first cancellation reaches the upstream before it knows the call and is refused; the
    // driver sends it again on its next lease renewal, and the upstream confirms.
    let up = Scripted::new(true);
    up.refuse_cancels.store(1, std::sync::atomic::Ordering::SeqCst);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(600));
    let inv = submit(&e, "w_hang").await;
    up.wait_for_calls(1).await;
    e.cancel(&alice(), inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    until(&e, inv.id, StateName::Canceled).await;

    // In flight, and the upstream cannot cancel: the upstream's outcome stands.
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let inv = submit(&e, "w_gate").await;
    up.wait_for_calls(1).await;
    e.cancel(&alice(), inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(e.get(&alice().tenant, inv.id).await.map(|i| i.state.name()).ok(), Some(StateName::Dispatching));
    up.open_gate();
    let done = until(&e, inv.id, StateName::Succeeded).await;
    assert!(done.cancel.is_some());
}

async fn g9_watch_resumes_without_gaps_or_duplicates(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let inv = submit(&e, "flaky:2").await;
    // Watch from the start while it runs; the stream ends after the terminal event.
    let all: Vec<Event> =
        tokio::time::timeout(Duration::from_secs(10), e.watch(alice().tenant, inv.id, 0).collect::<Vec<_>>())
            .await
            .unwrap_or_else(|_| panic!("watch did not end"))
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
            .collect();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=all.len() as u64).collect::<Vec<_>>());
    assert_eq!(all.last().map(|e| e.kind.name()), Some("succeeded"));
    // Resume from the middle: exactly the rest.
    let rest: Vec<u64> = e.watch(alice().tenant, inv.id, 3).map(|r| r.map(|e| e.seq).unwrap_or(0)).collect().await;
    assert_eq!(rest, (4..=all.len() as u64).collect::<Vec<_>>());
    let none: Vec<_> = e.watch(alice().tenant, inv.id, all.len() as u64).collect().await;
    assert!(none.is_empty());
    let stranger = TenantId::new("other").unwrap_or_else(|e| panic!("{e}"));
    let denied: Vec<_> = e.watch(stranger, inv.id, 0).collect().await;
    assert!(matches!(denied.as_slice(), [Err(err)] if err.kind == ErrorKind::NotFound));
}

/// Two replicas on one PostgreSQL database, each with its change feed (`LISTEN/NOTIFY`) and a
/// poll slowed to 40 s: a call that settles on replica A is seen settled by a waiter and a
/// watcher on replica B within 50 ms (the median of five calls; each well before any poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_replica_wakes_a_waiter_on_another_at_once() {
    let url = switchyard_tests::pg::database().await;
    let replica = || async {
        let stores = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap();
        (stores.invocations, stores.feed.unwrap_or_else(|| panic!("PostgreSQL has a change feed")))
    };
    let cfg = EngineConfig { watch_poll: Duration::from_secs(5), ..config(2000) };
    let up = Scripted::new(false);
    let (store_a, feed_a) = replica().await;
    let (store_b, feed_b) = replica().await;
    let replica_engine = |store, feed, cfg| {
        Engine::builder(store, cfg).feed(Some(feed)).build(Arc::new(OneUpstream(up.clone()))).unwrap()
    };
    let a = replica_engine(store_a, feed_a, cfg.clone());
    let b = replica_engine(store_b, feed_b, cfg);
    tokio::time::sleep(Duration::from_millis(500)).await; // both replicas are listening
    let mut lags = Vec::new();
    for _ in 0..5 {
        let inv = submit(&a, "w_sleep:300").await;
        let (waiter, watcher) = (b.clone(), b.clone());
        let seen_by_wait = tokio::spawn(async move {
            let settled = waiter.wait(&alice().tenant, inv.id, Duration::from_secs(20)).await;
            (settled.map(|i| i.state.name()), std::time::Instant::now())
        });
        let seen_by_watch = tokio::spawn(async move {
            let mut events = watcher.watch(alice().tenant, inv.id, 0);
            while let Some(Ok(ev)) = events.next().await {
                if ev.kind.is_terminal() {
                    return Some(std::time::Instant::now());
                }
            }
            None
        });
        let settled = a.wait(&alice().tenant, inv.id, Duration::from_secs(20)).await;
        let committed = std::time::Instant::now();
        assert_eq!(settled.map(|i| i.state.name()).ok(), Some(StateName::Succeeded));
        let (state, woke) = seen_by_wait.await.unwrap();
        assert_eq!(state.ok(), Some(StateName::Succeeded));
        let watched = seen_by_watch.await.unwrap().unwrap_or_else(|| panic!("no terminal event"));
        let lag = woke.max(watched).saturating_duration_since(committed);
        assert!(lag < Duration::from_millis(1000), "replica B saw the change {lag:?} after replica A (a poll?)");
        lags.push(lag);
    }
    lags.sort();
    assert!(lags[2] < Duration::from_millis(50), "median {:?} of {lags:?}", lags[2]);
    println!("replica B saw each change after replica A by {lags:?}");

    // The listening connections die (an operator, a failover): the replicas listen again, and
    // the next change still wakes B at once.
    let killed = switchyard_tests::pg::psql(
        &url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .unwrap();
    assert_eq!(killed.lines().count(), 2, "one listening connection per replica: {killed:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let inv = submit(&a, "w_sleep:300").await;
    let waiter = b.clone();
    let seen = tokio::spawn(async move {
        let _ = waiter.wait(&alice().tenant, inv.id, Duration::from_secs(20)).await;
        std::time::Instant::now()
    });
    let _ = a.wait(&alice().tenant, inv.id, Duration::from_secs(20)).await;
    let committed = std::time::Instant::now();
    let lag = seen.await.unwrap().saturating_duration_since(committed);
    assert!(lag < Duration::from_millis(1000), "after the reconnect, B saw the change {lag:?} late");
}

async fn g10_terminal_results_cannot_change(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let inv = submit(&e, "w_ok").await;
    let done = until(&e, inv.id, StateName::Succeeded).await;
    assert_eq!(e.cancel(&alice(), inv.id).await.err().map(|e| e.kind), Some(ErrorKind::Conflict));
    let r = e.reconcile(&alice(), inv.id, Decision::Applied { result: json!("other") }).await;
    assert_eq!(r.err().map(|e| e.kind), Some(ErrorKind::Conflict));
    assert_eq!(e.get(&alice().tenant, inv.id).await.ok().map(|i| i.state), Some(done.state));
}

/// A call made for another (a bridged call's run) names it as its parent: stored and read back
/// with the call; a parent of another tenant is refused, as is one that does not exist, and
/// nothing is admitted.
async fn a_call_names_its_parent_only_within_its_tenant(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    let run = submit(&e, "w_ok").await;
    let keyed = |k: &str, parent| Submission { parent: Some(parent), ..call("w_ok", json!({}), Some(k)) };
    let child = e.submit(keyed("child", run.id)).await.unwrap_or_else(|err| panic!("{err}")).invocation;
    assert_eq!(child.parent, Some(run.id));
    let stored = until(&e, child.id, StateName::Succeeded).await;
    assert_eq!(stored.parent, Some(run.id), "the parent is stored with the call");
    assert_eq!(until(&e, run.id, StateName::Succeeded).await.parent, None);

    let stranger = Principal::new(TenantId::new("other").unwrap_or_else(|e| panic!("{e}")), "mallory");
    let foreign = Submission { principal: stranger.clone(), ..keyed("foreign", run.id) };
    assert_eq!(e.submit(foreign).await.err().map(|e| e.kind), Some(ErrorKind::InvalidInput));
    let missing = e.submit(keyed("missing", InvocationId::new())).await;
    assert_eq!(missing.err().map(|e| e.kind), Some(ErrorKind::InvalidInput));
    let theirs = e.list(&stranger.tenant, ListQuery::default()).await.map(|p| p.items.len()).ok();
    assert_eq!(theirs, Some(0), "nothing was admitted for the stranger");
    assert_eq!(up.calls().len(), 2, "only the run and its child ran");
}

async fn shutdown_releases_leases_for_immediate_recovery(db: Db) {
    let up = Scripted::new(false);
    let a = engine(db.open().await, &up, Arc::new(NoFaults), config(60_000));
    let inv = submit(&a, "w_gate").await;
    up.wait_for_calls(1).await;
    assert_eq!(a.shutdown(Duration::from_millis(100)).await.ok(), Some(1), "the in-flight lease is released");
    assert_eq!(a.submit(call("w_ok", json!({}), None)).await.err().map(|e| e.kind), Some(ErrorKind::Unavailable));
    let b = engine(db.open().await, &up, Arc::new(NoFaults), config(60_000));
    assert_eq!(b.recover_once().await.ok(), Some(1), "taken at once, not after 60 s");
    until(&b, inv.id, StateName::Unknown).await;
    assert_eq!(up.calls().len(), 1);
}

/// The database goes away for a moment just as the upstream answers a write: the outcome is
/// committed once it is back (the lease still holds), not turned into `unknown`.
async fn a_store_outage_at_the_outcome_commit_does_not_lose_the_outcome(db: Db) {
    let up = Scripted::new(false);
    let store = Partition::new(db.open().await);
    let e = engine(store.clone(), &up, Arc::new(NoFaults), config(3000));
    let _recovery = e.start();
    let inv = submit(&e, "w_gate").await;
    up.wait_for_calls(1).await;
    store.set_cut(true);
    up.open_gate();
    tokio::time::sleep(Duration::from_millis(800)).await;
    store.set_cut(false);
    let done = until(&e, inv.id, StateName::Succeeded).await;
    assert_eq!(done.attempts, 1);
    assert_eq!(kinds(&events(&e, inv.id).await), ["admitted", "dispatch_started", "succeeded"]);
    assert_eq!(up.calls().len(), 1);
}

/// An upstream adapter that panics ends its driver; the engine forgets it, so shutdown does
/// not wait out the grace period for it, and the invocation is left to recovery.
async fn a_panicking_driver_does_not_hold_up_shutdown(db: Db) {
    let up = Scripted::new(false);
    let e = engine(db.open().await, &up, Arc::new(NoFaults), config(2000));
    submit(&e, "w_panic").await;
    up.wait_for_calls(1).await;
    for _ in 0..100 {
        if e.in_flight() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(e.in_flight(), 0, "the panicked driver is deregistered");
    let t0 = std::time::Instant::now();
    e.shutdown(Duration::from_secs(5)).await.unwrap_or_else(|err| panic!("{err}"));
    assert!(t0.elapsed() < Duration::from_secs(1), "shutdown waited {:?}", t0.elapsed());
}

/// A policy enforcement point that holds every call for approval.
#[derive(Debug)]
struct HoldAll;

#[async_trait]
impl switchyard_contract::PolicyPoint for HoldAll {
    async fn decide(&self, _: &switchyard_contract::CallFacts<'_>) -> switchyard_contract::Ruling {
        let verdict = switchyard_contract::Verdict::Hold { reason: "needs review".into() };
        switchyard_contract::Ruling { verdict, basis: "test policy".into() }
    }
}

/// A held call is committed without a lease, neither dispatched nor recovered; its caller cannot
/// approve it; another principal's approval on another worker runs it exactly once; a denial
/// runs nothing.
async fn a_held_call_runs_once_approved_by_another_principal_on_any_worker(db: Db) {
    let up = Scripted::new(false);
    let policy: Arc<dyn switchyard_contract::PolicyPoint> = Arc::new(HoldAll);
    let a = Engine::builder(db.open().await, config(300))
        .policy(policy)
        .build(Arc::new(OneUpstream(up.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let _recovery = a.start();
    let inv = submit(&a, "w_ok").await;
    assert_eq!(inv.state.name(), StateName::AwaitingApproval);
    tokio::time::sleep(Duration::from_millis(800)).await; // longer than a lease and several recovery passes
    let stored = a.get(&alice().tenant, inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored.state.name(), StateName::AwaitingApproval);
    assert_eq!((stored.lease.owner, stored.lease.expires_at_ms), (None, None), "a held call has no lease");
    assert!(up.calls().is_empty(), "neither dispatched nor recovered");
    let evs = events(&a, inv.id).await;
    assert!(
        matches!(&evs[0].kind, EventKind::Admitted { held: Some(h), .. } if h.reason == "needs review" && h.basis == "test policy"),
        "{evs:?}"
    );

    let own = a.approve(&alice(), inv.id).await.err();
    assert_eq!(own.map(|e| e.kind), Some(ErrorKind::Forbidden), "its caller cannot approve it");
    let mallory = Principal::new(TenantId::new("other").unwrap_or_else(|e| panic!("{e}")), "mallory");
    assert_eq!(a.approve(&mallory, inv.id).await.err().map(|e| e.kind), Some(ErrorKind::NotFound));

    let b = engine(db.open().await, &up, Arc::new(NoFaults), config(300));
    let bob = Principal::new(alice().tenant, "bob");
    b.approve(&bob, inv.id).await.unwrap_or_else(|e| panic!("{e}"));
    until(&b, inv.id, StateName::Succeeded).await;
    assert_eq!(up.calls().len(), 1, "approved: dispatched exactly once");
    assert_eq!(kinds(&events(&b, inv.id).await), ["admitted", "approved", "dispatch_started", "succeeded"]);
    assert_eq!(b.approve(&bob, inv.id).await.err().map(|e| e.kind), Some(ErrorKind::Conflict), "only once");

    let second = submit(&a, "w_ok").await;
    let denied = b.deny(&bob, second.id, "not today".into()).await.unwrap_or_else(|e| panic!("{e}"));
    let switchyard_contract::InvocationState::Failed { error, .. } = &denied.state else { panic!("{denied:?}") };
    assert_eq!((error.code.as_str(), error.message.as_str(), error.retry_safe), ("approval_denied", "not today", true));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(up.calls().len(), 1, "a denied call runs nothing");
}

/// Recovery ends a held call nobody approved within the approval time: it fails
/// `approval_expired` (retry-safe), runs nothing, and can no longer be approved.
async fn a_held_call_nobody_approves_in_time_expires_and_runs_nothing(db: Db) {
    let up = Scripted::new(false);
    let policy: Arc<dyn switchyard_contract::PolicyPoint> = Arc::new(HoldAll);
    let cfg = EngineConfig { approval_ttl: Duration::from_millis(300), ..config(2000) };
    let e = Engine::builder(db.open().await, cfg)
        .policy(policy)
        .build(Arc::new(OneUpstream(up.clone())))
        .unwrap_or_else(|err| panic!("{err}"));
    let _recovery = e.start();
    let inv = submit(&e, "w_ok").await;
    let expired = until(&e, inv.id, StateName::Failed).await;
    let switchyard_contract::InvocationState::Failed { error, resolution } = &expired.state else {
        panic!("{expired:?}")
    };
    assert_eq!((error.code.as_str(), error.retry_safe), ("approval_expired", true), "{expired:?}");
    assert_eq!(*resolution, switchyard_contract::state::Resolution::Expired);
    let bob = Principal::new(alice().tenant, "bob");
    assert_eq!(e.approve(&bob, inv.id).await.err().map(|err| err.kind), Some(ErrorKind::Conflict), "too late");
    assert!(up.calls().is_empty(), "an expired call runs nothing");
}

/// The MCP face takes a read's answer from the upstream's reply, before the outcome commits (one
/// commit fewer on its path); the admin API, a write, and a reply to retry wait for the record.
/// An engine that dies before the commit leaves the read `dispatching`: another takes it over
/// and runs it again (G5, G7), and the journal holds the attempt that was answered and the rerun.
async fn a_read_answers_an_mcp_caller_from_its_reply_and_a_crash_before_the_commit_runs_it_again(db: Db) {
    let store = db.open().await;
    let up = Scripted::new(false);
    // Every driver of engine A stops after its upstream replied, before committing the outcome.
    let gate = Gate::new(FaultPoint::AfterUpstreamReply);
    let a = engine(store.clone(), &up, gate.clone(), config(300));
    let mcp = |op: &str| Submission { ingress: switchyard_contract::Ingress::Mcp, ..call(op, json!({}), None) };
    async fn wait(e: &Engine, s: Submission, ms: u64) -> Invocation {
        let waited = e.submit_and_wait(s, Duration::from_millis(ms), client_stays()).await;
        waited.unwrap_or_else(|err| panic!("{err}")).submitted.invocation
    }

    let read = wait(&a, mcp("ok"), 5_000).await;
    let InvocationState::Succeeded { result, .. } = &read.state else { panic!("answered early: {read:?}") };
    assert_eq!(result, &json!({"attempt": 1, "op": "ok"}));
    let stored = store.get(None, read.id).await.ok().flatten().unwrap_or_else(|| panic!("admitted"));
    assert_eq!(stored.state.name(), StateName::Dispatching, "answered before its outcome committed");
    assert_eq!(read.last_seq, stored.last_seq + 1, "the answer numbers the event the commit will append");

    // Answered from the record: a write, a read through the admin API, a reply to retry.
    for (s, what) in
        [(mcp("w_ok"), "a write"), (call("ok", json!({}), None), "the admin API"), (mcp("flaky:1"), "a retry")]
    {
        let waited = wait(&a, s, 300).await;
        assert_eq!(waited.state.name(), StateName::Dispatching, "{what} waits for its commit");
    }

    // Engine A dies (its drivers never get past the gate). B takes the read over and runs it again.
    let b = engine(store.clone(), &up, Arc::new(NoFaults), config(300));
    let _recovery = b.start();
    let rerun = until(&b, read.id, StateName::Succeeded).await;
    assert_eq!(rerun.attempts, 2);
    assert!(matches!(&rerun.state, InvocationState::Succeeded { result, .. } if result["attempt"] == 2));
    assert_eq!(per_invocation(&up.calls()).get(&read.id.to_string()), Some(&2));
    let kinds = kinds(&events(&b, read.id).await);
    assert_eq!(kinds.first(), Some(&"admitted"));
    assert_eq!(kinds.last(), Some(&"succeeded"));
    assert_eq!(kinds.iter().filter(|k| **k == "dispatch_started").count(), 2, "{kinds:?}");
    drop(a);
}

/// A reply the upstream recorded where its callers read it back (as an A2A agent's mirrored task)
/// answers the callers of every entry point before the outcome commits, a write's too; a write
/// whose upstream did not record its reply waits for the commit, through the same entry point.
async fn a_reply_its_upstream_recorded_answers_every_caller_before_the_commit(db: Db) {
    let store = db.open().await;
    let up = Scripted::new(false);
    let gate = Gate::new(FaultPoint::AfterUpstreamReply);
    let a = engine(store.clone(), &up, gate.clone(), config(300));
    let via = |ingress, op: &str| Submission { ingress, ..call(op, json!({}), None) };
    let wait = |s: Submission, ms: u64| {
        let a = &a;
        async move {
            let waited = a.submit_and_wait(s, Duration::from_millis(ms), client_stays()).await;
            waited.unwrap_or_else(|err| panic!("{err}")).submitted.invocation
        }
    };
    use switchyard_contract::Ingress::{A2a, Admin};
    for (s, what) in [(via(A2a, "w_recorded"), "a write, A2A"), (via(Admin, "recorded"), "a read, admin API")] {
        let answered = wait(s, 5_000).await;
        let InvocationState::Succeeded { result, .. } = &answered.state else { panic!("{what}: {answered:?}") };
        assert_eq!(result["op"], "recorded", "{what}");
        let stored = store.get(None, answered.id).await.ok().flatten().unwrap_or_else(|| panic!("admitted"));
        assert_eq!(stored.state.name(), StateName::Dispatching, "{what}: answered before its outcome committed");
    }
    let waited = wait(via(A2a, "w_ok"), 300).await;
    assert_eq!(waited.state.name(), StateName::Dispatching, "a write not recorded upstream waits for its commit");
}

/// Upstreams that call the engine that calls them (an A2A `tools` agent) are built with its
/// driving port (`build_cyclic`): through it they submit and read like any face, and once the
/// engine is dropped the port refuses as unavailable instead of keeping it alive.
async fn upstreams_built_with_the_engine_s_port_reach_it_until_it_is_dropped(db: Db) {
    let up = Scripted::new(false);
    let mut port = None;
    let e = Engine::builder(db.open().await, config(2000))
        .build_cyclic(|engine| {
            port = Some(engine);
            Ok::<_, switchyard_contract::Error>(Arc::new(OneUpstream(up.clone())) as Arc<_>)
        })
        .unwrap_or_else(|err| panic!("{err}"));
    let port = port.unwrap_or_else(|| panic!("the upstreams were built with the port"));
    let inv = port.submit(call("r_ok", json!({}), None)).await.unwrap_or_else(|err| panic!("{err}")).invocation;
    let done = until(&e, inv.id, StateName::Succeeded).await;
    assert_eq!(port.get(&alice().tenant, inv.id).await.ok().map(|i| i.state.name()), Some(done.state.name()));
    drop(e);
    for _ in 0..100 {
        match port.get(&alice().tenant, inv.id).await {
            Err(err) if err.kind == ErrorKind::Unavailable => return,
            _ => tokio::time::sleep(Duration::from_millis(20)).await, // a driver may still hold it
        }
    }
    panic!("the port still reaches a dropped engine");
}
