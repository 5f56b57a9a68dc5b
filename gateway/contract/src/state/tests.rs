use serde_json::json;

use super::*;
use crate::principal::TenantId;

const TTL: Millis = 1_000;

fn principal() -> Principal {
    Principal::new(TenantId::new("t1").unwrap(), "alice")
}

fn admitted(effect: EffectClass, worker: WorkerId) -> Invocation {
    let target = Target { upstream: "demo".into(), operation: "op".into(), effect };
    let request = json!({"n": 1});
    let digest = RequestDigest::compute("demo", "op", &request).unwrap();
    let draft = NewInvocation {
        id: InvocationId::new(),
        principal: principal(),
        target,
        request,
        digest,
        ingress_key: None,
        worker,
        lease_ttl_ms: TTL,
        hold: None,
        first_attempt: None,
        proves_unsent: false,
        audit: None,
        parent: None,
        trace: None,
    };
    Invocation::admit(draft, 100).0
}

fn dispatching(effect: EffectClass) -> (Invocation, WorkerId, AttemptId) {
    let w = WorkerId::new();
    let mut inv = admitted(effect, w);
    let ev = inv.begin_attempt(w, Fence(1), 200, TTL).unwrap();
    let EventKind::DispatchStarted { attempt, .. } = ev[0] else { panic!("expected dispatch_started") };
    (inv, w, attempt)
}

#[test]
fn g3_attempt_is_recorded_with_its_fence() {
    let (inv, _, attempt) = dispatching(EffectClass::Write);
    assert_eq!(inv.state, InvocationState::Dispatching { attempt, attempt_no: 1, fence: Fence(1) });
    assert_eq!(inv.attempts, 1);
}

#[test]
fn g4_a_write_is_never_dispatched_twice() {
    let (mut inv, w, attempt) = dispatching(EffectClass::Write);
    inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Unknown { reason: "timeout".into() }, 300, TTL);
    assert_eq!(inv.state.name(), StateName::Unknown);
    // Even if a bug put it back into a dispatchable state, a second attempt is refused.
    inv.state = InvocationState::Retrying {
        attempt_no: 1,
        retry_at_ms: 0,
        last_error: FailureRecord::new(crate::FailureCode::Upstream("x".into()), "x", true, ErrorSource::Upstream),
    };
    inv.lease = Lease { owner: Some(w), fence: Fence(1), expires_at_ms: Some(10_000) };
    assert!(inv.begin_attempt(w, Fence(1), 400, TTL).is_err());
}

#[test]
fn g4_recovery_of_a_lost_write_is_unknown_and_of_a_read_is_a_retry() {
    let (mut write, w, _) = dispatching(EffectClass::Write);
    write.lease = Lease { owner: Some(w), fence: Fence(2), expires_at_ms: Some(5_000) };
    write.recover_lost_attempt(w, Fence(2), 1_000, 3).unwrap();
    assert_eq!(write.state.name(), StateName::Unknown);
    assert_eq!(write.lease.owner, None);

    let (mut read, w, _) = dispatching(EffectClass::ReadOnly);
    read.lease.fence = Fence(2);
    read.recover_lost_attempt(w, Fence(2), 1_000, 3).unwrap();
    assert_eq!(read.state.name(), StateName::Retrying);
    read.begin_attempt(w, Fence(2), 1_001, TTL).unwrap();
    assert_eq!(read.attempts, 2);
}

#[test]
fn g6_a_stale_fence_or_expired_lease_only_appends_a_late_event() {
    let (mut inv, w, attempt) = dispatching(EffectClass::Write);
    let before = inv.clone();
    let ev = inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Succeeded(json!(1)), 200 + TTL, TTL);
    assert!(matches!(ev.as_slice(), [EventKind::LateOutcome { .. }]));
    assert_eq!(inv, before, "expired lease must not change the record");

    let other = WorkerId::new();
    inv.lease = Lease { owner: Some(other), fence: Fence(2), expires_at_ms: Some(9_999) };
    let ev = inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Succeeded(json!(1)), 300, TTL);
    assert!(matches!(ev.as_slice(), [EventKind::LateOutcome { .. }]));
    assert!(inv.renew(w, Fence(1), 300, TTL).is_err());
}

#[test]
fn a_late_answer_for_the_lost_attempt_of_a_write_resolves_its_unknown() {
    let (mut inv, w, attempt) = dispatching(EffectClass::Write);
    inv.lease = Lease { owner: Some(w), fence: Fence(2), expires_at_ms: Some(5_000) };
    inv.recover_lost_attempt(w, Fence(2), 1_000, 3).unwrap();
    assert_eq!(inv.state.name(), StateName::Unknown);
    // The first worker's answer arrives under its old fence: kept as evidence, and the truth.
    let ev = inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Succeeded(json!({"ok": 1})), 1_100, TTL);
    match ev.as_slice() {
        [EventKind::LateOutcome { detail, .. }, EventKind::Succeeded { .. }] => {
            assert_eq!(detail, &Some(json!({"ok": 1})))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(inv.state, InvocationState::Succeeded { result: json!({"ok": 1}), resolution: Resolution::Upstream });
    // A late "lost" or an answer for another attempt changes nothing.
    let (mut other, w, _) = dispatching(EffectClass::Write);
    other.record_outcome(w, Fence(1), other_attempt(&other), AttemptOutcome::Unknown { reason: "x".into() }, 300, TTL);
    let before = other.clone();
    let ev = other.record_outcome(w, Fence(1), AttemptId::new(), AttemptOutcome::Succeeded(json!(2)), 400, TTL);
    assert!(matches!(ev.as_slice(), [EventKind::LateOutcome { .. }]));
    assert_eq!(other, before);
}

fn other_attempt(inv: &Invocation) -> AttemptId {
    match inv.state {
        InvocationState::Dispatching { attempt, .. } => attempt,
        _ => AttemptId::new(),
    }
}

#[test]
fn g8_cancel_before_dispatch_is_final_and_in_flight_is_only_recorded() {
    let w = WorkerId::new();
    let mut inv = admitted(EffectClass::Write, w);
    let ev = inv.request_cancel(principal(), 150).unwrap();
    assert_eq!(ev.len(), 2);
    assert_eq!(inv.state.name(), StateName::Canceled);
    assert!(inv.begin_attempt(w, Fence(1), 160, TTL).is_err(), "no dispatch after cancel");

    let (mut inv, w, attempt) = dispatching(EffectClass::Write);
    assert_eq!(inv.request_cancel(principal(), 250).map(|e| e.len()).ok(), Some(1));
    assert_eq!(inv.state.name(), StateName::Dispatching);
    assert_eq!(inv.request_cancel(principal(), 260).map(|e| e.len()).ok(), Some(0), "idempotent");
    inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Canceled, 300, TTL);
    assert_eq!(inv.state, InvocationState::Canceled { by: principal() });
}

#[test]
fn g4_reconcile_is_audited_idempotent_and_refused_elsewhere() {
    let (mut inv, w, attempt) = dispatching(EffectClass::Write);
    let applied = Decision::Applied { result: json!({"ok": true}) };
    assert!(inv.reconcile(applied.clone(), principal()).is_err(), "dispatching cannot be reconciled");
    inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Unknown { reason: "lost".into() }, 300, TTL);
    let ev = inv.reconcile(applied.clone(), principal()).unwrap();
    assert!(matches!(ev.as_slice(), [EventKind::Reconciled { .. }, EventKind::Succeeded { .. }]));
    assert_eq!(inv.reconcile(applied, principal()).map(|e| e.len()).ok(), Some(0));
    let other = Decision::NotApplied { message: "no".into() };
    assert!(inv.reconcile(other, principal()).is_err());
}

#[test]
fn g10_terminal_results_are_immutable() {
    let (mut inv, w, attempt) = dispatching(EffectClass::ReadOnly);
    inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Succeeded(json!("first")), 300, TTL);
    let done = inv.clone();
    inv.lease = Lease { owner: Some(w), fence: Fence(1), expires_at_ms: Some(9_999) };
    let ev = inv.record_outcome(w, Fence(1), attempt, AttemptOutcome::Succeeded(json!("second")), 400, TTL);
    assert!(matches!(ev.as_slice(), [EventKind::LateOutcome { .. }]));
    assert_eq!(inv.state, done.state);
    assert!(inv.request_cancel(principal(), 500).is_err());
    assert!(inv.reconcile(Decision::NotApplied { message: "x".into() }, principal()).is_err());
    assert!(inv.begin_attempt(w, Fence(1), 500, TTL).is_err());
}

#[test]
fn states_round_trip_through_json() {
    let (inv, _, _) = dispatching(EffectClass::Write);
    let text = serde_json::to_string(&inv).unwrap_or_default();
    let back: Invocation = serde_json::from_str(&text).unwrap();
    assert_eq!(back, inv);
    for name in StateName::ALL {
        assert_eq!(StateName::parse(name.as_str()), Some(name));
    }
}
