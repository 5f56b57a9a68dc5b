//! The driver: one task per invocation in flight. It holds the lease, records each attempt
//! before dispatching it (G3), renews the lease while the upstream works, propagates
//! cancellation (G8) and commits the outcome under its fence (G6).
//!
//! The driver keeps the record as its last transition returned it and passes it to
//! [`InvocationStore::transition_held`](crate::ports::InvocationStore::transition_held), which
//! may commit in one round trip while nothing else has touched the row.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{Instrument, debug, debug_span, info, info_span, warn};

use super::attempt::{send_window, upstream_span};
use super::early::Early;
use super::{FaultPoint, Inner};
use crate::Millis;
use crate::error::{Error, ErrorKind, FailureCode};
use crate::event::EventKind;
use crate::id::AttemptId;
use crate::ports::{CancelAck, DispatchCall, Upstream, UpstreamError};
use crate::principal::EffectClass;
use crate::relay::CallContext;
use crate::state::{AttemptOutcome, Fence, Invocation, InvocationState, StateName};
use crate::trace::TARGET;

pub(super) async fn drive(
    inner: Arc<Inner>,
    inv: Invocation,
    cancel: Arc<Notify>,
    context: Option<CallContext>,
    (via, started, early): (&'static str, bool, Option<Early>),
    span: tracing::Span,
) {
    span.record("via", via);
    span.record("fence", inv.lease.fence.0);
    // Deregisters even if the driver panics (an adapter bug): shutdown must not wait for it.
    let _done = Done { inner: inner.clone(), id: inv.id, fence: inv.lease.fence };
    let checked = if !matches!(via, "approval" | "recovery") || started {
        Ok(inv)
    } else {
        recheck(&inner, inv).instrument(span.clone()).await
    };
    let ran = match checked {
        Ok(inv) => run(&inner, inv, &cancel, context, (started, early)).instrument(span.clone()).await,
        Err(e) => Err(e),
    };
    match ran {
        Ok(state) => {
            span.record("state", state.name().as_str());
            if matches!(state.name(), StateName::Failed | StateName::Unknown) {
                failed(&span, state.name().as_str());
            }
        }
        Err(e) => span.in_scope(|| debug!(error = %e, "driver stopped")),
    }
}

/// An approved call about to be sent for the first time (taken up after its approval, or by
/// recovery before anything was sent) is put to the policy enforcement point once more, with
/// the approval's grant: a denial (an envelope or deny rule made since it was held, a grant
/// that does not check out or was spent elsewhere) fails it `policy_denied` and nothing runs.
/// Any other call is returned as it is.
async fn recheck(inner: &Arc<Inner>, inv: Invocation) -> Result<Invocation, Error> {
    if inv.attempts > 0 || !matches!(inv.state, InvocationState::Admitted) {
        return Ok(inv);
    }
    let events = inner.store.events(inv.id, 0, 1000).await?;
    let Some(grant) = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Approved { grant, .. } => Some(grant.clone()),
        _ => None,
    }) else {
        return Ok(inv); // never held
    };
    let ruling = inner.policy.recheck(&inv, grant.as_deref()).await;
    let crate::Verdict::Deny { reason } = ruling.verdict else {
        debug!(basis = %ruling.basis, "approved call checked again at dispatch");
        return Ok(inv);
    };
    info!(invocation.id = %inv.id, basis = %ruling.basis, "approved call refused at dispatch");
    let detail = serde_json::json!({ "stage": "dispatch", "verdict": "deny", "reason": reason, "basis": ruling.basis });
    inner.audit_step(inv.audit_entry(crate::AuditKind::Decision, "switchyard", detail)).await;
    let (worker, fence) = (inner.cfg.worker, inv.lease.fence);
    let refused = apply(inner, &inv, move |i, now| i.refuse_at_dispatch(worker, fence, now, reason.clone())).await?;
    inner.settled(&refused);
    inner.tell_refused(&refused).await;
    Ok(refused)
}

/// The span of an invocation a driver takes up without a face (recovery, an approval): under
/// the current span in the logs, in the caller's trace when the call was admitted with one.
pub(super) fn span_of(inv: &Invocation) -> tracing::Span {
    let span = info_span!(
        target: TARGET,
        "invocation",
        invocation.id = %inv.id,
        tenant = %inv.principal.tenant,
        upstream = %inv.target.upstream,
        operation = %inv.target.operation,
        effect = ?inv.target.effect,
        otel.kind = "server",
        via = tracing::field::Empty,
        fence = tracing::field::Empty,
        state = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
    );
    crate::trace::adopt(&span, inv.trace.as_ref());
    span
}

/// Marks a span as ended in error (OpenTelemetry's status), saying why.
pub(in crate::engine) fn failed(span: &tracing::Span, why: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_message", why);
}

/// Removes a driver from the running set when it ends, however it ends.
struct Done {
    inner: Arc<Inner>,
    id: crate::id::InvocationId,
    fence: crate::state::Fence,
}

impl Drop for Done {
    fn drop(&mut self) {
        if std::thread::panicking() {
            warn!(invocation.id = %self.id, "driver panicked; its lease lapses and recovery takes the invocation");
        }
        self.inner.driver_done(self.id, self.fence);
    }
}

/// Drives the invocation until it settles, is held elsewhere or the gateway stops; returns the
/// state it left it in.
async fn run(
    inner: &Arc<Inner>,
    mut inv: Invocation,
    cancel: &Notify,
    context: Option<CallContext>,
    (mut started, mut early): (bool, Option<Early>),
) -> Result<InvocationState, Error> {
    loop {
        // A read admitted with its first attempt recorded goes straight to the dispatch (once),
        // or takes up the reply of that attempt, sent while the admission committed.
        let begun = std::mem::take(&mut started);
        if !begun {
            match &inv.state {
                InvocationState::Admitted => {}
                InvocationState::Retrying { retry_at_ms, .. } => {
                    let wait = retry_at_ms.saturating_sub(inner.store.now().await?);
                    tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(0))).await;
                }
                InvocationState::Dispatching { attempt, .. } => {
                    inv = recover(inner, inv.clone(), *attempt).await?;
                    continue;
                }
                _ => return Ok(inv.state),
            }
            if *inner.stopping.borrow() {
                return Ok(inv.state);
            }
        }
        let span = debug_span!(
            target: TARGET,
            "attempt",
            attempt.no = tracing::field::Empty,
            state = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_message = tracing::field::Empty,
        );
        let early = early.take().filter(|_| begun);
        if !attempt(inner, &mut inv, cancel, context.as_ref(), (begun, early)).instrument(span.clone()).await? {
            return Ok(inv.state);
        }
        span.record("state", inv.state.name().as_str());
        if matches!(inv.state.name(), StateName::Failed | StateName::Unknown | StateName::Retrying) {
            failed(&span, inv.state.name().as_str());
        }
    }
}

/// One attempt: records it (unless the admission did: `begun`), sends it (unless it was sent
/// while the admission committed: `early`), commits its outcome into `inv`. `false` when there
/// was nothing to send.
async fn attempt(
    inner: &Arc<Inner>,
    inv: &mut Invocation,
    cancel: &Notify,
    context: Option<&CallContext>,
    (begun, early): (bool, Option<Early>),
) -> Result<bool, Error> {
    let (worker, ttl, fence) = (inner.cfg.worker, inner.cfg.ttl_ms(), inv.lease.fence);
    inner.faults.reached(FaultPoint::BeforeDispatch, inv.id).await;
    if !begun {
        *inv = apply(inner, inv, move |i, now| i.begin_attempt(worker, fence, now, ttl)).await?;
    }
    inner.faults.reached(FaultPoint::AttemptRecorded, inv.id).await;
    let InvocationState::Dispatching { attempt, attempt_no, .. } = inv.state else {
        return Ok(false);
    };
    tracing::Span::current().record("attempt.no", attempt_no);
    let call = DispatchCall {
        invocation: inv.id,
        attempt,
        attempt_no,
        principal: inv.principal.clone(),
        target: inv.target.clone(),
        request: inv.request.clone(),
        context: context.cloned(),
        send_by: tokio::time::Instant::now() + send_window(inner.cfg.attempt_timeout),
    };
    let early = early.filter(|e| e.attempt() == attempt);
    let sent = early.as_ref().map_or_else(std::time::Instant::now, Early::sent);
    let upstream = inner.upstreams.upstream(&call.target.upstream);
    let result = attempt_call(inner, upstream.as_deref(), &call, inv, cancel, early).await;
    let elapsed = sent.elapsed();
    let recorded = upstream.is_some_and(|u| result.as_ref().is_ok_and(|v| u.answer_recorded(&call, v)));
    if call.target.effect == EffectClass::ReadOnly || recorded {
        answer_early(inner, &call, inv, &result, recorded);
    }
    inner.faults.reached(FaultPoint::AfterUpstreamReply, inv.id).await;
    *inv = commit(inner, &call, inv, result).await?;
    if let Some(m) = inner.meter.as_ref() {
        m.attempted(&inv.target, elapsed, inv.state.name().as_str());
    }
    inner.settled(inv);
    Ok(true)
}

/// Runs one transition as the lease holder and wakes watchers when it appended events.
async fn apply<F>(inner: &Inner, current: &Invocation, f: F) -> Result<Invocation, Error>
where
    F: Fn(&mut Invocation, Millis) -> Result<Vec<EventKind>, Error> + Send + Sync + 'static,
{
    let started = std::time::Instant::now();
    let span = debug_span!(target: TARGET, "commit", what = "transition");
    let (inv, events) = inner.store.transition_held(current, Box::new(f)).instrument(span).await?;
    inner.committed("transition", started);
    if !events.is_empty() {
        inner.notify_changed(&inv);
    }
    Ok(inv)
}

/// Recovers an attempt its worker lost. Its answer may be in the journal already, recorded late
/// because the worker's lease ran out before it could commit it: that answer settles the call.
/// Only an outcome truly lost makes a write `unknown` (G4) or a read tried again (G5). The
/// journal is read, then the change is made only if nothing was appended since (else read again).
async fn recover(inner: &Inner, mut inv: Invocation, attempt: AttemptId) -> Result<Invocation, Error> {
    let (worker, fence, ttl, max) =
        (inner.cfg.worker, inv.lease.fence, inner.cfg.ttl_ms(), inner.cfg.retry.max_attempts);
    for _ in 0..5 {
        let journal = inner.store.events(inv.id, inv.last_seq.saturating_sub(100), 1000).await?;
        let seen = journal.last().map_or(inv.last_seq, |e| e.seq);
        let answer = journal.iter().rev().find_map(|e| match &e.kind {
            EventKind::LateOutcome { attempt: a, outcome, detail, .. } if *a == attempt => {
                AttemptOutcome::from_late(outcome, detail.as_ref())
            }
            _ => None,
        });
        let change = move |i: &mut Invocation, now| match &answer {
            _ if i.last_seq != seen => Ok(Vec::new()),
            Some(answer) => Ok(i.record_outcome(worker, fence, attempt, answer.clone(), now, ttl)),
            None => i.recover_lost_attempt(worker, fence, now, max),
        };
        inv = apply(inner, &inv, change).await?;
        if !matches!(inv.state, InvocationState::Dispatching { attempt: a, .. } if a == attempt) {
            break;
        }
    }
    Ok(inv)
}

/// Sends the attempt (or waits for the reply of the one sent early); meanwhile renews the lease
/// (keeping `inv` current) and forwards a cancellation until the upstream confirms it or the
/// attempt ends.
async fn attempt_call(
    inner: &Inner,
    upstream: Option<&dyn Upstream>,
    call: &DispatchCall,
    inv: &mut Invocation,
    cancel: &Notify,
    early: Option<Early>,
) -> Result<serde_json::Value, UpstreamError> {
    let Some(upstream) = upstream else {
        return Err(UpstreamError::Rejected {
            code: FailureCode::UpstreamNotConfigured,
            message: format!("upstream `{}` is not configured on this gateway", call.target.upstream),
            details: None,
        });
    };
    let (worker, fence, ttl) = (inner.cfg.worker, inv.lease.fence, inner.cfg.ttl_ms());
    let mut dispatch = pin!(async move {
        match early {
            Some(early) => early.reply().await,
            None => upstream.dispatch(call).instrument(upstream_span(call)).await,
        }
    });
    let limit = upstream.attempt_timeout(inner.cfg.attempt_timeout);
    let mut deadline = pin!(tokio::time::sleep(limit));
    // First renewal one period from now. (Not `interval` + an initial `tick().await`: that
    // tick goes through the timer wheel and costs up to a millisecond on every attempt.)
    let period = inner.cfg.lease_ttl / 3;
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    // An unconfirmed cancellation is re-sent every 200 ms for a while (the upstream may not
    // know the call yet), then on every renewal.
    let mut resend = tokio::time::interval_at(tokio::time::Instant::now() + CANCEL_RESEND, CANCEL_RESEND);
    let mut resends_left = 0u32;
    loop {
        tokio::select! {
            r = &mut dispatch => return r,
            _ = &mut deadline => {
                return Err(UpstreamError::Lost { message: format!("no reply within {} ms", limit.as_millis()) });
            }
            _ = renew.tick() => {
                match apply(inner, inv, move |i, now| i.renew(worker, fence, now, ttl)).await {
                    Ok(fresh) => *inv = fresh,
                    // Another worker holds the call now: this attempt stops here (what it has
                    // not sent yet, it never sends; its outcome would be refused as late).
                    Err(e) if e.kind == crate::error::ErrorKind::Conflict => {
                        warn!(error = %e, "lease lost while the attempt ran: it stops");
                        return Err(UpstreamError::Lost { message: format!("the attempt stopped: {}", e.message) });
                    }
                    Err(e) => warn!(error = %e, "lease renewal failed; the outcome may be refused as late"),
                }
                // A cancellation the upstream has not confirmed is sent again on every renewal:
                // it may have arrived before the upstream knew the call (G8).
                if inv.cancel.is_some() && upstream.cancel(call).await == CancelAck::Confirmed {
                    return Err(UpstreamError::Canceled);
                }
            }
            _ = cancel.notified() => {
                if upstream.cancel(call).await == CancelAck::Confirmed {
                    return Err(UpstreamError::Canceled);
                }
                resends_left = CANCEL_RESENDS;
                resend.reset();
            }
            _ = resend.tick(), if resends_left > 0 => {
                resends_left -= 1;
                if upstream.cancel(call).await == CancelAck::Confirmed {
                    return Err(UpstreamError::Canceled);
                }
            }
        }
    }
}

const CANCEL_RESEND: Duration = Duration::from_millis(200);
const CANCEL_RESENDS: u32 = 25;

/// How an attempt's result changes the invocation: classified by the retry policy, recorded
/// under the driver's fence.
fn outcome_of(
    inner: &Inner,
    call: &DispatchCall,
    fence: Fence,
) -> impl Fn(&mut Invocation, Result<serde_json::Value, UpstreamError>, Millis) -> Vec<EventKind>
+ Clone
+ Send
+ Sync
+ 'static {
    let policy = inner.cfg.retry;
    let backoff = policy.backoff(call.attempt_no);
    let (effect, attempt_no, attempt) = (call.target.effect, call.attempt_no, call.attempt);
    let (worker, ttl) = (inner.cfg.worker, inner.cfg.ttl_ms());
    move |i, result, now| {
        let outcome = policy.classify(result, effect, attempt_no, backoff, now);
        i.record_outcome(worker, fence, attempt, outcome, now, ttl)
    }
}

/// Gives the callers that take it (see [`Ingress::answers_reads_early`](crate::ports::Ingress::answers_reads_early))
/// a read's outcome as its reply settles it, before the commit — every caller, when the upstream
/// `recorded` the reply itself ([`Upstream::answer_recorded`](crate::ports::Upstream::answer_recorded)):
/// the invocation as the commit will record it (by this process's clock), when that is
/// terminal. A reply to retry, or one this worker's lease would not cover, answers nobody early.
fn answer_early(
    inner: &Inner,
    call: &DispatchCall,
    inv: &Invocation,
    result: &Result<serde_json::Value, UpstreamError>,
    recorded: bool,
) {
    inner.hub.answered(&inv.id, recorded, || {
        let mut answer = inv.clone();
        let now = crate::wall_clock_ms();
        let events = outcome_of(inner, call, inv.lease.fence)(&mut answer, result.clone(), now);
        if !answer.state.is_terminal() || events.iter().any(|e| matches!(e, EventKind::LateOutcome { .. })) {
            return None;
        }
        answer.last_seq += events.len() as u64;
        answer.updated_at_ms = now;
        Some(answer)
    });
}

/// Classifies and commits an attempt's result under the driver's fence.
async fn commit(
    inner: &Inner,
    call: &DispatchCall,
    current: &Invocation,
    result: Result<serde_json::Value, UpstreamError>,
) -> Result<Invocation, Error> {
    let outcome = outcome_of(inner, call, current.lease.fence);
    let record = move || -> crate::ports::Transition {
        let (result, outcome) = (result.clone(), outcome.clone());
        Box::new(move |i, now| Ok(outcome(i, result.clone(), now)))
    };
    // The outcome is the one thing that must not be lost: while the store is away, try again
    // with backoff for as long as the lease may still hold. (A retry after a commit whose reply
    // was lost finds the outcome applied and only appends a late event.)
    let give_up = tokio::time::Instant::now() + inner.cfg.lease_ttl;
    let mut pause = Duration::from_millis(50);
    let (inv, events) = loop {
        let started = std::time::Instant::now();
        let span = debug_span!(target: TARGET, "commit", what = "outcome");
        let done = inner.store.transition_held(current, record()).instrument(span).await;
        inner.committed("transition", started);
        match done {
            Err(e) if e.kind == ErrorKind::Unavailable && tokio::time::Instant::now() + pause < give_up => {
                warn!(error = %e, retry_in_ms = pause.as_millis(), "cannot commit the outcome yet; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            r => break r?,
        }
    };
    inner.notify_changed(&inv);
    if events.first().is_some_and(|e| matches!(e.kind, EventKind::LateOutcome { .. })) {
        warn!(attempt = %call.attempt, "lease lost before the outcome was committed; recorded as a late outcome");
        return Err(Error::conflict("lease lost"));
    }
    Ok(inv)
}
