//! The invocation state machine. Every transition is a method on [`Invocation`] that checks its
//! preconditions, changes the record and returns the events to append — pure functions of the
//! record and the store's clock. Stores apply them inside one transaction (see
//! [`crate::ports::InvocationStore::transition`]), so a transition and its events commit together.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Millis;
use crate::audit::{AuditEntry, AuditKind};
use crate::digest::RequestDigest;
use crate::error::{Error, ErrorSource, FailureCode, FailureRecord};
use crate::event::EventKind;
use crate::id::{AttemptId, InvocationId, WorkerId};
use crate::principal::{EffectClass, IngressKey, Principal, Target};
pub use crate::verdict::{Decision, Fence, Hold, Resolution};

/// Who may drive an invocation right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The worker holding the lease; `None` once the invocation is parked or terminal.
    pub owner: Option<WorkerId>,
    /// The current fencing token. Invariant: never decreases.
    pub fence: Fence,
    /// When the lease ends, on the store's clock. `None` when there is no owner.
    pub expires_at_ms: Option<Millis>,
}

/// Where an invocation is, with the data each state needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum InvocationState {
    /// Committed, not yet dispatched: nothing has gone upstream.
    Admitted,
    /// An attempt is recorded; bytes may be on their way upstream.
    Dispatching { attempt: AttemptId, attempt_no: u32, fence: Fence },
    /// A `read_only` attempt failed or was lost; the next one starts at `retry_at_ms`.
    Retrying { attempt_no: u32, retry_at_ms: Millis, last_error: FailureRecord },
    /// Held by the policy enforcement point: committed, not dispatched, no lease; it runs once
    /// a human approves it ([`Invocation::approve`]) and fails once one denies it.
    AwaitingApproval,
    /// Terminal. Invariant: `result` never changes once committed. An upstream that asks the
    /// caller for more input (an MCP `input_required` round) succeeded with that request as its
    /// result: the answer is a new invocation that continues this one (nothing waits in the
    /// gateway between rounds, so any replica takes the next one).
    Succeeded { result: Value, resolution: Resolution },
    /// Terminal. Invariant: `error` never changes once committed.
    Failed { error: FailureRecord, resolution: Resolution },
    /// The outcome of `attempt` was lost on a `write` target: never re-dispatched automatically;
    /// waits for an explicit reconciliation.
    Unknown { attempt: AttemptId, reason: String },
    /// Terminal: canceled before dispatch, or the upstream confirmed the cancellation.
    Canceled { by: Principal },
}

/// The state's name, as stored and filtered on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    Admitted,
    Dispatching,
    Retrying,
    AwaitingApproval,
    Succeeded,
    Failed,
    Unknown,
    Canceled,
}

impl StateName {
    pub const ALL: [StateName; 8] = [
        Self::Admitted,
        Self::Dispatching,
        Self::Retrying,
        Self::AwaitingApproval,
        Self::Succeeded,
        Self::Failed,
        Self::Unknown,
        Self::Canceled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admitted => "admitted",
            Self::Dispatching => "dispatching",
            Self::Retrying => "retrying",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
            Self::Canceled => "canceled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|n| n.as_str() == s)
    }

    /// Terminal states never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }

    /// States a worker drives under a lease; recovery looks only at these.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Admitted | Self::Dispatching | Self::Retrying)
    }
}

impl InvocationState {
    pub fn name(&self) -> StateName {
        match self {
            Self::Admitted => StateName::Admitted,
            Self::Dispatching { .. } => StateName::Dispatching,
            Self::Retrying { .. } => StateName::Retrying,
            Self::AwaitingApproval => StateName::AwaitingApproval,
            Self::Succeeded { .. } => StateName::Succeeded,
            Self::Failed { .. } => StateName::Failed,
            Self::Unknown { .. } => StateName::Unknown,
            Self::Canceled { .. } => StateName::Canceled,
        }
    }

    pub fn is_terminal(&self) -> bool {
        self.name().is_terminal()
    }

    /// Terminal, or parked until someone acts (`unknown`, approval): a caller waiting for an
    /// outcome can stop waiting.
    pub fn is_settled(&self) -> bool {
        self.is_terminal() || matches!(self, Self::Unknown { .. } | Self::AwaitingApproval)
    }
}

/// A recorded request to cancel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    pub by: Principal,
    pub at_ms: Millis,
}

/// One durable invocation, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    pub id: InvocationId,
    pub principal: Principal,
    pub target: Target,
    /// The request as admitted. Invariant: immutable.
    pub request: Value,
    /// RFC 8785 + SHA-256 of target and request. Invariant: immutable.
    pub digest: RequestDigest,
    pub ingress_key: Option<IngressKey>,
    /// The invocation this one was made for (a bridged call's run), of the same tenant.
    /// Invariant: immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<InvocationId>,
    /// The caller's trace context, if it sent one: a driver that takes the call up later
    /// continues the caller's trace. Invariant: immutable. Not part of the call's API form.
    #[serde(skip)]
    pub trace: Option<crate::trace::TraceParent>,
    pub state: InvocationState,
    /// Attempts started so far. Invariant: a `write` target never has more than one.
    pub attempts: u32,
    pub cancel: Option<CancelRequest>,
    pub lease: Lease,
    /// Sequence number of the last event. Invariant: events are numbered 1..=last_seq, no gaps.
    pub last_seq: u64,
    pub created_at_ms: Millis,
    pub updated_at_ms: Millis,
}

/// What one attempt came to, as the engine classifies the upstream's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    Succeeded(Value),
    Failed(FailureRecord),
    /// Only for `read_only` targets: try again at `retry_at_ms`.
    Retry {
        error: FailureRecord,
        retry_at_ms: Millis,
    },
    /// The outcome is lost (timeout, broken connection) on a `write` target.
    Unknown {
        reason: String,
    },
    /// The upstream confirmed the cancellation.
    Canceled,
}

impl AttemptOutcome {
    fn summary(&self) -> String {
        match self {
            Self::Succeeded(_) => "succeeded".into(),
            Self::Failed(e) => format!("failed: {}", e.code),
            Self::Retry { error, .. } => format!("retry: {}", error.code),
            Self::Unknown { reason } => format!("unknown: {reason}"),
            Self::Canceled => "canceled".into(),
        }
    }

    /// The answer a late outcome kept (its [`summary`](Self::summary) and
    /// [`detail`](Self::detail)): a result or a failure; `None` for anything else.
    pub fn from_late(summary: &str, detail: Option<&Value>) -> Option<Self> {
        let detail = detail?;
        if summary == "succeeded" {
            return Some(Self::Succeeded(detail.clone()));
        }
        let failed = summary.starts_with("failed: ");
        failed.then(|| serde_json::from_value(detail.clone()).ok().map(Self::Failed)).flatten()
    }

    /// What a late outcome keeps for reconciliation: the result, or the failure.
    fn detail(&self) -> Option<Value> {
        match self {
            Self::Succeeded(result) => Some(result.clone()),
            Self::Failed(e) | Self::Retry { error: e, .. } => serde_json::to_value(e).ok(),
            Self::Unknown { .. } | Self::Canceled => None,
        }
    }
}

/// The data a store needs to admit a new invocation.
#[derive(Debug, Clone)]
pub struct NewInvocation {
    pub id: InvocationId,
    pub principal: Principal,
    pub target: Target,
    pub request: Value,
    pub digest: RequestDigest,
    pub ingress_key: Option<IngressKey>,
    /// The invocation this one is made for (checked to be of the same tenant).
    pub parent: Option<InvocationId>,
    /// The caller's trace context (see [`Invocation::trace`]).
    pub trace: Option<crate::trace::TraceParent>,
    /// The admitting worker takes the first lease, so that an invocation admitted by a process
    /// that dies before dispatching is found by recovery once the lease expires.
    pub worker: WorkerId,
    pub lease_ttl_ms: Millis,
    /// Held for approval by the policy enforcement point: admitted as `awaiting_approval`,
    /// without a lease, and not dispatched.
    pub hold: Option<Hold>,
    /// Record the first attempt, with this id, in the admission's own commit
    /// ([`Invocation::admit_started`]): honoured for a `read_only` call that is not held, and for
    /// a write with [`proves_unsent`](Self::proves_unsent); ignored otherwise. (The id is chosen
    /// before the commit, so that a read can be sent while its admission commits.)
    pub first_attempt: Option<AttemptId>,
    /// The upstream proves an attempt of this call that sent nothing: it records its own
    /// evidence before it sends (the A2A proxy's sent marker), and its resolver decides a lost
    /// attempt without that evidence `not_applied`
    /// ([`Upstream::proves_unsent`](crate::ports::Upstream::proves_unsent)).
    pub proves_unsent: bool,
    /// The decision that admitted the call, to append to this partition's audit chain in the
    /// admission's own commit. Only set when the audit log says the store can
    /// ([`AuditLog::admission_partition`](crate::AuditLog::admission_partition)); a store that
    /// cannot refuses the admission rather than drop the entry.
    pub audit: Option<(String, AuditEntry)>,
}

impl Invocation {
    /// The audit entry of a step taken on this invocation by `actor` (an approval, denial,
    /// expiry or reconciliation), with what identifies the call and `extra` (a JSON object).
    pub fn audit_entry(&self, kind: AuditKind, actor: &str, extra: Value) -> AuditEntry {
        let mut detail = serde_json::json!({
            "upstream": self.target.upstream,
            "operation": self.target.operation,
            "digest": self.digest.as_str(),
            "caller": self.principal.subject,
            "state": self.state.name().as_str(),
        });
        if let (Some(map), Value::Object(more)) = (detail.as_object_mut(), extra) {
            map.extend(more);
        }
        AuditEntry {
            kind,
            tenant: self.principal.tenant.clone(),
            actor: actor.to_string(),
            invocation: Some(self.id),
            detail,
        }
    }

    /// The audit entry of `actor` reconciling this invocation with `decision`.
    pub fn reconciliation_entry(&self, actor: &str, decision: &Decision) -> AuditEntry {
        let extra = match decision {
            Decision::Applied { .. } => serde_json::json!({"decision": "applied"}),
            Decision::NotApplied { message } => serde_json::json!({"decision": "not_applied", "message": message}),
        };
        self.audit_entry(AuditKind::Reconciled, actor, extra)
    }

    /// The new invocation and the events its admission appends: the admission, and for a
    /// `read_only` call that asked for it ([`NewInvocation::first_attempt`]) the start of its
    /// first attempt, so admission and attempt take one commit. A crash after that commit and
    /// before the dispatch leaves a `dispatching` read that recovery retries, which a read allows
    /// (G5). A write's attempt commits on its own, after its admission, so a write that was
    /// never sent is never taken for one that may have been — unless its upstream proves an
    /// unsent attempt ([`NewInvocation::proves_unsent`]): then the lost attempt becomes
    /// `unknown` (G4) and the upstream's resolver decides it `not_applied` from the missing
    /// evidence, so the caller's resend runs.
    pub fn admit_started(d: NewInvocation, now: Millis) -> (Self, Vec<EventKind>) {
        let effect_allows = d.target.effect == EffectClass::ReadOnly || d.proves_unsent;
        let start = d.first_attempt.filter(|_| effect_allows && d.hold.is_none());
        let (worker, ttl) = (d.worker, d.lease_ttl_ms);
        let (mut inv, admitted) = Self::admit(d, now);
        let mut events = vec![admitted];
        if let Some(attempt) = start
            && let Ok(started) = inv.begin_attempt_as(attempt, worker, Fence(1), now, ttl)
        {
            events.extend(started);
        }
        (inv, events)
    }

    /// The record and first event of a newly admitted invocation (G1).
    pub fn admit(d: NewInvocation, now: Millis) -> (Self, EventKind) {
        let event = EventKind::Admitted {
            principal: d.principal.clone(),
            target: d.target.clone(),
            digest: d.digest.clone(),
            ingress_key: d.ingress_key.clone(),
            held: d.hold.clone(),
        };
        let (state, lease) = match d.hold {
            // Nothing drives a held call: no lease, so recovery passes it over too.
            Some(_) => (InvocationState::AwaitingApproval, Lease { owner: None, fence: Fence(1), expires_at_ms: None }),
            None => (
                InvocationState::Admitted,
                Lease { owner: Some(d.worker), fence: Fence(1), expires_at_ms: Some(now + d.lease_ttl_ms) },
            ),
        };
        let inv = Self {
            id: d.id,
            principal: d.principal,
            target: d.target,
            request: d.request,
            digest: d.digest,
            ingress_key: d.ingress_key,
            parent: d.parent,
            trace: d.trace,
            state,
            attempts: 0,
            cancel: None,
            lease,
            last_seq: 0,
            created_at_ms: now,
            updated_at_ms: now,
        };
        (inv, event)
    }

    /// Whether `worker` holds a live lease with `fence` at `now` (G6).
    pub fn holds_lease(&self, worker: WorkerId, fence: Fence, now: Millis) -> bool {
        self.lease.owner == Some(worker)
            && self.lease.fence == fence
            && self.lease.expires_at_ms.is_some_and(|t| t > now)
    }

    fn require_lease(&self, worker: WorkerId, fence: Fence, now: Millis) -> Result<(), Error> {
        if self.holds_lease(worker, fence, now) {
            Ok(())
        } else {
            Err(Error::conflict(format!(
                "lease lost on {}: fence {} is no longer current (current {})",
                self.id, fence.0, self.lease.fence.0
            )))
        }
    }

    fn park(&mut self) {
        self.lease.owner = None;
        self.lease.expires_at_ms = None;
    }

    /// Extends a held lease; reports whether a cancellation has been requested.
    pub fn renew(&mut self, worker: WorkerId, fence: Fence, now: Millis, ttl: Millis) -> Result<Vec<EventKind>, Error> {
        self.require_lease(worker, fence, now)?;
        self.lease.expires_at_ms = Some(now + ttl);
        Ok(Vec::new())
    }

    /// Records a new attempt before anything goes upstream (G3). Allowed from `admitted` and
    /// `retrying`, only for the lease holder, and at most once for a `write` target (G4).
    pub fn begin_attempt(
        &mut self,
        worker: WorkerId,
        fence: Fence,
        now: Millis,
        ttl: Millis,
    ) -> Result<Vec<EventKind>, Error> {
        self.begin_attempt_as(AttemptId::new(), worker, fence, now, ttl)
    }

    /// [`begin_attempt`](Self::begin_attempt) with an attempt id chosen beforehand.
    fn begin_attempt_as(
        &mut self,
        attempt: AttemptId,
        worker: WorkerId,
        fence: Fence,
        now: Millis,
        ttl: Millis,
    ) -> Result<Vec<EventKind>, Error> {
        self.require_lease(worker, fence, now)?;
        match self.state {
            InvocationState::Admitted | InvocationState::Retrying { .. } => {}
            _ => return Err(self.wrong_state("start an attempt")),
        }
        if self.target.effect == EffectClass::Write && self.attempts > 0 {
            return Err(Error::internal(format!("{} is a write and was already dispatched once", self.id)));
        }
        self.attempts += 1;
        self.state = InvocationState::Dispatching { attempt, attempt_no: self.attempts, fence };
        self.lease.expires_at_ms = Some(now + ttl);
        Ok(vec![EventKind::DispatchStarted { attempt, attempt_no: self.attempts, fence, worker }])
    }

    /// Commits an attempt's outcome. A worker that lost its lease, or an outcome for an attempt
    /// that is no longer current, only appends a `late_outcome` event (G6); terminal results are
    /// never overwritten (G10).
    pub fn record_outcome(
        &mut self,
        worker: WorkerId,
        fence: Fence,
        attempt: AttemptId,
        outcome: AttemptOutcome,
        now: Millis,
        ttl: Millis,
    ) -> Vec<EventKind> {
        let current = matches!(self.state, InvocationState::Dispatching { attempt: a, .. } if a == attempt);
        if !current || !self.holds_lease(worker, fence, now) {
            let late =
                EventKind::LateOutcome { attempt, fence, worker, outcome: outcome.summary(), detail: outcome.detail() };
            return self.resolve_from_late(attempt, outcome, late);
        }
        match outcome {
            AttemptOutcome::Succeeded(result) => {
                self.park();
                self.state = InvocationState::Succeeded { result: result.clone(), resolution: Resolution::Upstream };
                vec![EventKind::Succeeded { result, resolution: Resolution::Upstream }]
            }
            AttemptOutcome::Failed(error) => self.fail(error),
            AttemptOutcome::Retry { error, retry_at_ms } => {
                self.lease.expires_at_ms = Some(now + ttl);
                self.state =
                    InvocationState::Retrying { attempt_no: self.attempts, retry_at_ms, last_error: error.clone() };
                vec![EventKind::AttemptFailed { attempt, error, retry_at_ms: Some(retry_at_ms) }]
            }
            AttemptOutcome::Unknown { reason } => self.unknown(attempt, reason),
            AttemptOutcome::Canceled => {
                let by = self.cancel.as_ref().map_or_else(|| self.principal.clone(), |c| c.by.clone());
                self.park();
                self.state = InvocationState::Canceled { by: by.clone() };
                vec![EventKind::Canceled { by }]
            }
        }
    }

    /// A late outcome is recorded, not applied (G6) — except the upstream's own answer for the
    /// very attempt whose outcome was declared lost: that answer is the truth about the effect,
    /// so it resolves the `unknown` (a success, or a failure the upstream reported). Any other
    /// state, or a late "lost" or "retry", stays as it is.
    fn resolve_from_late(&mut self, attempt: AttemptId, outcome: AttemptOutcome, late: EventKind) -> Vec<EventKind> {
        if !matches!(self.state, InvocationState::Unknown { attempt: a, .. } if a == attempt) {
            return vec![late];
        }
        let mut events = vec![late];
        match outcome {
            AttemptOutcome::Succeeded(result) => {
                self.park();
                self.state = InvocationState::Succeeded { result: result.clone(), resolution: Resolution::Upstream };
                events.push(EventKind::Succeeded { result, resolution: Resolution::Upstream });
            }
            AttemptOutcome::Failed(error) => events.extend(self.fail(error)),
            AttemptOutcome::Retry { .. } | AttemptOutcome::Unknown { .. } | AttemptOutcome::Canceled => {}
        }
        events
    }

    fn fail(&mut self, error: FailureRecord) -> Vec<EventKind> {
        self.fail_with(error, Resolution::Upstream)
    }

    fn fail_with(&mut self, error: FailureRecord, resolution: Resolution) -> Vec<EventKind> {
        self.park();
        self.state = InvocationState::Failed { error: error.clone(), resolution: resolution.clone() };
        vec![EventKind::Failed { error, resolution }]
    }

    fn unknown(&mut self, attempt: AttemptId, reason: String) -> Vec<EventKind> {
        self.park();
        self.state = InvocationState::Unknown { attempt, reason: reason.clone() };
        vec![EventKind::OutcomeUnknown { attempt, reason }]
    }

    /// Recovery of an attempt whose worker vanished (G4, G5, G7): a `write` becomes `unknown`; a
    /// `read_only` is retried now while attempts remain, else fails. Requires the lease.
    pub fn recover_lost_attempt(
        &mut self,
        worker: WorkerId,
        fence: Fence,
        now: Millis,
        max_attempts: u32,
    ) -> Result<Vec<EventKind>, Error> {
        self.require_lease(worker, fence, now)?;
        let InvocationState::Dispatching { attempt, .. } = self.state else {
            return Ok(Vec::new());
        };
        let reason = "the gateway lost this attempt's outcome (process stopped or lease expired)".to_string();
        if self.target.effect == EffectClass::Write {
            return Ok(self.unknown(attempt, reason));
        }
        let error = FailureRecord::new(FailureCode::AttemptLost, reason, true, ErrorSource::Gateway);
        if self.cancel.is_some() {
            return Ok(self.record_outcome(worker, fence, attempt, AttemptOutcome::Canceled, now, 0));
        }
        if self.attempts >= max_attempts {
            let mut events = vec![EventKind::AttemptFailed { attempt, error: error.clone(), retry_at_ms: None }];
            events.extend(self.fail(exhausted(self.attempts, &error)));
            return Ok(events);
        }
        self.state =
            InvocationState::Retrying { attempt_no: self.attempts, retry_at_ms: now, last_error: error.clone() };
        Ok(vec![EventKind::AttemptFailed { attempt, error, retry_at_ms: Some(now) }])
    }

    /// Records a cancellation request (G8). Before dispatch it cancels at once; while an attempt
    /// is in flight it is recorded for the driver to propagate; repeated requests change nothing.
    pub fn request_cancel(&mut self, by: Principal, now: Millis) -> Result<Vec<EventKind>, Error> {
        match self.state {
            InvocationState::Admitted | InvocationState::Retrying { .. } | InvocationState::AwaitingApproval => {
                self.cancel = Some(CancelRequest { by: by.clone(), at_ms: now });
                self.park();
                self.state = InvocationState::Canceled { by: by.clone() };
                Ok(vec![EventKind::CancelRequested { by: by.clone() }, EventKind::Canceled { by }])
            }
            InvocationState::Dispatching { .. } if self.cancel.is_some() => Ok(Vec::new()),
            InvocationState::Dispatching { .. } => {
                self.cancel = Some(CancelRequest { by: by.clone(), at_ms: now });
                Ok(vec![EventKind::CancelRequested { by }])
            }
            InvocationState::Canceled { .. } => Ok(Vec::new()),
            InvocationState::Unknown { .. } => Err(Error::conflict(format!(
                "{} has an unknown outcome and cannot be canceled: reconcile it instead",
                self.id
            ))),
            InvocationState::Succeeded { .. } | InvocationState::Failed { .. } => Err(self.wrong_state("cancel")),
        }
    }

    /// Claims an `unknown` invocation for `ttl` so that one worker at a time gathers evidence to
    /// reconcile it (a recovery participant such as the A2A supervisor): refused while another
    /// worker's claim is live. The fence rises as with any takeover; no event is appended (the
    /// claim changes no state). The claim also spaces out attempts: the next is after `ttl`.
    pub fn claim_unknown(&mut self, worker: WorkerId, now: Millis, ttl: Millis) -> Result<Vec<EventKind>, Error> {
        if !matches!(self.state, InvocationState::Unknown { .. }) {
            return Err(self.wrong_state("claim for reconciliation (only `unknown` invocations)"));
        }
        if self.lease.expires_at_ms.is_some_and(|t| t > now) {
            return Err(Error::conflict(format!(
                "{} is claimed by another worker until {}",
                self.id,
                self.lease.expires_at_ms.unwrap_or(0)
            )));
        }
        self.lease =
            Lease { owner: Some(worker), fence: Fence(self.lease.fence.0 + 1), expires_at_ms: Some(now + ttl) };
        Ok(Vec::new())
    }

    /// Lets a held call run: it becomes `admitted` under `worker`'s lease (the fence rises, as
    /// with any takeover), so a crash right after the approval leaves it to recovery. The call's
    /// own caller cannot approve it (four eyes); approving twice is refused.
    pub fn approve(
        &mut self,
        by: Principal,
        worker: WorkerId,
        now: Millis,
        ttl: Millis,
        grant: Option<String>,
    ) -> Result<Vec<EventKind>, Error> {
        self.check_approver(&by, "approve")?;
        self.lease =
            Lease { owner: Some(worker), fence: Fence(self.lease.fence.0 + 1), expires_at_ms: Some(now + ttl) };
        self.state = InvocationState::Admitted;
        Ok(vec![EventKind::Approved { by, grant }])
    }

    /// Denies a held call: it fails (`approval_denied`, retry-safe: nothing ran) with `reason`.
    pub fn deny_approval(&mut self, by: Principal, reason: String) -> Result<Vec<EventKind>, Error> {
        self.check_approver(&by, "deny")?;
        let error = FailureRecord::new(FailureCode::ApprovalDenied, reason, true, ErrorSource::Client);
        let resolution = Resolution::Denied { principal: by };
        Ok(self.fail_with(error, resolution))
    }

    /// Refuses an approved call before its first attempt: the policy enforcement point, asked
    /// again at dispatch, denied it (`policy_denied`, retry-safe: nothing ran). Requires the
    /// lease.
    pub fn refuse_at_dispatch(
        &mut self,
        worker: WorkerId,
        fence: Fence,
        now: Millis,
        reason: String,
    ) -> Result<Vec<EventKind>, Error> {
        if !matches!(self.state, InvocationState::Admitted) || self.attempts > 0 {
            return Err(self.wrong_state("refuse at dispatch (only approved calls not yet sent)"));
        }
        self.require_lease(worker, fence, now)?;
        let error = FailureRecord::new(FailureCode::PolicyDenied, reason, true, ErrorSource::Policy);
        Ok(self.fail_with(error, Resolution::Policy))
    }

    /// Ends a held call nobody approved within `ttl` of its admission: it fails
    /// `approval_expired` (retry-safe: nothing ran). A call already decided, or not yet due,
    /// changes nothing.
    pub fn expire_approval(&mut self, now: Millis, ttl: Millis) -> Vec<EventKind> {
        if !matches!(self.state, InvocationState::AwaitingApproval) || self.created_at_ms + ttl > now {
            return Vec::new();
        }
        let message = format!("no approval within {} s; nothing ran", ttl / 1000);
        let error = FailureRecord::new(FailureCode::ApprovalExpired, message, true, ErrorSource::Policy);
        self.fail_with(error, Resolution::Expired)
    }

    /// Whether `by` may approve or deny (`what`) this call now: it must be awaiting approval,
    /// and nobody approves their own call.
    pub fn check_approver(&self, by: &Principal, what: &str) -> Result<(), Error> {
        if !matches!(self.state, InvocationState::AwaitingApproval) {
            return Err(self.wrong_state(&format!("{what} (only calls awaiting approval)")));
        }
        if *by == self.principal {
            return Err(Error::forbidden(format!("{} was made by {}, who cannot {what} it too", self.id, by.subject)));
        }
        Ok(())
    }

    /// Resolves an `unknown` outcome (G4). Repeating the same decision changes nothing; any
    /// other state, or a different decision after one was taken, is refused.
    pub fn reconcile(&mut self, decision: Decision, by: Principal) -> Result<Vec<EventKind>, Error> {
        if let Some(previous) = self.reconciled_decision() {
            return if previous == decision {
                Ok(Vec::new())
            } else {
                Err(Error::conflict(format!("{} was already reconciled with a different decision", self.id)))
            };
        }
        if !matches!(self.state, InvocationState::Unknown { .. }) {
            return Err(self.wrong_state("reconcile (only `unknown` invocations can be reconciled)"));
        }
        let resolution = Resolution::Reconciled { principal: by.clone() };
        let terminal = match &decision {
            Decision::Applied { result } => {
                self.state = InvocationState::Succeeded { result: result.clone(), resolution: resolution.clone() };
                EventKind::Succeeded { result: result.clone(), resolution }
            }
            Decision::NotApplied { message } => {
                let error = FailureRecord::new(FailureCode::NotApplied, message.clone(), true, ErrorSource::Upstream);
                self.state = InvocationState::Failed { error: error.clone(), resolution: resolution.clone() };
                EventKind::Failed { error, resolution }
            }
        };
        Ok(vec![EventKind::Reconciled { decision, by }, terminal])
    }

    /// The decision a reconciliation took, if this invocation was reconciled.
    fn reconciled_decision(&self) -> Option<Decision> {
        match &self.state {
            InvocationState::Succeeded { result, resolution: Resolution::Reconciled { .. } } => {
                Some(Decision::Applied { result: result.clone() })
            }
            InvocationState::Failed { error, resolution: Resolution::Reconciled { .. } } => {
                Some(Decision::NotApplied { message: error.message.clone() })
            }
            _ => None,
        }
    }

    fn wrong_state(&self, what: &str) -> Error {
        Error::conflict(format!("cannot {what}: {} is {}", self.id, self.state.name().as_str()))
    }
}

/// The failure recorded when a `read_only` target ran out of attempts.
pub fn exhausted(attempts: u32, last: &FailureRecord) -> FailureRecord {
    FailureRecord::new(
        FailureCode::AttemptsExhausted,
        format!("gave up after {attempts} attempts; last error: {}", last.message),
        true,
        last.source,
    )
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
