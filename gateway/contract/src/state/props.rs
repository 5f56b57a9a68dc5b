//! Property tests: any sequence of operations, by the lease holder, by a stale worker, by a
//! caller or an operator, in any order and at any time, keeps the state machine's invariants.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::principal::TenantId;

#[derive(Debug, Clone)]
enum Op {
    Begin { stale: bool },
    Renew { stale: bool },
    Outcome { kind: u8, stale: bool },
    Recover,
    Cancel,
    Reconcile { applied: bool },
    Takeover,
    Tick(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<bool>().prop_map(|stale| Op::Begin { stale }),
        any::<bool>().prop_map(|stale| Op::Renew { stale }),
        (0u8..5, any::<bool>()).prop_map(|(kind, stale)| Op::Outcome { kind, stale }),
        Just(Op::Recover),
        Just(Op::Cancel),
        any::<bool>().prop_map(|applied| Op::Reconcile { applied }),
        Just(Op::Takeover),
        (0i64..800).prop_map(Op::Tick),
    ]
}

fn outcome(kind: u8, now: Millis) -> AttemptOutcome {
    let err = FailureRecord::new(crate::FailureCode::Upstream("x".into()), "x", true, ErrorSource::Upstream);
    match kind {
        0 => AttemptOutcome::Succeeded(json!({"ok": now})),
        1 => AttemptOutcome::Failed(err),
        2 => AttemptOutcome::Retry { error: err, retry_at_ms: now + 10 },
        3 => AttemptOutcome::Unknown { reason: "lost".into() },
        _ => AttemptOutcome::Canceled,
    }
}

fn principal() -> Principal {
    Principal::new(TenantId::new("p").unwrap_or_else(|e| panic!("{e}")), "s")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn invariants_hold_for_any_sequence(write in any::<bool>(), ops in proptest::collection::vec(op(), 1..40)) {
        const TTL: Millis = 500;
        let effect = if write { EffectClass::Write } else { EffectClass::ReadOnly };
        let mut worker = WorkerId::new();
        let stale_worker = WorkerId::new();
        let request = json!({});
        let draft = NewInvocation {
            id: InvocationId::new(),
            principal: principal(),
            target: Target { upstream: "u".into(), operation: "o".into(), effect },
            digest: RequestDigest::compute("u", "o", &request).unwrap_or_else(|e| panic!("{e}")),
            request,
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
        let mut now: Millis = 1_000;
        let (mut inv, first) = Invocation::admit(draft, now);
        let mut seq = 1u64;
        let mut terminal: Option<InvocationState> = None;
        prop_assert!(matches!(first, EventKind::Admitted { .. }), "the first event is admitted");
        for op in ops {
            let before = inv.clone();
            let fence = inv.lease.fence;
            let who = |stale: bool| if stale { stale_worker } else { worker };
            let attempt = match inv.state {
                InvocationState::Dispatching { attempt, .. } | InvocationState::Unknown { attempt, .. } => attempt,
                _ => AttemptId::new(),
            };
            let result: Result<Vec<EventKind>, Error> = match op {
                Op::Begin { stale } => inv.begin_attempt(who(stale), fence, now, TTL),
                Op::Renew { stale } => inv.renew(who(stale), fence, now, TTL),
                Op::Outcome { kind, stale } => Ok(inv.record_outcome(who(stale), fence, attempt, outcome(kind, now), now, TTL)),
                Op::Recover => inv.recover_lost_attempt(worker, fence, now, 3),
                Op::Cancel => inv.request_cancel(principal(), now),
                Op::Reconcile { applied } => {
                    let d = if applied { Decision::Applied { result: json!(1) } } else { Decision::NotApplied { message: "n".into() } };
                    inv.reconcile(d, principal())
                }
                Op::Takeover => {
                    // What the store's acquire_expired does, only once the lease has expired.
                    if inv.state.name().is_active() && inv.lease.expires_at_ms.is_some_and(|t| t <= now) {
                        worker = WorkerId::new();
                        inv.lease = Lease { owner: Some(worker), fence: Fence(fence.0 + 1), expires_at_ms: Some(now + TTL) };
                    }
                    Ok(Vec::new())
                }
                Op::Tick(ms) => { now += ms; Ok(Vec::new()) }
            };
            match result {
                Err(_) => prop_assert_eq!(&inv, &before, "a refused transition changes nothing"),
                Ok(events) => {
                    seq += events.len() as u64;
                    if events.iter().any(|e| matches!(e, EventKind::LateOutcome { .. })) {
                        if matches!(before.state, InvocationState::Unknown { .. }) {
                            let settled = inv.state == before.state || inv.state.is_terminal();
                            prop_assert!(settled, "a late outcome only resolves an unknown");
                        } else {
                            prop_assert_eq!(&inv.state, &before.state, "a late outcome is not applied");
                        }
                    }
                }
            }
            // Invariants.
            prop_assert!(inv.lease.fence >= before.lease.fence, "the fence never decreases");
            if write {
                prop_assert!(inv.attempts <= 1, "a write is dispatched at most once");
            } else {
                prop_assert!(inv.attempts <= before.attempts + 1);
            }
            if let Some(t) = &terminal {
                prop_assert_eq!(&inv.state, t, "a terminal state never changes");
            } else if inv.state.is_terminal() {
                terminal = Some(inv.state.clone());
            }
            if inv.state.is_settled() {
                prop_assert!(inv.lease.owner.is_none(), "settled invocations hold no lease");
            }
            prop_assert_eq!((inv.id, &inv.request, &inv.digest), (before.id, &before.request, &before.digest));
        }
        let _ = seq;
    }
}
