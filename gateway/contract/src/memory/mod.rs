//! In-memory ports for testing the faces in process: [`MemoryInvocations`] (the driving port),
//! [`MemoryBindings`], [`MemoryGrants`] and [`MemoryTasks`]. No database, no engine, no upstream.
//!
//! In [`MemoryInvocations`] every submission is recorded as it was handed in, and a script decides
//! what becomes of it — refused at admission with any [`Error`], settled at once in any state (succeeded,
//! failed with any [`FailureRecord`], unknown, parked for approval), or left running until the test
//! settles it. Admission, idempotency keys, tenant checks, cancellation and reconciliation follow
//! the same state machine ([`Invocation`]) and the same rules as the engine, so a face sees the
//! answers it would see from the real one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;

use crate::digest::RequestDigest;
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::id::{AttemptId, EventId, InvocationId, WorkerId};
use crate::policy::{GrantRecord, GrantStore};
use crate::ports::{
    Binding, BindingStore, ClientGone, Invocations, ListQuery, Page, Passage, Submission, Submitted, Waited,
};
use crate::principal::{EffectClass, IngressKey, Principal, Target, TenantId};
use crate::state::{Decision, Fence, Invocation, InvocationState, NewInvocation, Resolution};
use crate::{FailureRecord, Millis};

mod tasks;
pub use tasks::MemoryTasks;

/// What the script makes of one submission.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Refused at admission with this error; nothing is recorded but the submission.
    Refuse(Error),
    /// Admitted and settled at once in this state.
    Settle(InvocationState),
    /// Admitted and left `dispatching` until [`MemoryInvocations::settle`].
    Pending,
}

impl Reply {
    /// Succeeded with `result`, as an upstream's answer.
    pub fn succeed(result: serde_json::Value) -> Self {
        Self::Settle(InvocationState::Succeeded { result, resolution: Resolution::Upstream })
    }

    /// Failed with `error`, as an upstream's answer.
    pub fn fail(error: FailureRecord) -> Self {
        Self::Settle(InvocationState::Failed { error, resolution: Resolution::Upstream })
    }

    /// An attempt whose outcome is not known.
    pub fn unknown(reason: impl Into<String>) -> Self {
        Self::Settle(InvocationState::Unknown { attempt: AttemptId::new(), reason: reason.into() })
    }
}

type Script = Box<dyn Fn(&Submission) -> Reply + Send + Sync>;

#[derive(Default)]
struct Records {
    invocations: HashMap<InvocationId, Invocation>,
    events: HashMap<InvocationId, Vec<Event>>,
    keys: HashMap<(TenantId, IngressKey), InvocationId>,
    submissions: Vec<Submission>,
    clock: Millis,
}

impl Records {
    /// A clock that only moves forward, one millisecond per change, so keyset order is total.
    fn tick(&mut self) -> Millis {
        self.clock += 1;
        self.clock
    }

    fn append(&mut self, inv: &mut Invocation, kinds: Vec<EventKind>) {
        let at_ms = self.tick();
        inv.updated_at_ms = at_ms;
        let journal = self.events.entry(inv.id).or_default();
        for kind in kinds {
            inv.last_seq += 1;
            journal.push(Event { id: EventId::new(), invocation: inv.id, seq: inv.last_seq, at_ms, kind });
        }
        self.invocations.insert(inv.id, inv.clone());
    }

    fn owned(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error> {
        self.invocations
            .get(&id)
            .filter(|i| &i.principal.tenant == tenant)
            .cloned()
            .ok_or_else(|| Error::not_found(format!("invocation {id} not found")))
    }
}

/// The in-memory driving port. Cheap to share (`Arc`).
pub struct MemoryInvocations {
    script: Script,
    records: Arc<Mutex<Records>>,
    changed: tokio::sync::broadcast::Sender<InvocationId>,
    worker: WorkerId,
}

impl std::fmt::Debug for MemoryInvocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryInvocations").finish_non_exhaustive()
    }
}

/// A test that panicked while holding a lock has failed already: go on with its data.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The journal entry a settled state is reached by.
fn settling_event(state: &InvocationState) -> Option<EventKind> {
    Some(match state {
        InvocationState::Succeeded { result, resolution } => {
            EventKind::Succeeded { result: result.clone(), resolution: resolution.clone() }
        }
        InvocationState::Failed { error, resolution } => {
            EventKind::Failed { error: error.clone(), resolution: resolution.clone() }
        }
        InvocationState::Unknown { attempt, reason } => {
            EventKind::OutcomeUnknown { attempt: *attempt, reason: reason.clone() }
        }
        InvocationState::Canceled { by } => EventKind::Canceled { by: by.clone() },
        _ => return None,
    })
}

impl MemoryInvocations {
    /// A port whose every submission gets `script`'s reply.
    pub fn new(script: impl Fn(&Submission) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(script),
            records: Arc::new(Mutex::new(Records { clock: crate::wall_clock_ms(), ..Records::default() })),
            changed: tokio::sync::broadcast::channel(1024).0,
            worker: WorkerId::new(),
        })
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        lock(&self.records)
    }

    /// Every submission handed in so far, in order, refused ones included.
    pub fn submissions(&self) -> Vec<Submission> {
        self.records().submissions.clone()
    }

    /// The ids of every invocation admitted so far, oldest first.
    pub fn admitted(&self) -> Vec<InvocationId> {
        let r = self.records();
        let mut all: Vec<&Invocation> = r.invocations.values().collect();
        all.sort_by_key(|i| i.created_at_ms);
        all.into_iter().map(|i| i.id).collect()
    }

    /// The invocation `id`, whichever tenant it belongs to.
    pub fn invocation(&self, id: InvocationId) -> Option<Invocation> {
        self.records().invocations.get(&id).cloned()
    }

    /// Moves a running invocation to `state` (as its upstream's outcome would), waking waiters.
    pub fn settle(&self, id: InvocationId, state: InvocationState) -> Result<Invocation, Error> {
        let inv = {
            let mut r = self.records();
            let mut inv = r
                .invocations
                .get(&id)
                .cloned()
                .ok_or_else(|| Error::not_found(format!("invocation {id} not found")))?;
            if inv.state.is_terminal() {
                return Err(Error::conflict(format!("{id} has ended already")));
            }
            let event = settling_event(&state);
            inv.state = state;
            r.append(&mut inv, event.into_iter().collect());
            inv
        };
        let _ = self.changed.send(id);
        Ok(inv)
    }

    fn admit(&self, s: &Submission, reply: Reply) -> Result<Submitted, Error> {
        let target =
            Target { upstream: s.upstream.clone(), operation: s.operation.clone(), effect: EffectClass::Write };
        let digest = RequestDigest::compute(&target.upstream, &target.operation, &s.request)?;
        let mut r = self.records();
        if let Some(key) = &s.ingress_key
            && let Some(existing) = r.keys.get(&(s.principal.tenant.clone(), key.clone())).copied()
        {
            let inv = r.owned(&s.principal.tenant, existing)?;
            return if inv.digest == digest {
                Ok(Submitted { invocation: inv, created: false })
            } else {
                Err(Error::conflict(format!(
                    "idempotency key `{}` was already used by {} with a different request; nothing was dispatched",
                    key.as_str(),
                    inv.id
                )))
            };
        }
        let reply = match reply {
            Reply::Refuse(e) => return Err(e),
            other => other,
        };
        let now = r.tick();
        let draft = NewInvocation {
            id: InvocationId::new(),
            principal: s.principal.clone(),
            target,
            request: s.request.clone(),
            digest,
            ingress_key: s.ingress_key.clone(),
            parent: s.parent,
            trace: s.trace.clone(),
            worker: self.worker,
            lease_ttl_ms: 30_000,
            hold: None,
            first_attempt: None,
            proves_unsent: false,
            audit: None,
        };
        let (mut inv, admitted) = Invocation::admit(draft, now);
        let attempt = AttemptId::new();
        let started = EventKind::DispatchStarted { attempt, attempt_no: 1, fence: Fence(1), worker: self.worker };
        inv.attempts = 1;
        let mut events = vec![admitted, started];
        match reply {
            Reply::Settle(state) => {
                events.extend(settling_event(&state));
                inv.state = state;
            }
            _ => inv.state = InvocationState::Dispatching { attempt, attempt_no: 1, fence: Fence(1) },
        }
        if let Some(key) = &s.ingress_key {
            r.keys.insert((s.principal.tenant.clone(), key.clone()), inv.id);
        }
        r.append(&mut inv, events);
        Ok(Submitted { invocation: inv, created: true })
    }

    /// Applies `f` to `id` (of `tenant`) and journals what it returns.
    fn transition(
        &self,
        tenant: &TenantId,
        id: InvocationId,
        f: impl FnOnce(&mut Invocation, Millis) -> Result<Vec<EventKind>, Error>,
    ) -> Result<Invocation, Error> {
        let inv = {
            let mut r = self.records();
            let mut inv = r.owned(tenant, id)?;
            let now = r.clock;
            let events = f(&mut inv, now)?;
            if !events.is_empty() {
                r.append(&mut inv, events);
            }
            inv
        };
        let _ = self.changed.send(id);
        Ok(inv)
    }
}

#[async_trait]
impl Invocations for MemoryInvocations {
    async fn submit(&self, submission: Submission) -> Result<Submitted, Error> {
        let reply = (self.script)(&submission);
        self.records().submissions.push(submission.clone());
        let submitted = self.admit(&submission, reply)?;
        let _ = self.changed.send(submitted.invocation.id);
        Ok(submitted)
    }

    /// Lets every passage through: the in-memory port decides nothing (the faces' policy is
    /// tested against the real engine).
    async fn decide_passage(&self, _: &Passage) -> Result<(), Error> {
        Ok(())
    }

    async fn submit_and_wait(
        &self,
        submission: Submission,
        limit: Duration,
        gone: ClientGone,
    ) -> Result<Waited, Error> {
        let mut submitted = self.submit(submission).await?;
        let (tenant, id) = (submitted.invocation.principal.tenant.clone(), submitted.invocation.id);
        tokio::select! {
            waited = self.wait(&tenant, id, limit) => {
                submitted.invocation = waited?;
                Ok(Waited { submitted, client_gone: false })
            }
            () = gone => Ok(Waited { submitted, client_gone: true }),
        }
    }

    async fn wait(&self, tenant: &TenantId, id: InvocationId, limit: Duration) -> Result<Invocation, Error> {
        let mut changes = self.changed.subscribe();
        let mut inv = self.records().owned(tenant, id)?;
        let deadline = tokio::time::Instant::now() + limit;
        while !inv.state.is_settled() {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => break,
                _ = changes.recv() => inv = self.records().owned(tenant, id)?,
            }
        }
        Ok(inv)
    }

    async fn get(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error> {
        self.records().owned(tenant, id)
    }

    async fn by_key(&self, tenant: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error> {
        let r = self.records();
        r.keys.get(&(tenant.clone(), key.clone())).map(|id| r.owned(tenant, *id)).transpose()
    }

    /// Its clock moves one millisecond per change from the wall clock at its start, so the wall
    /// clock is never behind it by more than the changes made.
    async fn now(&self) -> Result<Millis, Error> {
        Ok(crate::wall_clock_ms().max(self.records().clock))
    }

    async fn list(&self, tenant: &TenantId, query: ListQuery) -> Result<Page, Error> {
        let size = query.page_size()? as usize;
        let after = query.after()?;
        let mut items: Vec<Invocation> = self
            .records()
            .invocations
            .values()
            .filter(|i| &i.principal.tenant == tenant)
            .filter(|i| query.state.is_none_or(|s| i.state.name() == s))
            .filter(|i| query.upstreams.is_empty() || query.upstreams.contains(&i.target.upstream))
            .filter(|i| query.subject.as_ref().is_none_or(|s| &i.principal.subject == s))
            .filter(|i| after.is_none_or(|(ms, id)| (i.created_at_ms, i.id.to_string()) < (ms, id.to_string())))
            .cloned()
            .collect();
        items.sort_by_key(|i| std::cmp::Reverse((i.created_at_ms, i.id.to_string())));
        let more = items.len() > size;
        items.truncate(size);
        let next_cursor = more.then(|| items.last().map(ListQuery::cursor_for)).flatten();
        Ok(Page { items, next_cursor })
    }

    /// As the engine does, with one difference: a call in flight is canceled at once (as if its
    /// upstream confirmed the cancellation).
    async fn cancel(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        self.transition(&by.tenant, id, |inv, now| {
            let mut events = inv.request_cancel(by.clone(), now)?;
            if matches!(inv.state, InvocationState::Dispatching { .. }) && !events.is_empty() {
                inv.state = InvocationState::Canceled { by: by.clone() };
                events.push(EventKind::Canceled { by: by.clone() });
            }
            Ok(events)
        })
    }

    async fn reconcile(&self, by: &Principal, id: InvocationId, decision: Decision) -> Result<Invocation, Error> {
        self.transition(&by.tenant, id, |inv, _| inv.reconcile(decision, by.clone()))
    }

    /// As the engine does; the approved call then stays `admitted` until [`Self::settle`].
    async fn approve(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        let worker = self.worker;
        self.transition(&by.tenant, id, |inv, now| inv.approve(by.clone(), worker, now, 30_000, None))
    }

    async fn deny(&self, by: &Principal, id: InvocationId, reason: String) -> Result<Invocation, Error> {
        self.transition(&by.tenant, id, |inv, _| inv.deny_approval(by.clone(), reason))
    }

    async fn events(&self, tenant: &TenantId, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        let r = self.records();
        r.owned(tenant, id)?;
        let journal = r.events.get(&id).map(Vec::as_slice).unwrap_or_default();
        Ok(journal.iter().filter(|e| e.seq > after).take(limit.clamp(1, 1000) as usize).cloned().collect())
    }

    fn watch(&self, tenant: TenantId, id: InvocationId, after: u64) -> BoxStream<'static, Result<Event, Error>> {
        let follow = Follow {
            records: self.records.clone(),
            changes: self.changed.subscribe(),
            tenant,
            id,
            after,
            ready: std::collections::VecDeque::new(),
            ended: false,
        };
        futures::stream::unfold(follow, |mut f| async move {
            let next = f.next().await?;
            Some((next, f))
        })
        .boxed()
    }
}

/// A watcher: everything journaled after `after`, then every event as it is appended, until the
/// invocation ends.
struct Follow {
    records: Arc<Mutex<Records>>,
    changes: tokio::sync::broadcast::Receiver<InvocationId>,
    tenant: TenantId,
    id: InvocationId,
    after: u64,
    ready: std::collections::VecDeque<Event>,
    ended: bool,
}

impl Follow {
    async fn next(&mut self) -> Option<Result<Event, Error>> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                self.after = e.seq;
                return Some(Ok(e));
            }
            if self.ended {
                return None;
            }
            {
                let r = lock(&self.records);
                let inv = match r.owned(&self.tenant, self.id) {
                    Ok(inv) => inv,
                    Err(e) => {
                        self.ended = true;
                        return Some(Err(e));
                    }
                };
                let journal = r.events.get(&self.id).map(Vec::as_slice).unwrap_or_default();
                self.ready.extend(journal.iter().filter(|e| e.seq > self.after).cloned());
                self.ended = inv.state.is_terminal();
            }
            if self.ready.is_empty() && !self.ended {
                // A lagged receiver only means "something changed": read the journal again.
                if let Err(tokio::sync::broadcast::error::RecvError::Closed) = self.changes.recv().await {
                    self.ended = true; // the port is gone: nothing more will be appended
                }
            }
        }
    }
}

/// In-memory grants ([`GrantStore`]) with the stores' rules: a revocation or a use is final,
/// and only the same user spends a single-use grant again.
#[derive(Debug, Default)]
pub struct MemoryGrants(Mutex<Vec<GrantRecord>>);

#[async_trait]
impl GrantStore for MemoryGrants {
    async fn record(
        &self,
        id: &str,
        tenant: &TenantId,
        subject: &str,
        claims: &serde_json::Value,
    ) -> Result<(), Error> {
        let mut rows = lock(&self.0);
        if rows.iter().any(|g| g.id == id) {
            return Err(Error::conflict(format!("grant {id} exists")));
        }
        rows.push(GrantRecord {
            id: id.into(),
            tenant: tenant.clone(),
            subject: subject.into(),
            claims: claims.clone(),
            minted_ms: crate::wall_clock_ms(),
            revoked_ms: None,
            revoked_by: None,
        });
        Ok(())
    }

    async fn revoke(&self, id: &str, by: &str) -> Result<bool, Error> {
        Ok(self.mark(id, by, false))
    }

    async fn spend(&self, id: &str, by: &str) -> Result<bool, Error> {
        Ok(self.mark(id, by, true))
    }

    async fn is_revoked(&self, id: &str) -> Result<bool, Error> {
        Ok(lock(&self.0).iter().any(|g| g.id == id && g.revoked_ms.is_some()))
    }

    async fn list(&self, tenant: Option<&TenantId>) -> Result<Vec<GrantRecord>, Error> {
        Ok(lock(&self.0).iter().rev().filter(|g| tenant.is_none_or(|t| &g.tenant == t)).cloned().collect())
    }
}

impl MemoryGrants {
    /// Marks grant `id` revoked or used by `by`; `again`: the same `by` may mark it again.
    fn mark(&self, id: &str, by: &str, again: bool) -> bool {
        let mut rows = lock(&self.0);
        let Some(g) = rows.iter_mut().find(|g| g.id == id) else { return false };
        match &g.revoked_by {
            None => {
                g.revoked_ms = Some(crate::wall_clock_ms());
                g.revoked_by = Some(by.into());
                true
            }
            Some(b) => again && b == by,
        }
    }
}

/// In-memory pinned definitions ([`BindingStore`]) with the stores' rules: a name seen for the
/// first time is approved at once (trust on first use); a later, different digest stops
/// matching its approval until [`approve`](BindingStore::approve).
#[derive(Debug, Default)]
pub struct MemoryBindings(Mutex<Vec<Binding>>);

impl MemoryBindings {
    fn rows(&self) -> MutexGuard<'_, Vec<Binding>> {
        lock(&self.0)
    }
}

#[async_trait]
impl BindingStore for MemoryBindings {
    async fn observe(&self, upstream: &str, kind: &str, name: &str, digest: &str) -> Result<Binding, Error> {
        let mut rows = self.rows();
        if let Some(b) = rows.iter_mut().find(|b| b.upstream == upstream && b.kind == kind && b.name == name) {
            b.observed_digest = digest.to_string();
            return Ok(b.clone());
        }
        let b = Binding {
            upstream: upstream.into(),
            kind: kind.into(),
            name: name.into(),
            approved_digest: Some(digest.into()),
            observed_digest: digest.into(),
            approved_by: Some(crate::ports::FIRST_USE.into()),
            updated_at_ms: 0,
        };
        rows.push(b.clone());
        Ok(b)
    }

    async fn list(&self, upstream: Option<&str>) -> Result<Vec<Binding>, Error> {
        Ok(self.rows().iter().filter(|b| upstream.is_none_or(|u| b.upstream == u)).cloned().collect())
    }

    async fn approve(&self, upstream: &str, only: Option<(&str, &[&str])>, by: &str) -> Result<u64, Error> {
        let mut n = 0;
        let chosen = |b: &Binding| only.is_none_or(|(name, kinds)| b.name == name && kinds.contains(&b.kind.as_str()));
        for b in self.rows().iter_mut().filter(|b| b.upstream == upstream && chosen(b)) {
            if !b.is_approved() {
                b.approved_digest = Some(b.observed_digest.clone());
                b.approved_by = Some(by.into());
                n += 1;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ErrorKind;
    use crate::ports::{Ingress, client_stays};

    fn submission(tenant: &str, key: Option<&str>, request: serde_json::Value) -> Submission {
        Submission {
            principal: Principal::new(TenantId::new(tenant).unwrap(), "alice"),
            upstream: "up".into(),
            operation: "op".into(),
            request,
            ingress_key: key.map(|k| IngressKey::new(k).unwrap()),
            ingress: Ingress::Admin,
            caller: None,
            context: None,
            grant: None,
            parent: None,
            trace: None,
        }
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
        rt.unwrap().block_on(f)
    }

    #[test]
    fn records_submissions_and_applies_the_script() {
        block_on(async {
            let port = MemoryInvocations::new(|s| match s.request["n"].as_i64() {
                Some(1) => Reply::succeed(json!({"ok": true})),
                Some(2) => Reply::Refuse(Error::unavailable("down")),
                _ => Reply::Pending,
            });
            let done = port.submit(submission("t", None, json!({"n": 1}))).await.unwrap();
            assert!(matches!(done.invocation.state, InvocationState::Succeeded { .. }));
            let refused = port.submit(submission("t", None, json!({"n": 2}))).await.err();
            assert_eq!(refused.map(|e| e.kind), Some(ErrorKind::Unavailable));
            assert_eq!(port.submissions().len(), 2);
            let events = port.events(&done.invocation.principal.tenant, done.invocation.id, 0, 10).await;
            let seqs: Vec<u64> = events.unwrap_or_default().iter().map(|e| e.seq).collect();
            assert_eq!(seqs, vec![1, 2, 3], "admitted, dispatch started, succeeded");
        });
    }

    #[test]
    fn keys_attach_or_conflict_and_tenants_stay_apart() {
        block_on(async {
            let port = MemoryInvocations::new(|_| Reply::Pending);
            let a = port.submit(submission("t", Some("k"), json!({"x": 1}))).await.unwrap();
            let again = port.submit(submission("t", Some("k"), json!({"x": 1}))).await.unwrap();
            assert!(!again.created);
            assert_eq!(again.invocation.id, a.invocation.id);
            let other = port.submit(submission("t", Some("k"), json!({"x": 2}))).await.err();
            assert_eq!(other.map(|e| e.kind), Some(ErrorKind::Conflict));
            let blue = TenantId::new("blue").unwrap();
            let foreign = port.get(&blue, a.invocation.id).await.err();
            assert_eq!(foreign.map(|e| e.kind), Some(ErrorKind::NotFound));
        });
    }

    #[test]
    fn a_wait_ends_when_settled_at_the_deadline_or_when_the_client_goes() {
        block_on(async {
            let port = MemoryInvocations::new(|_| Reply::Pending);
            let short =
                port.submit_and_wait(submission("t", None, json!({})), Duration::from_millis(20), client_stays());
            let w = short.await.unwrap();
            assert!(!w.client_gone);
            assert!(matches!(w.submitted.invocation.state, InvocationState::Dispatching { .. }));

            let gone = Box::pin(async {});
            let w = port.submit_and_wait(submission("t", None, json!({})), Duration::from_secs(5), gone).await;
            assert!(w.unwrap().client_gone);

            let waiting = port.clone();
            let settle = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let id = port.submissions().len();
                assert_eq!(id, 3);
                let pending = port.records().invocations.values().map(|i| (i.created_at_ms, i.id)).max();
                let (_, id) = pending.unwrap_or_else(|| panic!("no invocation"));
                port.settle(id, InvocationState::AwaitingApproval).unwrap();
            };
            let wait =
                waiting.submit_and_wait(submission("t", None, json!({})), Duration::from_secs(5), client_stays());
            let (w, ()) = tokio::join!(wait, settle);
            let w = w.unwrap();
            assert!(matches!(w.submitted.invocation.state, InvocationState::AwaitingApproval));
        });
    }

    #[test]
    fn watch_follows_until_the_end_and_cancel_ends_a_running_call() {
        block_on(async {
            let port = MemoryInvocations::new(|_| Reply::Pending);
            let s = port.submit(submission("t", None, json!({}))).await.unwrap();
            let inv = s.invocation;
            let watched =
                port.watch(inv.principal.tenant.clone(), inv.id, 1).map(|e| e.map(|e| e.seq)).collect::<Vec<_>>();
            let cancel = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                port.cancel(&inv.principal, inv.id).await
            };
            let (seqs, canceled) = tokio::join!(watched, cancel);
            let canceled = canceled.unwrap();
            assert!(matches!(canceled.state, InvocationState::Canceled { .. }));
            let seqs: Vec<u64> = seqs.into_iter().map(|r| r.unwrap()).collect();
            assert_eq!(seqs, vec![2, 3, 4], "dispatch started, cancel requested, canceled");
        });
    }
}
