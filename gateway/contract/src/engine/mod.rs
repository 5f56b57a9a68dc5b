//! The engine: admits calls, drives each one through the store's transitions and the upstream,
//! recovers what other (or earlier) workers left behind, and serves watchers.
//!
//! One tokio task ("driver") per invocation in flight. Drivers hold the invocation's lease and
//! renew it while an upstream call runs; every write they make is fenced, so a driver that lost
//! its lease can only append a late event. A recovery loop takes expired leases (G7).

mod attempt;
mod audit;
mod builder;
mod config;
mod decide;
mod driver;
mod early;
mod hub;
mod policy;
mod resolve;
mod watch;
mod weak;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::Millis;
use crate::audit::{AuditKind, AuditLog};
use crate::digest::RequestDigest;
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::id::{InvocationId, WorkerId};
use crate::policy::PolicyPoint;
use crate::ports::{
    Admission, Changed, ClientGone, InvocationStore, Invocations, ListQuery, Page, Passage, Submission, Submitted,
    Transition, UpstreamRegistry, Waited,
};
use crate::principal::{Principal, TenantId};
use crate::state::{Decision, Invocation, NewInvocation};

pub use builder::EngineBuilder;
pub use config::{EngineConfig, FaultHook, FaultPoint, NoFaults};
pub use policy::RetryPolicy;

/// With a change feed, how often the sweep (or, without one running, each follower) still
/// re-reads, for notices lost without a reconnect.
const FEED_FALLBACK_POLL: Duration = Duration::from_secs(10);
/// A follower's own poll while the sweep reads for it: effectively never.
const NO_POLL: Duration = Duration::from_secs(24 * 3600);

/// One driver running in this process.
struct Running {
    /// The fence the driver holds: a newer driver for the same invocation replaces this entry.
    fence: crate::state::Fence,
    cancel: Arc<Notify>,
    task: tokio::task::AbortHandle,
}

pub(crate) struct Inner {
    store: Arc<dyn InvocationStore>,
    upstreams: Arc<dyn UpstreamRegistry>,
    faults: Arc<dyn FaultHook>,
    /// Asked before every admission.
    policy: Arc<dyn PolicyPoint>,
    cfg: EngineConfig,
    /// Wakes the waiters and watchers of each invocation this process or (heard on the feed)
    /// another replica changed.
    hub: Arc<hub::Hub>,
    /// Set once the recovery loop's sweep runs: followers then do not poll by themselves.
    sweeping: std::sync::atomic::AtomicBool,
    feed: Option<Arc<dyn crate::ports::ChangeFeed>>,
    /// Where decisions, approvals, expiries and reconciliations are recorded (none: not audited).
    audit: Option<Arc<dyn AuditLog>>,
    /// Where the engine's counts and timings go (`GET /metrics`), if anywhere.
    meter: Option<Arc<dyn crate::Meter>>,
    running: Mutex<HashMap<InvocationId, Running>>,
    stopping: tokio::sync::watch::Sender<bool>,
    /// Set once shutdown has drained (or stopped) every driver: waits end then, not before.
    drained: tokio::sync::watch::Sender<bool>,
}

/// The engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("worker", &self.inner.cfg.worker).finish_non_exhaustive()
    }
}

impl Engine {
    pub fn worker(&self) -> WorkerId {
        self.inner.cfg.worker
    }

    /// Starts the recovery loop: one pass now, then every `recovery_interval` until shutdown.
    pub fn start(&self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.recovery())
    }

    /// The recovery loop, to run on the caller's task set (see [`Engine::start`]): expired leases
    /// every `recovery_interval`, and the `unknown` outcomes of upstreams that resolve them from
    /// evidence every `resolve_interval`, until shutdown.
    pub fn recovery(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let inner = self.inner.clone();
        async move {
            let leases = async {
                loop {
                    if let Err(e) = Inner::recover_once(&inner).await {
                        warn!(error = %e, "recovery pass failed");
                    }
                    tokio::time::sleep(inner.cfg.recovery_interval).await;
                }
            };
            let unknowns = resolve::run(inner.clone());
            let sweep = async {
                inner.sweeping.store(true, std::sync::atomic::Ordering::Relaxed);
                loop {
                    tokio::time::sleep(inner.sweep_every()).await;
                    if let Err(e) = Inner::sweep(&inner).await {
                        warn!(error = %e, "sweep for changes made elsewhere failed");
                    }
                }
            };
            let mut stopping = inner.stopping.subscribe();
            tokio::select! {
                () = leases => {}
                () = unknowns => {}
                () = sweep => {}
                _ = stopping.wait_for(|s| *s) => {}
            }
        }
    }

    /// Admits a submission as invocation `id` (or finds the one its idempotency key already
    /// names), and starts driving it.
    async fn admit(&self, s: Submission, id: InvocationId) -> Result<Submitted, Error> {
        // The invocation's own span, the root of its part of a trace: a child of the caller's
        // span when the caller sent a trace context, of the face's request span in the logs.
        let span = tracing::info_span!(
            target: crate::trace::TARGET,
            "invocation",
            invocation.id = %id,
            tenant = %s.principal.tenant,
            upstream = %s.upstream,
            operation = %s.operation,
            ingress = s.ingress.name(),
            otel.kind = "server",
            effect = tracing::field::Empty,
            via = tracing::field::Empty,
            fence = tracing::field::Empty,
            attached = tracing::field::Empty,
            state = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_message = tracing::field::Empty,
        );
        crate::trace::adopt(&span, s.trace.as_ref());
        let admitted = self.admit_under(s, id, &span).await;
        match &admitted {
            Ok(Submitted { invocation, created: false }) => {
                span.record("invocation.id", tracing::field::display(invocation.id));
                span.record("attached", true);
            }
            Ok(_) => {}
            Err(e) => driver::failed(&span, &e.message),
        }
        admitted
    }

    async fn admit_under(&self, mut s: Submission, id: InvocationId, span: &tracing::Span) -> Result<Submitted, Error> {
        use tracing::Instrument as _;
        let inner = &self.inner;
        if *inner.stopping.borrow() {
            return Err(Error::unavailable("the gateway is shutting down; nothing was admitted"));
        }
        let (ingress, caller, context) = (s.ingress, s.caller(), s.context.take());
        let admission = tracing::debug_span!(target: crate::trace::TARGET, parent: span, "admission");
        let subject = s.principal.subject.clone();
        let (digest, admitted, early) = self.admission(s, id, context.as_ref()).instrument(admission).await?;
        if !matches!(&admitted, Ok(Admission::Created(inv)) if inv.state.name().is_active()) {
            inner.policy.release(id); // it does not run here: a slot it took is free again
        }
        let submitted = match admitted? {
            Admission::Created(inv) => {
                inner.notify_changed(&inv);
                if let Some(m) = inner.meter.as_ref() {
                    m.admitted(caller, &inv.target);
                }
                span.record("effect", tracing::field::debug(inv.target.effect));
                if inv.state.name().is_active() {
                    // A read may arrive with its first attempt already recorded by the admission
                    // (and sent while it committed).
                    let started = matches!(inv.state, crate::state::InvocationState::Dispatching { .. });
                    let early = early.filter(|_| started);
                    if let Some(early) = &early {
                        early.admitted();
                    }
                    inner.spawn_driver(inv.clone(), context, (ingress.name(), started, early), Some(span.clone()));
                } else {
                    span.record("state", inv.state.name().as_str());
                }
                Submitted { invocation: inv, created: true }
            }
            // A key is its subject's: another subject of the tenant never attaches to (nor
            // learns of) the call that holds it.
            Admission::Existing(inv) if inv.principal.subject != subject => {
                return Err(Error::conflict(
                    "this idempotency key is taken in the tenant by another caller; choose another; \
                     nothing was dispatched",
                ));
            }
            Admission::Existing(inv) if inv.digest == digest => Submitted { invocation: inv, created: false },
            Admission::Existing(inv) => {
                return Err(Error::conflict(format!(
                    "idempotency key `{}` was already used by {} with a different request; nothing was dispatched",
                    inv.ingress_key.as_ref().map_or("", |k| k.as_str()),
                    inv.id
                )));
            }
        };
        // The caller's span (a face's request) names the invocation it made or attached to.
        tracing::Span::current().record("invocation.id", tracing::field::display(submitted.invocation.id));
        Ok(submitted)
    }

    /// The admission of a submission: its target, the policy's ruling and the admitting commit
    /// (the store's answer is returned as it came, for the caller to release what it must), and
    /// the first attempt of a read, sent while that commit runs.
    async fn admission(
        &self,
        s: Submission,
        id: InvocationId,
        context: Option<&crate::relay::CallContext>,
    ) -> Result<(RequestDigest, Result<Admission, Error>, Option<early::Early>), Error> {
        let inner = &self.inner;
        let target = inner.upstreams.target(&s.upstream, &s.operation)?;
        if let Some(owner) = inner.upstreams.owner(&s.upstream)
            && owner != s.ingress
        {
            return Err(Error::forbidden(format!(
                "upstream `{}` is served through {}, which checks each call first; {} cannot call it",
                s.upstream,
                owner.describe(),
                s.ingress.describe()
            )));
        }
        if let Some(parent) = s.parent
            && inner.store.get(Some(&s.principal.tenant), parent).await?.is_none()
        {
            return Err(Error::invalid_input(format!("parent invocation {parent} not found")));
        }
        let digest = RequestDigest::compute(&target.upstream, &target.operation, &s.request)?;
        let (hold, audit) = self.rule(&s, &target, &digest, id).await?;
        let proves_unsent = inner.upstreams.upstream(&target.upstream).is_some_and(|u| u.proves_unsent(&s.request));
        let draft = NewInvocation {
            id,
            principal: s.principal,
            target,
            request: s.request,
            digest: digest.clone(),
            ingress_key: s.ingress_key,
            parent: s.parent,
            trace: s.trace,
            worker: inner.cfg.worker,
            lease_ttl_ms: inner.cfg.ttl_ms(),
            hold,
            // A read's first attempt commits with its admission, and so does a write's whose
            // upstream proves an unsent attempt.
            first_attempt: Some(crate::id::AttemptId::new()),
            proves_unsent,
            audit,
        };
        // A read is sent now, while its admission commits; its caller is answered only after.
        let early = early::Early::send(inner, &draft, context);
        let started = std::time::Instant::now();
        let admitted = inner.store.admit(draft).await;
        inner.committed("admission", started);
        Ok((digest, admitted, early))
    }

    /// Runs one recovery pass now; returns how many invocations it took over.
    pub async fn recover_once(&self) -> Result<usize, Error> {
        Inner::recover_once(&self.inner).await
    }

    /// Applies this process's snapshots of `inv` (re-reading it on another replica's notice, and
    /// at every poll) until it settles or `limit` passes. With `early`, a read's answer settles it
    /// before its commit (see [`Ingress::answers_reads_early`](crate::ports::Ingress::answers_reads_early));
    /// an answer the upstream recorded itself does, whatever `early`.
    async fn follow(
        &self,
        mut following: hub::Following,
        mut inv: Invocation,
        limit: Duration,
        early: bool,
    ) -> Result<Invocation, Error> {
        let mut resyncs = following.rx.borrow().resyncs;
        let (tenant, id) = (inv.principal.tenant.clone(), inv.id);
        let deadline = tokio::time::Instant::now() + limit;
        // One timer for the whole wait: snapshots of other invocations must not keep resetting it.
        let every = self.inner.poll_every();
        let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut drained = self.inner.drained.subscribe();
        while !inv.state.is_settled() {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                // Shut down: the drivers are done or stopped; answer with the state as it is.
                // (While shutdown drains, waits go on: a call that finishes within the grace
                // period is answered with its outcome.)
                _ = stopped(&mut drained) => break,
                // The slot lives as long as `following`: its sender never goes away first.
                Ok(()) = following.rx.changed() => {
                    let seen = following.rx.borrow_and_update().clone();
                    // Snapshots only move forward: keep the newest by sequence number.
                    if let Some(snapshot) = seen.snapshot.filter(|s| s.last_seq >= inv.last_seq) {
                        inv = (*snapshot).clone();
                    }
                    let takes = early || seen.recorded;
                    if let Some(answer) = seen.answer.filter(|a| takes && a.last_seq > inv.last_seq) {
                        inv = (*answer).clone();
                    }
                    if seen.moved > inv.last_seq || seen.resyncs != resyncs {
                        resyncs = seen.resyncs;
                        inv = self.inner.owned(&tenant, id).await?;
                    }
                },
                _ = poll.tick() => inv = self.inner.owned(&tenant, id).await?,
            }
        }
        Ok(inv)
    }

    /// Hears other replicas' changes on `feed` until shutdown (the builder calls it once).
    fn listen(&self, feed: Arc<dyn crate::ports::ChangeFeed>) {
        let (hub, mut stopping) = (self.inner.hub.clone(), self.inner.stopping.subscribe());
        tokio::spawn(async move {
            use futures::StreamExt as _;
            let mut heard = feed.heard();
            loop {
                tokio::select! {
                    next = heard.next() => match next {
                        Some(Changed::Tasks | Changed::Task { .. }) => {}
                        Some(Changed::Invocation { id, seq }) => hub.moved(id, seq),
                        Some(Changed::Resync) => hub.resync(),
                        None => break,
                    },
                    _ = stopped(&mut stopping) => break,
                }
            }
        });
    }

    /// How many invocations this process is driving.
    pub fn in_flight(&self) -> usize {
        self.inner.running.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Graceful shutdown: stop admitting and recovering, let drivers finish for up to `grace`,
    /// then stop the rest and release every lease this worker holds so another worker (or the
    /// next start) recovers them at once.
    pub async fn shutdown(&self, grace: Duration) -> Result<u64, Error> {
        self.inner.stopping.send_replace(true);
        let deadline = tokio::time::Instant::now() + grace;
        while self.in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let left: Vec<Running> = match self.inner.running.lock() {
            Ok(mut m) => m.drain().map(|(_, r)| r).collect(),
            Err(_) => Vec::new(),
        };
        for r in &left {
            r.task.abort();
        }
        self.inner.drained.send_replace(true);
        let released = self.inner.store.release_leases(self.inner.cfg.worker).await?;
        info!(aborted = left.len(), released, "engine stopped");
        Ok(released)
    }
}

impl Inner {
    async fn recover_once(self: &Arc<Self>) -> Result<usize, Error> {
        if *self.stopping.borrow() {
            return Ok(0);
        }
        let taken = self.store.acquire_expired(self.cfg.worker, self.cfg.ttl_ms(), self.cfg.recovery_batch).await?;
        let n = taken.len();
        if let (Some(m), true) = (self.meter.as_ref(), n > 0) {
            m.taken_over(n);
        }
        for inv in taken {
            info!(invocation.id = %inv.id, state = inv.state.name().as_str(), fence = inv.lease.fence.0, "recovering invocation");
            self.spawn_driver(inv, None, ("recovery", false, None), None);
        }
        self.expire_holds().await?;
        Ok(n)
    }

    /// Fails the calls held for approval longer than `approval_ttl` (on the store's clock).
    async fn expire_holds(&self) -> Result<(), Error> {
        let ttl = i64::try_from(self.cfg.approval_ttl.as_millis()).unwrap_or(i64::MAX);
        for id in self.store.held_longer_than(ttl, self.cfg.recovery_batch).await? {
            let (inv, events) =
                self.store.transition(id, Box::new(move |inv, now| Ok(inv.expire_approval(now, ttl)))).await?;
            if !events.is_empty() {
                info!(invocation.id = %id, "approval expired");
                self.notify_changed(&inv);
                self.settled(&inv);
                self.audit_step(inv.audit_entry(AuditKind::ApprovalExpired, "switchyard", serde_json::json!({}))).await;
                self.tell_refused(&inv).await;
            }
        }
        Ok(())
    }

    /// Tells `inv`'s upstream that the held call will never run (denied or expired).
    async fn tell_refused(&self, inv: &Invocation) {
        if let Some(upstream) = self.upstreams.upstream(&inv.target.upstream) {
            upstream.refused(inv).await;
        }
    }

    /// `via`: where the call came from (its ingress, `recovery` or `approval`), for the driver's
    /// span; `started`: the admission itself recorded the first attempt (a read), so the driver
    /// dispatches it at once; `span`: the invocation's span when its admission opened one here
    /// (else the driver opens one under the current span).
    fn spawn_driver(
        self: &Arc<Self>,
        inv: Invocation,
        context: Option<crate::relay::CallContext>,
        how: (&'static str, bool, Option<early::Early>),
        span: Option<tracing::Span>,
    ) {
        let cancel = Arc::new(Notify::new());
        let (id, fence) = (inv.id, inv.lease.fence);
        let Ok(mut running) = self.running.lock() else { return };
        let span = span.unwrap_or_else(|| driver::span_of(&inv));
        let task = tokio::spawn(driver::drive(self.clone(), inv, cancel.clone(), context, how, span));
        running.insert(id, Running { fence, cancel, task: task.abort_handle() });
    }

    /// Forgets a finished driver, unless a newer one (higher fence) already replaced it.
    fn driver_done(&self, id: InvocationId, fence: crate::state::Fence) {
        if let Ok(mut m) = self.running.lock()
            && m.get(&id).is_some_and(|r| r.fence == fence)
        {
            m.remove(&id);
            self.policy.release(id);
        }
    }

    /// Tells the meter how long a commit of `what` took (since `started`).
    pub(super) fn committed(&self, what: &'static str, started: std::time::Instant) {
        if let Some(m) = self.meter.as_ref() {
            m.committed(what, started.elapsed());
        }
    }

    /// Tells the meter that `inv` just entered a settled state, if it did.
    pub(super) fn settled(&self, inv: &Invocation) {
        if let Some(m) = self.meter.as_ref()
            && (inv.state.is_terminal() || matches!(inv.state, crate::state::InvocationState::Unknown { .. }))
        {
            m.settled(inv);
        }
    }

    fn notify_changed(&self, inv: &Invocation) {
        self.hub.committed(inv);
        if let Some(feed) = self.feed.as_ref() {
            feed.announce(Changed::Invocation { id: inv.id, seq: inv.last_seq });
        }
    }

    /// How often a waiter or watcher re-reads the store by itself: never while the sweep runs
    /// (it reads for every follower at once), every 10 s with only a feed, else every
    /// `watch_poll`.
    fn poll_every(&self) -> Duration {
        if self.sweeping.load(std::sync::atomic::Ordering::Relaxed) {
            NO_POLL
        } else if self.feed.as_ref().is_some() {
            self.cfg.watch_poll.max(FEED_FALLBACK_POLL)
        } else {
            self.cfg.watch_poll
        }
    }

    /// How often the sweep reads the progress of every followed invocation: every `watch_poll`
    /// (changes by other processes on the same database: another replica without a feed, the
    /// CLI), or with a feed, which tells of those at once, as a fallback.
    fn sweep_every(&self) -> Duration {
        if self.feed.as_ref().is_some() { self.cfg.watch_poll.max(FEED_FALLBACK_POLL) } else { self.cfg.watch_poll }
    }

    /// One read of the progress of every invocation someone here follows (instead of a read per
    /// follower); only the followers of those that moved are woken.
    async fn sweep(&self) -> Result<(), Error> {
        let followed = self.hub.followed();
        if followed.is_empty() {
            return Ok(());
        }
        for (id, seq) in self.store.progress(&followed).await? {
            self.hub.moved(id, seq);
        }
        Ok(())
    }

    async fn owned(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error> {
        self.store.get(Some(tenant), id).await?.ok_or_else(|| Error::invocation_not_found(id))
    }

    /// Applies `change` to invocation `id` on behalf of `by` (another tenant's is `NotFound`)
    /// and tells waiters if it changed anything; returns the invocation and whether it did.
    async fn act_for(
        &self,
        by: &Principal,
        id: InvocationId,
        change: impl Fn(&mut Invocation, &Principal, Millis) -> Result<Vec<EventKind>, Error> + Send + Sync + 'static,
    ) -> Result<(Invocation, bool), Error> {
        let who = by.clone();
        let f: Transition = Box::new(move |inv, now| {
            check_tenant(inv, &who.tenant)?;
            change(inv, &who, now)
        });
        let (inv, events) = self.store.transition(id, f).await?;
        let changed = !events.is_empty();
        if changed {
            self.notify_changed(&inv);
            self.settled(&inv);
        }
        Ok((inv, changed))
    }
}

#[async_trait]
impl Invocations for Engine {
    async fn submit(&self, s: Submission) -> Result<Submitted, Error> {
        self.admit(s, InvocationId::new()).await
    }

    /// Local changes arrive as snapshots; the store is re-read only every `watch_poll` (for
    /// changes made by other replicas).
    async fn submit_and_wait(
        &self,
        submission: Submission,
        limit: Duration,
        gone: ClientGone,
    ) -> Result<Waited, Error> {
        // Follow the id the call will get before admitting it, so no change falls in between.
        let id = InvocationId::new();
        let early = submission.ingress.answers_reads_early();
        let mut following = self.inner.hub.follow(id);
        let mut submitted = self.admit(submission, id).await?;
        let mut current = submitted.invocation.clone();
        if current.id != id {
            // An earlier call with the same key: follow that one, read after starting to.
            following = self.inner.hub.follow(current.id);
            current = self.inner.owned(&current.principal.tenant, current.id).await?;
        }
        tokio::select! {
            followed = self.follow(following, current, limit, early) => {
                submitted.invocation = followed?;
                Ok(Waited { submitted, client_gone: false })
            }
            () = gone => Ok(Waited { submitted, client_gone: true }),
        }
    }

    async fn wait(&self, tenant: &TenantId, id: InvocationId, limit: Duration) -> Result<Invocation, Error> {
        let following = self.inner.hub.follow(id);
        let current = self.inner.owned(tenant, id).await?;
        self.follow(following, current, limit, false).await
    }

    async fn get(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error> {
        self.inner.owned(tenant, id).await
    }

    async fn by_key(&self, tenant: &TenantId, key: &crate::IngressKey) -> Result<Option<Invocation>, Error> {
        self.inner.store.by_key(tenant, key).await
    }

    async fn now(&self) -> Result<Millis, Error> {
        self.inner.store.now().await
    }

    async fn list(&self, tenant: &TenantId, query: ListQuery) -> Result<Page, Error> {
        query.page_size()?;
        query.after()?;
        self.inner.store.list(tenant, &query).await
    }

    async fn cancel(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        let (inv, _) = self.inner.act_for(by, id, |inv, who, now| inv.request_cancel(who.clone(), now)).await?;
        if inv.cancel.is_some()
            && !inv.state.is_terminal()
            && let Ok(m) = self.inner.running.lock()
            && let Some(r) = m.get(&id)
        {
            r.cancel.notify_one();
        }
        Ok(inv)
    }

    async fn decide_passage(&self, passage: &Passage) -> Result<(), Error> {
        self.pass(passage).await
    }

    async fn reconcile(&self, by: &Principal, id: InvocationId, decision: Decision) -> Result<Invocation, Error> {
        reconcile(&self.inner, by, id, decision).await
    }

    async fn approve(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        let (worker, ttl) = (self.inner.cfg.worker, self.inner.cfg.ttl_ms());
        let held = self.inner.owned(&by.tenant, id).await?;
        held.check_approver(by, "approve")?; // refused before anything is minted
        let (jti, grant) = match self.inner.policy.approval_grant(&held, by).await? {
            Some(g) => (Some(g.id), Some(g.token)),
            None => (None, None),
        };
        let (inv, _) = self
            .inner
            .act_for(by, id, move |inv, who, now| inv.approve(who.clone(), worker, now, ttl, grant.clone()))
            .await?;
        info!(invocation.id = %id, by = %by.subject, "held call approved");
        let detail = serde_json::json!({ "grant": jti });
        self.inner.audit_step(inv.audit_entry(AuditKind::Approved, &by.subject, detail)).await;
        // This worker holds the lease it took with the approval; if it stops first, recovery
        // drives the call once the lease runs out.
        self.inner.spawn_driver(inv.clone(), None, ("approval", false, None), None);
        Ok(inv)
    }

    async fn deny(&self, by: &Principal, id: InvocationId, reason: String) -> Result<Invocation, Error> {
        let detail = serde_json::json!({ "reason": reason });
        let (inv, _) =
            self.inner.act_for(by, id, move |inv, who, _| inv.deny_approval(who.clone(), reason.clone())).await?;
        info!(invocation.id = %id, by = %by.subject, "held call denied");
        self.inner.audit_step(inv.audit_entry(AuditKind::ApprovalDenied, &by.subject, detail)).await;
        self.inner.tell_refused(&inv).await;
        Ok(inv)
    }

    async fn events(&self, tenant: &TenantId, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        self.inner.owned(tenant, id).await?;
        self.inner.store.events(id, after, limit.clamp(1, 1000)).await
    }

    fn watch(&self, tenant: TenantId, id: InvocationId, after: u64) -> BoxStream<'static, Result<Event, Error>> {
        watch::stream(self.inner.clone(), tenant, id, after)
    }
}

/// Reconciles `id` for `by` (an operator, or recovery on an upstream's evidence).
async fn reconcile(inner: &Inner, by: &Principal, id: InvocationId, decision: Decision) -> Result<Invocation, Error> {
    let entry = decision.clone();
    let (inv, changed) = inner.act_for(by, id, move |inv, who, _| inv.reconcile(decision.clone(), who.clone())).await?;
    if changed {
        info!(invocation.id = %id, by = %by.subject, state = inv.state.name().as_str(), "invocation reconciled");
        inner.audit_step(inv.reconciliation_entry(&by.subject, &entry)).await;
    }
    Ok(inv)
}

/// Resolves once the engine is stopping. (The `watch::Ref` that `wait_for` yields holds a lock
/// guard; dropping it here keeps callers' futures `Send`.)
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await;
}

/// Another tenant's invocation is reported as absent, so existence does not leak.
fn check_tenant(inv: &Invocation, tenant: &TenantId) -> Result<(), Error> {
    if &inv.principal.tenant == tenant { Ok(()) } else { Err(Error::invocation_not_found(inv.id)) }
}
