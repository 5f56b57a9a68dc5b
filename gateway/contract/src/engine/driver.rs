//! The driver: one task per invocation in flight. It holds the lease, records each attempt
//! before dispatching it (G3), renews the lease while the upstream works, propagates
//! cancellation (G8) and commits the outcome under its fence (G6).

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{Instrument, debug, info_span, warn};

use super::{FaultPoint, Inner};
use crate::error::Error;
use crate::event::EventKind;
use crate::id::AttemptId;
use crate::ports::{CancelAck, DispatchCall, UpstreamError};
use crate::state::{Fence, Invocation, InvocationState};

pub(super) async fn drive(inner: Arc<Inner>, inv: Invocation, cancel: Arc<Notify>) {
    let span = info_span!("invocation", invocation.id = %inv.id, target = %inv.target, fence = inv.lease.fence.0);
    let id = inv.id;
    if let Err(e) = run(&inner, inv, &cancel).instrument(span.clone()).await {
        span.in_scope(|| debug!(error = %e, "driver stopped"));
    }
    inner.driver_done(id);
}

async fn run(inner: &Arc<Inner>, mut inv: Invocation, cancel: &Notify) -> Result<(), Error> {
    let fence = inv.lease.fence;
    loop {
        match &inv.state {
            InvocationState::Admitted => {}
            InvocationState::Retrying { retry_at_ms, .. } => {
                let wait = retry_at_ms.saturating_sub(inner.store.now().await?);
                tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(0))).await;
            }
            InvocationState::Dispatching { .. } => {
                let max = inner.cfg.retry.max_attempts;
                let worker = inner.cfg.worker;
                inv = apply(inner, inv.id, move |i, now| i.recover_lost_attempt(worker, fence, now, max)).await?;
                continue;
            }
            _ => return Ok(()),
        }
        if *inner.stopping.borrow() {
            return Ok(());
        }
        inner.faults.reached(FaultPoint::BeforeDispatch, inv.id).await;
        let (worker, ttl) = (inner.cfg.worker, inner.cfg.ttl_ms());
        inv = apply(inner, inv.id, move |i, now| i.begin_attempt(worker, fence, now, ttl)).await?;
        let InvocationState::Dispatching { attempt, attempt_no, .. } = inv.state else {
            return Ok(());
        };
        let call = DispatchCall {
            invocation: inv.id,
            attempt,
            attempt_no,
            principal: inv.principal.clone(),
            target: inv.target.clone(),
            request: inv.request.clone(),
        };
        let result = attempt_call(inner, &call, fence, cancel).await;
        inner.faults.reached(FaultPoint::AfterUpstreamReply, inv.id).await;
        inv = commit(inner, &call, fence, result).await?;
    }
}

/// Runs one transition and wakes watchers when it appended events.
async fn apply<F>(inner: &Inner, id: crate::id::InvocationId, f: F) -> Result<Invocation, Error>
where
    F: FnOnce(&mut Invocation, crate::Millis) -> Result<Vec<EventKind>, Error> + Send + 'static,
{
    let (inv, events) = inner.store.transition(id, Box::new(f)).await?;
    if !events.is_empty() {
        inner.notify_changed();
    }
    Ok(inv)
}

/// Sends the attempt; meanwhile renews the lease and forwards a cancellation once.
async fn attempt_call(
    inner: &Inner,
    call: &DispatchCall,
    fence: Fence,
    cancel: &Notify,
) -> Result<serde_json::Value, UpstreamError> {
    let Some(upstream) = inner.upstreams.upstream(&call.target.upstream) else {
        return Err(UpstreamError::Rejected {
            code: "upstream_not_configured".into(),
            message: format!("upstream `{}` is not configured on this gateway", call.target.upstream),
        });
    };
    let mut dispatch = pin!(upstream.dispatch(call));
    let mut deadline = pin!(tokio::time::sleep(inner.cfg.attempt_timeout));
    let mut renew = tokio::time::interval(inner.cfg.lease_ttl / 3);
    renew.tick().await;
    let mut cancel_sent = false;
    loop {
        tokio::select! {
            r = &mut dispatch => return r,
            _ = &mut deadline => {
                return Err(UpstreamError::Lost {
                    message: format!("no reply within {} ms", inner.cfg.attempt_timeout.as_millis()),
                });
            }
            _ = renew.tick() => {
                let (worker, ttl) = (inner.cfg.worker, inner.cfg.ttl_ms());
                match inner.store.transition(call.invocation, Box::new(move |i, now| i.renew(worker, fence, now, ttl))).await {
                    Ok((inv, _)) if inv.cancel.is_some() && !cancel_sent => {
                        cancel_sent = true;
                        if upstream.cancel(call).await == CancelAck::Confirmed {
                            return Err(UpstreamError::Canceled);
                        }
                    }
                    Ok(_) => {}
                    Err(e) => warn!(error = %e, "lease renewal failed; the outcome may be refused as late"),
                }
            }
            _ = cancel.notified(), if !cancel_sent => {
                cancel_sent = true;
                if upstream.cancel(call).await == CancelAck::Confirmed {
                    return Err(UpstreamError::Canceled);
                }
            }
        }
    }
}

/// Classifies and commits an attempt's result under the driver's fence.
async fn commit(
    inner: &Inner,
    call: &DispatchCall,
    fence: Fence,
    result: Result<serde_json::Value, UpstreamError>,
) -> Result<Invocation, Error> {
    let policy = inner.cfg.retry;
    let backoff = policy.backoff(call.attempt_no);
    let (effect, attempt_no, attempt): (_, _, AttemptId) = (call.target.effect, call.attempt_no, call.attempt);
    let (worker, ttl) = (inner.cfg.worker, inner.cfg.ttl_ms());
    let (inv, events) = inner
        .store
        .transition(
            call.invocation,
            Box::new(move |i, now| {
                let outcome = policy.classify(result, effect, attempt_no, backoff, now);
                Ok(i.record_outcome(worker, fence, attempt, outcome, now, ttl))
            }),
        )
        .await?;
    inner.notify_changed();
    if events.first().is_some_and(|e| matches!(e.kind, EventKind::LateOutcome { .. })) {
        warn!(attempt = %attempt, "lease lost before the outcome was committed; recorded as a late outcome");
        return Err(Error::conflict("lease lost"));
    }
    Ok(inv)
}
