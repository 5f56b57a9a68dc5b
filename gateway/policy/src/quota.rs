//! Quotas at admission: token buckets per tenant (and, if asked, per subject, upstream or
//! operation). A call over its quota is deferred — nothing is admitted, and the caller learns
//! when a token is back — so one tenant's flood spends only its own tokens.
//!
//! Across replicas each bucket is a **per-replica share**: with `replicas = N`, every replica
//! refills at `rate_per_s / N` and holds at most `ceil(burst / N)` tokens, so N replicas together
//! admit at most `rate_per_s` calls a second (plus at most N−1 calls of burst rounding) however
//! the load balancer spreads them; a replica that is down leaves its share unused.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;
use crate::pattern::{any, glob, names_resource};
use crate::request::DecisionRequest;

/// What a quota counts calls by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Tenant,
    Subject,
    Upstream,
    Operation,
}

pub(crate) fn per_tenant() -> Vec<Dimension> {
    vec![Dimension::Tenant]
}

pub(crate) fn one() -> u32 {
    1
}

/// A rate limit for the calls its patterns name, counted per distinct value of `per`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// A name for decisions, told to a deferred caller (default: its place, e.g. `quotas[0]`).
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
    /// What buckets are keyed by: one token bucket per distinct combination of these values.
    #[serde(default = "per_tenant")]
    pub per: Vec<Dimension>,
    /// Calls a second, sustained.
    pub rate_per_s: f64,
    /// Calls at once, after a quiet spell.
    pub burst: u32,
    /// How many gateway replicas share this quota (each enforces its share).
    #[serde(default = "one")]
    pub replicas: u32,
}

impl Quota {
    pub(crate) fn check(&self) -> Result<(), PolicyError> {
        if !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0) {
            return Err(PolicyError("rate_per_s must be a positive number".into()));
        }
        if self.burst == 0 || self.replicas == 0 {
            return Err(PolicyError("burst and replicas must be at least 1".into()));
        }
        if self.per.is_empty() {
            return Err(PolicyError("per names at least one of tenant, subject, upstream, operation".into()));
        }
        Ok(())
    }

    fn names(&self, req: &DecisionRequest) -> bool {
        names_scoped(&self.upstream, &self.operation, self.tenant.as_deref(), req)
    }

    /// This replica's refill rate and capacity.
    fn share(&self) -> (f64, f64) {
        (self.rate_per_s / f64::from(self.replicas), f64::from(self.burst.div_ceil(self.replicas)))
    }

    fn key(&self, req: &DecisionRequest) -> String {
        key_of(&self.per, req)
    }
}

/// Whether a limit's patterns (and tenant pattern, if any) name the call.
pub(crate) fn names_scoped(upstream: &str, operation: &str, tenant: Option<&str>, req: &DecisionRequest) -> bool {
    names_resource(upstream, operation, req) && tenant.is_none_or(|p| glob(p, req.subject.tenant.as_str()))
}

/// What a limit counts the call under: its values of `per`.
pub(crate) fn key_of(per: &[Dimension], req: &DecisionRequest) -> String {
    let part = |d: &Dimension| match d {
        Dimension::Tenant => req.subject.tenant.as_str(),
        Dimension::Subject => req.subject.id.as_str(),
        Dimension::Upstream => req.resource.upstream.as_str(),
        Dimension::Operation => req.resource.operation.as_str(),
    };
    per.iter().map(part).collect::<Vec<_>>().join("\u{1f}")
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of every quota on this replica, bounded in number.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    map: Mutex<HashMap<(usize, String), Bucket>>,
}

/// Most buckets kept; when full, idle (refilled) ones make room, and a new key that still finds
/// no room is deferred (fail closed) rather than let through uncounted.
const MAX_BUCKETS: usize = 100_000;

impl Buckets {
    /// Takes one token from every quota that names the call, or none if any is empty: then the
    /// id of that quota and how long until it has a token again.
    pub(crate) fn take(&self, quotas: &[Quota], req: &DecisionRequest, now: Instant) -> Result<(), (String, u64)> {
        self.spend(quotas, req, now, true)
    }

    /// What [`take`](Self::take) would answer now, taking nothing (the policy simulator).
    pub(crate) fn would_take(
        &self,
        quotas: &[Quota],
        req: &DecisionRequest,
        now: Instant,
    ) -> Result<(), (String, u64)> {
        self.spend(quotas, req, now, false)
    }

    fn spend(&self, quotas: &[Quota], req: &DecisionRequest, now: Instant, commit: bool) -> Result<(), (String, u64)> {
        let Ok(mut map) = self.map.lock() else { return Err(("quotas".into(), 1000)) };
        let mut taken = Vec::new();
        for (i, q) in quotas.iter().enumerate().filter(|(_, q)| q.names(req)) {
            let (rate, capacity) = q.share();
            let key = (i, q.key(req));
            let mut bucket = map.get(&key).copied().unwrap_or(Bucket { tokens: capacity, at: now });
            bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(capacity);
            bucket.at = now;
            if bucket.tokens < 1.0 {
                let wait_ms = ((1.0 - bucket.tokens) / rate * 1000.0).ceil();
                return Err((q.id.clone().unwrap_or_else(|| format!("quotas[{i}]")), wait_ms as u64));
            }
            bucket.tokens -= 1.0;
            taken.push((key, bucket));
        }
        if !commit {
            return Ok(());
        }
        if map.len() + taken.len() > MAX_BUCKETS {
            map.retain(|(i, _), b| {
                let (rate, capacity) = quotas.get(*i).map_or((1.0, 1.0), Quota::share);
                b.tokens + now.duration_since(b.at).as_secs_f64() * rate < capacity
            });
            if map.len() + taken.len() > MAX_BUCKETS {
                return Err(("quotas".into(), 1000));
            }
        }
        map.extend(taken);
        Ok(())
    }
}
