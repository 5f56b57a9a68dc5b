//! The ports. `Invocations` is the driving port that protocol adapters call; `InvocationStore`,
//! `Upstream` and `UpstreamRegistry` are the driven ports the server wires in. Each method says
//! what it guarantees; implementations are tested against those sentences.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::error::{Error, FailureCode};
use crate::event::{Event, EventKind};
use crate::id::{AttemptId, InvocationId, WorkerId};
use crate::principal::{IngressKey, Principal, Target, TenantId};
use crate::relay::CallContext;
use crate::state::{Decision, Invocation, NewInvocation, StateName};

/// A call as an adapter hands it in. The effect class is not part of it: it comes from local
/// configuration through [`UpstreamRegistry::target`].
#[derive(Debug, Clone)]
pub struct Submission {
    pub principal: Principal,
    pub upstream: String,
    pub operation: String,
    pub request: Value,
    pub ingress_key: Option<IngressKey>,
    /// The entry point whose checks the call passed (the owner check holds it to that face's
    /// upstreams); see [`Ingress`].
    pub ingress: Ingress,
    /// The protocol its caller spoke, where that is another face's (a bridged call: an MCP
    /// client's message to an A2A agent passes the A2A face's checks). What metrics count it
    /// under; `None`: [`ingress`](Self::ingress).
    pub caller: Option<Ingress>,
    /// In-process companions of this call (where to relay its progress and questions). Never
    /// stored: an attempt driven after a restart or by another replica has none, and upstreams
    /// must work without it.
    pub context: Option<CallContext>,
    /// A grant the caller presented (a compact JWS), for the policy enforcement point to
    /// verify; untrusted until it does, and never stored.
    pub grant: Option<String>,
    /// The invocation this call is made for (a bridged call's run): stored and shown with it.
    /// It must be the caller's tenant's.
    pub parent: Option<InvocationId>,
    /// The caller's trace context (W3C `traceparent`), if it sent one: the invocation's span
    /// joins that trace when tracing is on. Never stored.
    pub trace: Option<crate::trace::TraceParent>,
}

impl Submission {
    /// The protocol its caller spoke: [`caller`](Self::caller), else the entry point's.
    pub fn caller(&self) -> Ingress {
        self.caller.unwrap_or(self.ingress)
    }
}

/// A request that reaches an upstream without an invocation of its own: an MCP resource read or
/// subscription, a prompt, a completion; an A2A task read, cancel or subscription. The policy
/// enforcement point decides it as a `read_only` call of `operation` on `upstream` (a read
/// defaults to the routine tier) and the decision is audited; it is never journaled or retried.
#[derive(Debug, Clone)]
pub struct Passage {
    pub principal: Principal,
    pub ingress: Ingress,
    pub upstream: String,
    /// What the policy's `operation` patterns match: `resource:<uri>`, `prompt:<name>`,
    /// `completion:<prompt name or uri template>`, `task:<method>` (see the faces).
    pub operation: String,
    /// What the decision binds to (its digest is audited) and argument conditions read.
    pub request: Value,
    /// A grant the caller presented, unverified.
    pub grant: Option<String>,
}

/// The entry point a call came through. An upstream that a protocol face serves (its
/// [`UpstreamRegistry::owner`]) is reachable only through that face, which applies its own checks
/// before it submits (exposure patterns, pinned schemas, endpoint scopes, sealed input rounds,
/// task scopes); the engine refuses the same upstream from any other entry point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ingress {
    /// The admin API (`POST /admin/v1/invocations`) and in-process callers.
    Admin,
    /// The MCP face.
    Mcp,
    /// The A2A face.
    A2a,
}

impl Ingress {
    /// For messages: "the admin API", "the MCP face", "the A2A face".
    pub fn describe(self) -> &'static str {
        match self {
            Self::Admin => "the admin API",
            Self::Mcp => "the MCP face",
            Self::A2a => "the A2A face",
        }
    }

    /// Whether a caller waiting through this entry point takes a `read_only` call's answer from
    /// the upstream's reply, before its outcome commits: the MCP face's callers, whose answer is
    /// the tool's result and who cannot read the record back. (A crash before that commit
    /// leaves the read `dispatching`; recovery runs it again, G5.) The admin API's and the A2A
    /// face's callers are answered with the record as committed: they read it back (`GET`,
    /// `GetTask`) and must find what they were told — unless the upstream recorded the answer
    /// itself ([`Upstream::answer_recorded`]).
    pub fn answers_reads_early(self) -> bool {
        matches!(self, Self::Mcp)
    }

    /// For logs and spans: `admin`, `mcp`, `a2a`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Mcp => "mcp",
            Self::A2a => "a2a",
        }
    }
}

/// The answer to a submission: the invocation as committed, and whether this call created it
/// (`false`: an earlier submission with the same tenant, key and digest did).
#[derive(Debug, Clone)]
pub struct Submitted {
    pub invocation: Invocation,
    pub created: bool,
}

/// Resolves when the client that waits for a call goes away (its connection closed, or it
/// cancelled the request): the wait ends then, and the call goes on.
pub type ClientGone = BoxFuture<'static, ()>;

/// A client that never goes away while it waits (the wait ends by settling or by deadline).
pub fn client_stays() -> ClientGone {
    Box::pin(std::future::pending())
}

/// How [`Invocations::submit_and_wait`] ended: the invocation as it was then (settled, or still
/// running at the deadline), and whether the wait ended because the client went away.
#[derive(Debug, Clone)]
pub struct Waited {
    pub submitted: Submitted,
    pub client_gone: bool,
}

/// Filters and keyset pagination for listing a tenant's invocations, newest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ListQuery {
    pub state: Option<StateName>,
    /// Only the calls to these upstreams (none: any upstream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<String>,
    /// 1..=500; `None` means 50.
    pub limit: Option<u32>,
    /// Opaque cursor from a previous [`Page::next_cursor`].
    pub cursor: Option<String>,
    /// Only the calls this subject made (none: every subject's of the tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl ListQuery {
    pub const MAX_LIMIT: u32 = 500;
    pub const DEFAULT_LIMIT: u32 = 50;

    /// The effective page size, or an error naming the bound.
    pub fn page_size(&self) -> Result<u32, Error> {
        match self.limit {
            None => Ok(Self::DEFAULT_LIMIT),
            Some(n) if (1..=Self::MAX_LIMIT).contains(&n) => Ok(n),
            Some(n) => Err(Error::invalid_input(format!("limit {n} is out of range 1..={}", Self::MAX_LIMIT))),
        }
    }

    /// Decodes the cursor into `(created_at_ms, id)`.
    pub fn after(&self) -> Result<Option<(Millis, InvocationId)>, Error> {
        let Some(c) = &self.cursor else { return Ok(None) };
        let bad = || Error::invalid_input("cursor is invalid: pass back `next_cursor` unchanged");
        let (ms, id) = c.split_once('.').ok_or_else(bad)?;
        Ok(Some((ms.parse().map_err(|_| bad())?, id.parse().map_err(|_| bad())?)))
    }

    /// The cursor that continues after `inv`.
    pub fn cursor_for(inv: &Invocation) -> String {
        format!("{}.{}", inv.created_at_ms, inv.id)
    }
}

/// One page of invocations.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub items: Vec<Invocation>,
    pub next_cursor: Option<String>,
}

/// The driving port: what protocol adapters and the admin API call.
#[async_trait]
pub trait Invocations: Send + Sync + std::fmt::Debug {
    /// Admits a call (G1, G2). Returns only after the invocation and its first event are
    /// committed; dispatch proceeds in the background.
    async fn submit(&self, submission: Submission) -> Result<Submitted, Error>;
    /// Submits, then waits up to `limit` for the invocation to settle (terminal, `unknown`, or
    /// awaiting approval), or until `gone` resolves, and returns it as it is then.
    /// A resubmission with the same key waits on the existing invocation. No change made while
    /// it waits is missed (it listens before admitting).
    async fn submit_and_wait(&self, submission: Submission, limit: Duration, gone: ClientGone)
    -> Result<Waited, Error>;
    /// Waits up to `limit` for invocation `id` of `tenant` to settle and returns it as it is
    /// then. Push-based: woken by the change, not by reading the store in a loop.
    async fn wait(&self, tenant: &TenantId, id: InvocationId, limit: Duration) -> Result<Invocation, Error>;
    /// The invocation, if it belongs to `tenant` (else `NotFound`).
    async fn get(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error>;
    /// The tenant's invocation submitted with ingress key `key`, if there is one (a later round
    /// of a call whose rounds derive their keys from the round they continue).
    async fn by_key(&self, tenant: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error>;
    /// The clock invocations' times are read on (the store's): to compare with them.
    async fn now(&self) -> Result<Millis, Error>;
    async fn list(&self, tenant: &TenantId, query: ListQuery) -> Result<Page, Error>;
    /// Records a cancellation durably and propagates it (G8).
    async fn cancel(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error>;
    /// Resolves an `unknown` outcome (G4), audited as an event, idempotent on retry.
    async fn reconcile(&self, by: &Principal, id: InvocationId, decision: Decision) -> Result<Invocation, Error>;
    /// Lets a call the policy enforcement point held run. `by` must be of the call's tenant and
    /// not its caller; the call runs once, on this worker or, if it stops, on recovery.
    async fn approve(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error>;
    /// Denies a held call: it fails `approval_denied` with `reason`, and nothing runs.
    async fn deny(&self, by: &Principal, id: InvocationId, reason: String) -> Result<Invocation, Error>;
    /// Events with sequence numbers strictly after `after`, in order, at most `limit`.
    async fn events(&self, tenant: &TenantId, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error>;
    /// Every event strictly after `after`, in order, without gaps or duplicates (G9); the
    /// stream ends after the terminal event.
    fn watch(&self, tenant: TenantId, id: InvocationId, after: u64) -> BoxStream<'static, Result<Event, Error>>;
    /// Decides a [`Passage`]: `Ok` lets it through; a denial, a deferral, or a hold (a passage
    /// cannot wait for approval) is the caller's error. The decision is audited first, so one
    /// that cannot be recorded lets nothing through (it fails closed).
    async fn decide_passage(&self, passage: &Passage) -> Result<(), Error>;
    /// Why the policy enforcement point held `inv`, as its admission event says (`None` for a
    /// call that was not held, or when the event cannot be read).
    async fn hold_reason(&self, inv: &Invocation) -> Option<String> {
        self.hold_of(inv).await.map(|h| h.reason)
    }

    /// Why the policy held `inv` and what decided it (its admission's [`Hold`]), if it held it.
    ///
    /// [`Hold`]: crate::state::Hold
    async fn hold_of(&self, inv: &Invocation) -> Option<crate::state::Hold> {
        let first = self.events(&inv.principal.tenant, inv.id, 0, 1).await.ok()?;
        first.into_iter().find_map(|e| match e.kind {
            EventKind::Admitted { held: Some(h), .. } => Some(h),
            _ => None,
        })
    }
}

/// What a [`ChangeFeed`] tells the other replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// Invocation `id` reached event `seq`.
    Invocation { id: InvocationId, seq: u64 },
    /// The agent task whose [`TaskId::bell_key`] this is changed (its followers re-read its log).
    ///
    /// [`TaskId::bell_key`]: crate::TaskId::bell_key
    Task { key: u64 },
    /// Some agent task changed: every task follower re-reads (what replicas before per-task
    /// notices announced; still understood).
    Tasks,
    /// Notices may have been missed (the listening connection was re-established): every
    /// follower re-reads. Heard only, never announced.
    Resync,
}

/// Changes committed by other replicas, announced and heard through the shared database
/// (PostgreSQL `LISTEN/NOTIFY`): a watcher is woken at once instead of at its next poll. Best
/// effort: a notice lost (a dropped listening connection) is caught by the slow poll.
pub trait ChangeFeed: Send + Sync {
    /// Announces a change, after its commit. Never blocks.
    fn announce(&self, change: Changed);
    /// What the other replicas announce, for as long as the process runs (each call: one more
    /// follower of the replica's one listening connection).
    fn heard(&self) -> BoxStream<'static, Changed>;
}

/// Admitting a draft either created the invocation or found the one already holding its
/// (tenant, ingress key).
#[derive(Debug, Clone)]
pub enum Admission {
    Created(Invocation),
    Existing(Invocation),
}

/// A state change computed inside the store's transaction from the locked record and the
/// store's clock. Returning `Err` rolls back and changes nothing. It may run more than once
/// (a fast path that lost a race falls back to the locked path), so it must be pure.
pub type Transition = Box<dyn Fn(&mut Invocation, Millis) -> Result<Vec<EventKind>, Error> + Send + Sync>;

/// Durable storage of invocations and their events.
#[async_trait]
pub trait InvocationStore: Send + Sync {
    /// Inserts the invocation built by [`Invocation::admit`] and its first event in one
    /// transaction, committed before it returns (G1). If the tenant already used the ingress
    /// key, nothing is written and the existing invocation is returned.
    async fn admit(&self, draft: NewInvocation) -> Result<Admission, Error>;

    /// Locks the invocation, reads the store's clock, applies `f`, persists the changed record
    /// and appends the returned events with the next sequence numbers — all in one transaction,
    /// committed before it returns. Concurrent transitions of one invocation are serialized.
    /// Returns the record after the change and the events appended.
    async fn transition(&self, id: InvocationId, f: Transition) -> Result<(Invocation, Vec<Event>), Error>;

    /// The same change for a worker holding a live lease whose `expected` copy is current. A
    /// store may apply it in one round trip, on the condition that the row still matches
    /// `expected` (sequence, fence, owner, lease expiry) and the lease is live on the store's
    /// clock; when it does not, this is exactly [`transition`](Self::transition). The
    /// guarantees are the same either way.
    async fn transition_held(&self, expected: &Invocation, f: Transition) -> Result<(Invocation, Vec<Event>), Error> {
        self.transition(expected.id, f).await
    }

    /// The invocation; with `tenant`, only if it belongs to that tenant.
    async fn get(&self, tenant: Option<&TenantId>, id: InvocationId) -> Result<Option<Invocation>, Error>;

    /// The tenant's invocation admitted under ingress key `key`, if there is one.
    async fn by_key(&self, tenant: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error>;

    /// A page of the tenant's invocations, newest first.
    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, Error>;

    /// Events with `seq > after`, ascending, at most `limit`.
    async fn events(&self, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error>;

    /// The last event sequence of each of `ids` that exists (one read for many invocations:
    /// the engine's sweep for changes it was not told about).
    async fn progress(&self, ids: &[InvocationId]) -> Result<Vec<(InvocationId, u64)>, Error> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(inv) = self.get(None, *id).await? {
                out.push((inv.id, inv.last_seq));
            }
        }
        Ok(out)
    }

    /// Takes the lease of up to `limit` active invocations whose lease has expired on the
    /// store's clock, raising each one's fence; rows locked by another worker are skipped.
    async fn acquire_expired(&self, worker: WorkerId, ttl_ms: Millis, limit: u32) -> Result<Vec<Invocation>, Error>;

    /// Up to `limit` `unknown` invocations of `upstream`, of every tenant, in id order after
    /// `after` (keyset), for the recovery participants that reconcile from upstream evidence.
    async fn unknown_of(
        &self,
        upstream: &str,
        after: Option<InvocationId>,
        limit: u32,
    ) -> Result<Vec<Invocation>, Error> {
        let _ = (upstream, after, limit);
        Ok(Vec::new())
    }

    /// How many invocations are `unknown` now, per upstream (of every tenant), for an
    /// operator's metrics.
    async fn unknown_counts(&self) -> Result<Vec<(String, u64)>, Error> {
        Ok(Vec::new())
    }

    /// Up to `limit` calls held for approval (of every tenant) for longer than `ttl_ms` on the
    /// store's clock, oldest first, for recovery to expire.
    async fn held_longer_than(&self, ttl_ms: Millis, limit: u32) -> Result<Vec<InvocationId>, Error> {
        let _ = (ttl_ms, limit);
        Ok(Vec::new())
    }

    /// Ends every lease `worker` holds now, so that recovery can take them at once.
    async fn release_leases(&self, worker: WorkerId) -> Result<u64, Error>;

    /// The store's clock.
    async fn now(&self) -> Result<Millis, Error>;
}

/// One attempt, as an upstream sees it.
#[derive(Debug, Clone)]
pub struct DispatchCall {
    pub invocation: InvocationId,
    pub attempt: AttemptId,
    pub attempt_no: u32,
    pub principal: Principal,
    pub target: Target,
    pub request: Value,
    /// The submitter's [`CallContext`], when this process admitted the call and still has it.
    pub context: Option<CallContext>,
    /// An upstream that has not sent anything by this instant must give up with
    /// [`UpstreamError::Unavailable`] (nothing sent) rather than wait on: a little before the
    /// attempt times out, which would make the outcome lost (a `write` becomes `unknown`).
    pub send_by: tokio::time::Instant,
}

/// How an attempt failed, as the upstream adapter classifies it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream answered and refused: the effect did not happen; repeating will not help.
    #[error("upstream rejected the call ({code}): {message}")]
    Rejected { code: FailureCode, message: String, details: Option<Value> },
    /// The call certainly did not take effect (e.g. connection refused): safe to try again.
    #[error("upstream unavailable: {message}")]
    Unavailable { message: String },
    /// The outcome is unknown (timeout, broken connection after sending).
    #[error("upstream outcome lost: {message}")]
    Lost { message: String },
    /// The upstream confirmed that it canceled the call.
    #[error("upstream canceled the call")]
    Canceled,
}

/// The upstream's answer to a cancellation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAck {
    /// The call is stopped; its dispatch ends with [`UpstreamError::Canceled`].
    Confirmed,
    /// The upstream cannot cancel this call (unsupported or already finished).
    Unsupported,
}

/// An upstream the gateway calls. Implementations must not retry internally: retries are the
/// engine's decision, made by effect class.
#[async_trait]
pub trait Upstream: Send + Sync {
    /// Sends one attempt and waits for its outcome.
    async fn dispatch(&self, call: &DispatchCall) -> Result<Value, UpstreamError>;
    /// Asks the upstream to stop an attempt in flight.
    async fn cancel(&self, call: &DispatchCall) -> CancelAck;
    /// A held call of this upstream will never be dispatched: its approval was denied or
    /// expired (`inv`, as committed). The upstream may record that where its callers look (an
    /// A2A agent ends the waiting task rejected). Called by the engine of the replica that
    /// decided, after the commit; the default does nothing.
    async fn refused(&self, _inv: &Invocation) {}

    /// How long one attempt may run before its outcome counts as lost: `default`, the engine's
    /// `attempt_timeout`, unless the upstream's attempts wait on invocations that are bounded
    /// themselves (a bridged call's run waits for its tool call, which has its own attempts,
    /// timeouts and approval expiry).
    fn attempt_timeout(&self, default: Duration) -> Duration {
        default
    }
    /// Whether a write with `request` may record its first attempt in its admission's commit
    /// ([`NewInvocation::proves_unsent`](crate::state::NewInvocation::proves_unsent)): this
    /// upstream writes its own evidence before it sends, and its [`resolve`](Self::resolve)
    /// decides an attempt without that evidence `not_applied`. The default: no.
    fn proves_unsent(&self, request: &Value) -> bool {
        let _ = request;
        false
    }
    /// Whether a `read_only` call may be sent while its admission commits (G3): the upstream's
    /// dispatch reads nothing of the invocation's record (an external server's does not; an
    /// in-process agent that keeps its task under the invocation, or makes calls naming it as
    /// their parent, does). The default: no.
    fn sends_before_the_record(&self) -> bool {
        false
    }
    /// Whether `result`, this upstream's reply to `call`, is already recorded where its caller
    /// reads it back and where recovery finds it: a caller of any entry point may then be
    /// answered before the outcome commits (one commit fewer on its path), since what it was told
    /// stands even if the process dies first. For a write this needs a
    /// [`resolver`](Self::resolver) that decides `applied` with this result from that record;
    /// for a read, a run driven again must end with it. The default: no.
    fn answer_recorded(&self, call: &DispatchCall, result: &Value) -> bool {
        let _ = (call, result);
        false
    }
    /// Whether this upstream can tell, from its own evidence, what became of an attempt whose
    /// outcome is `unknown`: the subject its resolutions are audited under, or `None` (the
    /// default: only an operator reconciles its calls).
    fn resolver(&self) -> Option<&'static str> {
        None
    }
    /// The decision the evidence supports for `inv` (one of this upstream's `unknown`
    /// invocations, claimed by the engine's recovery for [`RESOLVE_CLAIM`]), or `None` while it
    /// does not tell (asked again once the claim lapses). Called only when
    /// [`resolver`](Self::resolver) is `Some`.
    async fn resolve(&self, inv: &Invocation) -> Option<Decision> {
        let _ = inv;
        None
    }
}

/// How long the engine's recovery claims an `unknown` invocation while its upstream gathers
/// evidence ([`Upstream::resolve`]); it is also the pause between two tries on one invocation.
pub const RESOLVE_CLAIM: Duration = Duration::from_secs(30);

/// The configured upstreams and, from local configuration only, each operation's effect class.
pub trait UpstreamRegistry: Send + Sync {
    /// The target for `upstream`/`operation`, or `NotFound` if no such upstream/operation.
    fn target(&self, upstream: &str, operation: &str) -> Result<Target, Error>;
    /// The upstream named `name`.
    fn upstream(&self, name: &str) -> Option<Arc<dyn Upstream>>;
    /// The face that owns `upstream`, if one does: calls to it from any other [`Ingress`] are
    /// refused at admission.
    fn owner(&self, upstream: &str) -> Option<Ingress> {
        let _ = upstream;
        None
    }
    /// The upstreams whose [`Upstream::resolver`] is `Some`: recovery resolves their `unknown`
    /// outcomes from evidence.
    fn resolvers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// [`Binding::approved_by`] of an automatic approval: the first sighting of a name.
pub const FIRST_USE: &str = "first-use";

/// One pinned upstream definition (for MCP: a tool, keyed by its upstream name). Discovery
/// records the digest it observed; the binding is usable only while that equals the approved
/// digest, so a changed schema is withheld until an operator approves it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    pub upstream: String,
    pub kind: String,
    pub name: String,
    pub approved_digest: Option<String>,
    pub observed_digest: String,
    /// Who approved: [`FIRST_USE`] for the automatic approval of a name never seen before.
    pub approved_by: Option<String>,
    pub updated_at_ms: Millis,
}

impl Binding {
    pub fn is_approved(&self) -> bool {
        self.approved_digest.as_deref() == Some(self.observed_digest.as_str())
    }
}

/// Durable pins of upstream definitions, shared by every replica.
#[async_trait]
pub trait BindingStore: Send + Sync {
    /// Records the digest discovery observed. A name seen for the first time is approved at
    /// once (trust on first use); a known one keeps its approved digest, so a change shows as
    /// not approved. Returns the binding as stored.
    async fn observe(&self, upstream: &str, kind: &str, name: &str, digest: &str) -> Result<Binding, Error>;
    /// Every binding, or one upstream's, ordered by upstream, kind and name.
    async fn list(&self, upstream: Option<&str>) -> Result<Vec<Binding>, Error>;
    /// Approves the observed digest of every changed binding of `upstream`, or with `only =
    /// (name, kinds)` of the bindings of that name and one of those kinds (a tool's schema and
    /// description pins, or a skill's manifest: a tool and a skill of one name are approved
    /// apart); returns how many changed.
    async fn approve(&self, upstream: &str, only: Option<(&str, &[&str])>, by: &str) -> Result<u64, Error>;
}

/// Durable storage of sealed secrets by name (e.g. an upstream's OAuth tokens, encrypted by
/// the adapter that owns them). The store never sees plaintext.
#[async_trait]
pub trait SecretVault: Send + Sync {
    async fn get(&self, name: &str) -> Result<Option<String>, Error>;
    async fn put(&self, name: &str, sealed: &str) -> Result<(), Error>;
    async fn delete(&self, name: &str) -> Result<(), Error>;
}
