//! Recovery's second half: `unknown` outcomes resolved from evidence. For every upstream that
//! can tell what became of a lost attempt ([`Upstream::resolver`]), one keyset page of its
//! `unknown` invocations each `resolve_interval`; each one is claimed (a durable claim on the
//! invocation, so one worker at a time gathers evidence, and the next try waits out the claim),
//! its upstream asked, and the decision reconciled. Undecided ones stay `unknown` and are asked
//! again once the claim lapses; an operator can reconcile them at any time.

use std::collections::HashMap;
use std::sync::Arc;

use tracing::{info, warn};

use super::Inner;
use crate::id::InvocationId;
use crate::ports::{RESOLVE_CLAIM, Upstream};
use crate::principal::Principal;

/// Invocations asked for per upstream per pass.
const PAGE: u32 = 100;

/// Scans until the future is dropped (the engine's recovery drops it at shutdown). The
/// resolving upstreams are configured at start-up: with none, it only waits.
pub(super) async fn run(inner: Arc<Inner>) {
    let names = inner.upstreams.resolvers();
    if names.is_empty() {
        return std::future::pending().await;
    }
    let mut cursors: HashMap<String, Option<InvocationId>> = HashMap::new();
    loop {
        for name in &names {
            let after = cursors.get(name).copied().flatten();
            let next = pass(&inner, name, after).await;
            cursors.insert(name.clone(), next);
        }
        tokio::time::sleep(inner.cfg.resolve_interval).await;
    }
}

/// One page of `upstream`'s `unknown` invocations after `after`; returns where the next page
/// starts (`None`: from the beginning).
async fn pass(inner: &Arc<Inner>, upstream: &str, after: Option<InvocationId>) -> Option<InvocationId> {
    let (up, subject) = inner.upstreams.upstream(upstream).and_then(|u| u.resolver().map(|s| (u, s)))?;
    let scanned = match inner.store.unknown_of(upstream, after, PAGE).await {
        Ok(page) if page.is_empty() => return None,
        Ok(page) => inner.store.now().await.map(|now| (page, now)),
        Err(e) => Err(e),
    };
    let (page, now) = match scanned {
        Ok(scanned) => scanned,
        Err(e) => {
            warn!(upstream, error = %e, "cannot scan unknown outcomes; retrying");
            return after;
        }
    };
    let next = if page.len() < PAGE as usize { None } else { page.last().map(|i| i.id) };
    // One claimed (by anyone) is left alone until its claim lapses; the claim itself decides,
    // in the store's transaction, so this only saves round trips.
    for inv in page.into_iter().filter(|i| i.lease.expires_at_ms.is_none_or(|t| t <= now)) {
        tokio::spawn(resolve_one(inner.clone(), up.clone(), subject, inv.id));
    }
    next
}

/// Claims one `unknown` invocation and reconciles it if its upstream's evidence decides it.
async fn resolve_one(inner: Arc<Inner>, up: Arc<dyn Upstream>, subject: &'static str, id: InvocationId) {
    let (worker, ttl) = (inner.cfg.worker, i64::try_from(RESOLVE_CLAIM.as_millis()).unwrap_or(i64::MAX));
    let claimed = inner.store.transition(id, Box::new(move |inv, now| inv.claim_unknown(worker, now, ttl))).await;
    let Ok((inv, _)) = claimed else { return }; // another worker has it, or it was resolved
    // Leave the claim a margin: a decision reached after it lapsed may race another worker's.
    let ask = up.resolve(&inv);
    let decision =
        match tokio::time::timeout(RESOLVE_CLAIM.saturating_sub(std::time::Duration::from_secs(5)), ask).await {
            Ok(Some(d)) => d,
            Ok(None) | Err(_) => return, // undecided: asked again once the claim lapses
        };
    info!(invocation.id = %id, upstream = %inv.target.upstream, "reconciling an unknown outcome from evidence");
    let by = Principal::new(inv.principal.tenant.clone(), subject);
    if let Err(e) = super::reconcile(&inner, &by, id, decision).await {
        warn!(invocation.id = %id, error = %e, "reconcile failed");
    }
}
