//! The audit entries the engine writes: one per policy decision (before the call is admitted,
//! so a decision that cannot be recorded admits nothing), and one per approval, denial, expiry
//! and reconciliation (after it commits: the invocation's own journal already holds it, and a
//! failed append is logged, not undone; see [`Invocation::audit_entry`](crate::state::Invocation::audit_entry)).

use serde_json::{Value, json};
use tracing::error;

use crate::audit::{AuditEntry, AuditKind};
use crate::id::InvocationId;
use crate::policy::{CallFacts, Ruling, Verdict};
use crate::principal::IngressKey;

use super::Inner;

/// A decision on a call that would be admitted as `id`.
pub(super) fn decision(
    facts: &CallFacts<'_>,
    id: InvocationId,
    key: Option<&IngressKey>,
    ruling: &Ruling,
) -> AuditEntry {
    let mut detail = json!({
        "ingress": facts.ingress.name(),
        "upstream": facts.target.upstream,
        "operation": facts.target.operation,
        "effect": facts.target.effect.as_str(),
        "digest": facts.digest.as_str(),
        "basis": ruling.basis,
        "grant_presented": facts.grant.is_some(),
    });
    let (reason, retry) = match &ruling.verdict {
        Verdict::Allow => (None, None),
        Verdict::Deny { reason } | Verdict::Hold { reason } => (Some(reason), None),
        Verdict::Defer { retry_after_ms, reason } => (Some(reason), Some(*retry_after_ms)),
    };
    if let Some(map) = detail.as_object_mut() {
        map.insert("verdict".into(), ruling.verdict.name().into());
        map.extend(reason.map(|r| ("reason".to_string(), Value::from(r.as_str()))));
        map.extend(retry.map(|r| ("retry_after_ms".to_string(), Value::from(r))));
        map.extend(key.map(|k| ("idempotency_key".to_string(), Value::from(k.as_str()))));
    }
    AuditEntry {
        kind: AuditKind::Decision,
        tenant: facts.principal.tenant.clone(),
        actor: facts.principal.subject.clone(),
        invocation: Some(id),
        detail,
    }
}

impl Inner {
    /// Records a step that has already committed; a failure is logged (the invocation's journal
    /// holds the step either way).
    pub(super) async fn audit_step(&self, entry: AuditEntry) {
        if let Some(log) = self.audit.as_ref() {
            let (kind, id) = (entry.kind, entry.invocation);
            if let Err(e) = log.append(entry).await {
                error!(kind = kind.as_str(), invocation.id = ?id, error = %e, "audit entry not recorded");
            }
        }
    }
}
