//! Concurrency limits at admission (`[[policy.concurrency]]`): at most `max_in_flight` calls
//! that a limit names run at once, counted per distinct value of `per` (default: per tenant).
//! A call that would exceed one is deferred (nothing admitted; the caller is told to come back
//! shortly), so one tenant's flood of slow calls cannot take every worker from another.
//!
//! Only a call the policy lets run takes a slot, when it is decided; the engine gives the slot
//! back when the call is not admitted to run here after all (its idempotency key named an
//! earlier call, its admission failed) and when its driver on this replica ends
//! ([`PolicyPoint::release`](switchyard_contract::PolicyPoint::release)).
//!
//! Across replicas each limit is a **per-replica share**: with `replicas = N`, every replica
//! lets `max(1, floor(max_in_flight / N))` run, so N replicas together run at most
//! `max_in_flight` (when it is at least N) however the load balancer spreads the calls. Calls
//! recovered after a restart run without a slot.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use switchyard_contract::InvocationId;

use crate::error::PolicyError;
use crate::pattern::any;
use crate::quota::{Dimension, key_of, names_scoped, one, per_tenant};
use crate::request::DecisionRequest;

/// A limit on the calls its patterns name that run at once, per distinct value of `per`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Concurrency {
    /// A name for decisions, told to a deferred caller (default: its place, e.g.
    /// `concurrency[0]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The upstream pattern (`*` any run of characters).
    #[serde(default = "any")]
    pub upstream: String,
    /// The operation pattern.
    #[serde(default = "any")]
    pub operation: String,
    /// The tenant pattern; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// What the limit counts by: calls in flight are counted per distinct combination of these
    /// values.
    #[serde(default = "per_tenant")]
    pub per: Vec<Dimension>,
    /// The most calls it names that run at once, per distinct value of `per`; at least 1.
    pub max_in_flight: u32,
    /// How many gateway replicas share this limit (each enforces its share).
    #[serde(default = "one")]
    pub replicas: u32,
}

impl Concurrency {
    pub(crate) fn check(&self) -> Result<(), PolicyError> {
        if self.max_in_flight == 0 || self.replicas == 0 {
            return Err(PolicyError("max_in_flight and replicas must be at least 1".into()));
        }
        if self.per.is_empty() {
            return Err(PolicyError("per names at least one of tenant, subject, upstream, operation".into()));
        }
        Ok(())
    }

    /// This replica's share.
    fn share(&self) -> u32 {
        (self.max_in_flight / self.replicas).max(1)
    }

    fn name(&self, i: usize) -> String {
        self.id.clone().unwrap_or_else(|| format!("concurrency[{i}]"))
    }
}

/// Slots held on this replica: how many per (limit, key), and which each call holds.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    state: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    counts: HashMap<(usize, String), u32>,
    held: HashMap<InvocationId, Vec<(usize, String)>>,
}

impl InFlight {
    /// Takes a slot of every limit that names the call for `id`, or none: then the name of the
    /// full limit and its share.
    pub(crate) fn take(
        &self,
        limits: &[Concurrency],
        req: &DecisionRequest,
        id: InvocationId,
    ) -> Result<(), (String, u32)> {
        self.claim(limits, req, Some(id))
    }

    /// What [`take`](Self::take) would answer now, taking nothing (the policy simulator).
    pub(crate) fn would_take(&self, limits: &[Concurrency], req: &DecisionRequest) -> Result<(), (String, u32)> {
        self.claim(limits, req, None)
    }

    fn claim(
        &self,
        limits: &[Concurrency],
        req: &DecisionRequest,
        id: Option<InvocationId>,
    ) -> Result<(), (String, u32)> {
        let mine: Vec<(usize, &Concurrency)> = limits
            .iter()
            .enumerate()
            .filter(|(_, c)| names_scoped(&c.upstream, &c.operation, c.tenant.as_deref(), req))
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        let Ok(mut slots) = self.state.lock() else { return Err(("concurrency".into(), 0)) };
        let keys: Vec<(usize, String)> = mine.iter().map(|(i, c)| (*i, key_of(&c.per, req))).collect();
        for ((i, c), key) in mine.iter().zip(&keys) {
            if slots.counts.get(key).copied().unwrap_or(0) >= c.share() {
                return Err((c.name(*i), c.share()));
            }
        }
        let Some(id) = id else { return Ok(()) };
        for key in &keys {
            *slots.counts.entry(key.clone()).or_default() += 1;
        }
        slots.held.entry(id).or_default().extend(keys);
        Ok(())
    }

    /// Gives back every slot `id` holds (nothing if it holds none).
    pub(crate) fn release(&self, id: InvocationId) {
        let Ok(mut slots) = self.state.lock() else { return };
        for key in slots.held.remove(&id).unwrap_or_default() {
            if let Some(n) = slots.counts.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    slots.counts.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;
    use switchyard_contract::{EffectClass, Ingress, RequestDigest, TenantId};

    use super::*;
    use crate::request::{Action, Context, Resource, Subject, Untrusted};

    fn req<'a>(tenant: &str, digest: &'a RequestDigest, request: &'a serde_json::Value) -> DecisionRequest<'a> {
        DecisionRequest {
            subject: Subject { tenant: TenantId::new(tenant).unwrap(), id: "alice".into() },
            action: Action { name: "submit".into() },
            resource: Resource { upstream: "slow".into(), operation: "op".into(), effect: EffectClass::Write },
            context: Context {
                ingress: Ingress::Admin,
                agent: None,
                digest: Cow::Borrowed(digest),
                request: Cow::Borrowed(request),
                hints: Untrusted::default(),
            },
        }
    }

    fn limit(max: u32, replicas: u32) -> Concurrency {
        Concurrency {
            id: Some("l".into()),
            upstream: "slow".into(),
            operation: "*".into(),
            tenant: None,
            per: vec![Dimension::Tenant],
            max_in_flight: max,
            replicas,
        }
    }

    #[test]
    fn slots_are_counted_per_tenant_and_given_back_once() {
        let request = json!({});
        let digest = RequestDigest::compute("slow", "op", &request).unwrap();
        let (acme, globex) = (req("acme", &digest, &request), req("globex", &digest, &request));
        let limits = [limit(2, 1)];
        let slots = InFlight::default();
        let ids: Vec<InvocationId> = (0..4).map(|_| InvocationId::new()).collect();
        for _ in 0..3 {
            assert!(slots.would_take(&limits, &acme).is_ok(), "a simulation takes no slot");
        }
        assert!(slots.take(&limits, &acme, ids[0]).is_ok() && slots.take(&limits, &acme, ids[1]).is_ok());
        assert_eq!(slots.would_take(&limits, &acme), Err(("l".into(), 2)), "and says when a call would wait");
        assert_eq!(slots.take(&limits, &acme, ids[2]), Err(("l".into(), 2)), "the third waits");
        assert!(slots.take(&limits, &globex, ids[3]).is_ok(), "another tenant has its own");
        slots.release(ids[0]);
        slots.release(ids[0]); // twice: the second gives nothing back
        assert!(slots.take(&limits, &acme, ids[2]).is_ok());
        assert!(slots.take(&limits, &acme, InvocationId::new()).is_err(), "a double release freed no extra slot");
    }

    #[test]
    fn each_replica_runs_its_share() {
        assert_eq!(limit(10, 3).share(), 3, "3 replicas × 3 ≤ 10");
        assert_eq!(limit(2, 5).share(), 1, "never below one");
        assert!(limit(0, 1).check().is_err() && limit(1, 0).check().is_err());
    }
}
