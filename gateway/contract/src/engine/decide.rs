//! The policy enforcement point's rulings, as the engine asks for them: on a submission before
//! it is admitted ([`Engine::rule`]) and on a passage, a request that reaches an upstream without
//! an invocation of its own ([`Engine::pass`]). Both are counted, and audited before anything
//! goes on, so a decision that cannot be recorded lets nothing through.

use tracing::info;

use super::{Engine, Inner, audit};
use crate::audit::AuditEntry;
use crate::digest::RequestDigest;
use crate::error::Error;
use crate::id::InvocationId;
use crate::policy::{CallFacts, Ruling, Verdict};
use crate::ports::{Ingress, Passage, Submission};
use crate::principal::{EffectClass, Target};
use crate::state::Hold;

impl Engine {
    /// The policy enforcement point's ruling on a submission that would be admitted as `id`:
    /// `None` runs it, a [`Hold`] admits it held for approval; a denial or deferral is the
    /// caller's error (nothing is admitted). With an audit log, the decision is recorded first
    /// — or, where the store can, handed back to commit with the admission — so a decision that
    /// cannot be recorded admits nothing (it fails closed).
    pub(super) async fn rule(
        &self,
        s: &Submission,
        target: &Target,
        digest: &RequestDigest,
        id: InvocationId,
    ) -> Result<(Option<Hold>, Option<(String, AuditEntry)>), Error> {
        let facts = CallFacts {
            principal: &s.principal,
            ingress: s.ingress,
            target,
            digest,
            request: &s.request,
            grant: s.grant.as_deref(),
            invocation: id,
        };
        let ruling = self.inner.decide(&facts, s.caller()).await;
        let mut with_admission = None;
        if let Some(log) = self.inner.audit.as_ref() {
            let entry = audit::decision(&facts, id, s.ingress_key.as_ref(), &ruling);
            let admitted = matches!(ruling.verdict, Verdict::Allow | Verdict::Hold { .. });
            match log.admission_partition() {
                // Recorded in the admission's own commit: both or neither.
                Some(partition) if admitted => with_admission = Some((partition.to_string(), entry)),
                _ => log.append(entry).await.map_err(|e| {
                    self.inner.policy.release(id); // not admitted: a slot it took is free again
                    Error::unavailable(format!(
                        "the call's policy decision cannot be recorded in the audit log ({}); nothing was admitted",
                        e.message
                    ))
                })?,
            }
        }
        let (upstream, operation) = (&target.upstream, &target.operation);
        match ruling.verdict {
            Verdict::Allow => Ok((None, with_admission)),
            Verdict::Hold { reason } => {
                info!(%upstream, %operation, basis = %ruling.basis, "call held for approval");
                Ok((Some(Hold { reason, basis: ruling.basis }), with_admission))
            }
            Verdict::Deny { reason } => {
                info!(%upstream, %operation, basis = %ruling.basis, "call denied by policy");
                Err(Error::denied(reason))
            }
            Verdict::Defer { retry_after_ms, reason } => {
                info!(%upstream, %operation, basis = %ruling.basis, "call deferred by a quota");
                Err(Error::deferred(
                    format!("{reason}; nothing was admitted, retry after {retry_after_ms} ms"),
                    retry_after_ms,
                ))
            }
        }
    }

    /// The ruling on a [`Passage`] (see [`Invocations::decide_passage`]).
    pub(super) async fn pass(&self, p: &Passage) -> Result<(), Error> {
        let target =
            Target { upstream: p.upstream.clone(), operation: p.operation.clone(), effect: EffectClass::ReadOnly };
        let digest = RequestDigest::compute(&target.upstream, &target.operation, &p.request)?;
        let id = InvocationId::new();
        let facts = CallFacts {
            principal: &p.principal,
            ingress: p.ingress,
            target: &target,
            digest: &digest,
            request: &p.request,
            grant: p.grant.as_deref(),
            invocation: id,
        };
        let ruling = self.inner.decide(&facts, p.ingress).await;
        self.inner.policy.release(id); // a passage holds no concurrency slot
        if let Some(log) = self.inner.audit.as_ref() {
            let mut entry = audit::decision(&facts, id, None, &ruling);
            entry.invocation = None;
            if let Some(map) = entry.detail.as_object_mut() {
                map.insert("passage".into(), true.into());
            }
            log.append(entry).await.map_err(|e| {
                Error::unavailable(format!(
                    "the request's policy decision cannot be recorded in the audit log ({}); nothing was sent",
                    e.message
                ))
            })?;
        }
        let (upstream, operation) = (&target.upstream, &target.operation);
        match ruling.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny { reason } => {
                info!(%upstream, %operation, basis = %ruling.basis, "request denied by policy");
                Err(Error::denied(reason))
            }
            Verdict::Hold { reason } => {
                info!(%upstream, %operation, basis = %ruling.basis, "request refused: it would wait for approval");
                Err(Error::denied(format!(
                    "{reason}; only a tools/call (or an A2A message) can wait for approval, so `{operation}` on \
                     `{upstream}` is refused"
                )))
            }
            Verdict::Defer { retry_after_ms, reason } => Err(Error::deferred(
                format!("{reason}; nothing was sent, retry after {retry_after_ms} ms"),
                retry_after_ms,
            )),
        }
    }
}

impl Engine {
    /// The policy in force: its version and configuration (see [`crate::PolicyPoint::in_force`]).
    pub fn policy_in_force(&self) -> Option<(String, serde_json::Value)> {
        self.inner.policy.in_force()
    }

    /// What the policy enforcement point would rule on `s` now, changing nothing: nothing is
    /// admitted, audited or counted, no quota token or concurrency slot is taken. The target
    /// resolves as a submission's does (an unknown upstream is an error), or, for a `passage`,
    /// as a `read_only` operation (see [`Passage`]). Which face may call the upstream is not
    /// checked: `s.ingress` names the face the call would come through.
    pub async fn simulate(&self, s: &Submission, passage: bool) -> Result<(Target, Ruling), Error> {
        let target = match passage {
            true => {
                Target { upstream: s.upstream.clone(), operation: s.operation.clone(), effect: EffectClass::ReadOnly }
            }
            false => self.inner.upstreams.target(&s.upstream, &s.operation)?,
        };
        let digest = RequestDigest::compute(&target.upstream, &target.operation, &s.request)?;
        let facts = CallFacts {
            principal: &s.principal,
            ingress: s.ingress,
            target: &target,
            digest: &digest,
            request: &s.request,
            grant: s.grant.as_deref(),
            invocation: InvocationId::new(),
        };
        let ruling = self.inner.policy.simulate(&facts).await;
        Ok((target, ruling))
    }
}

impl Inner {
    /// The policy enforcement point's ruling on `facts`, counted under the protocol the caller
    /// spoke.
    async fn decide(&self, facts: &CallFacts<'_>, caller: Ingress) -> Ruling {
        let ruling = self.policy.decide(facts).await;
        if let Some(m) = self.meter.as_ref() {
            m.decided(caller, ruling.verdict.name());
        }
        ruling
    }
}
