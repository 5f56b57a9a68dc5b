//! The decision cache of the decision points that decide in place of the tiers (an AuthZEN PDP,
//! a Cedar policy set): a decision is reused for the same call — same tenant, subject, action,
//! ingress, upstream, operation, effect, request digest and tier — under the same policy
//! version, for its tier's TTL (routine long, sensitive at most 60 s, critical never).
//!
//! Why it is never stale: the policy version (the hash of the `[policy]` table and of the Cedar
//! policy set) is part of every key, and a policy change starts a new evaluator, with an empty
//! cache, on every replica. Grants are never in it: the grant a call presents is verified and
//! checked against the store's revocations on every call, before the cache is asked, and a
//! call a grant lets run never reaches a decision point. What is cached is only what a decision
//! point answers, which depends on nothing else than the key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::request::{DecisionRequest, Tier};

/// Seconds a decision is reused, by tier (0: not cached; a `critical` call never is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CacheTtl {
    /// Seconds a `routine` call's decision is reused; at most 86400, 0: not cached.
    pub routine_s: u64,
    /// Seconds a `sensitive` call's decision is reused; at most 60, 0: not cached.
    pub sensitive_s: u64,
}

impl Default for CacheTtl {
    fn default() -> Self {
        Self { routine_s: 300, sensitive_s: 30 }
    }
}

impl CacheTtl {
    pub(crate) fn of(self, tier: Option<Tier>) -> Duration {
        Duration::from_secs(match tier {
            Some(Tier::Routine) => self.routine_s,
            Some(Tier::Sensitive) => self.sensitive_s,
            Some(Tier::Critical) | None => 0,
        })
    }

    /// `place`: where it is configured, for the error.
    pub(crate) fn check(self, place: &str) -> Result<(), crate::PolicyError> {
        if self.sensitive_s > 60 || self.routine_s > 86_400 {
            return Err(crate::PolicyError(format!(
                "{place}: sensitive_s must be at most 60 and routine_s at most 86400"
            )));
        }
        Ok(())
    }
}

/// The most decisions a cache keeps (then it is emptied: a bound, not an eviction policy).
const CACHE_MAX: usize = 100_000;

/// Decisions of one decision point, by call and policy version.
#[derive(Debug)]
pub(crate) struct DecisionCache<T> {
    ttl: CacheTtl,
    entries: Mutex<HashMap<String, (T, Instant)>>,
}

impl<T: Clone> DecisionCache<T> {
    pub(crate) fn new(ttl: CacheTtl) -> Self {
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    /// The key of `req` decided at `tier` under policy `version`, if a decision at that tier
    /// may be cached at all.
    pub(crate) fn key(&self, req: &DecisionRequest, tier: Option<Tier>, version: &str) -> Option<String> {
        if self.ttl.of(tier).is_zero() {
            return None;
        }
        let (subject, context, resource) = (&req.subject, &req.context, &req.resource);
        Some(format!(
            "{version}\0{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}",
            subject.tenant.as_str(),
            subject.id,
            req.action.name,
            context.ingress.name(),
            resource.upstream,
            resource.operation,
            resource.effect.as_str(),
            context.digest.as_str(),
            tier.map_or("", Tier::as_str)
        ))
    }

    /// The decision kept under `key`, while its TTL runs.
    pub(crate) fn get(&self, key: &str, now: Instant) -> Option<T> {
        let entries = self.entries.lock().ok()?;
        entries.get(key).filter(|(_, until)| now < *until).map(|(d, _)| d.clone())
    }

    /// Keeps `decision` under `key` for `tier`'s TTL from `now`.
    pub(crate) fn put(&self, key: String, tier: Option<Tier>, decision: T, now: Instant) {
        let ttl = self.ttl.of(tier);
        if ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CACHE_MAX {
                entries.clear();
            }
            entries.insert(key, (decision, now + ttl));
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchyard_contract::{
        CallFacts, EffectClass, Ingress, InvocationId, Principal, RequestDigest, Target, TenantId,
    };

    fn with_request<R>(tenant: &str, op: &str, args: serde_json::Value, f: impl FnOnce(&DecisionRequest) -> R) -> R {
        let principal = Principal::new(TenantId::new(tenant).unwrap(), "alice");
        let target = Target { upstream: "crm".into(), operation: op.into(), effect: EffectClass::Write };
        let digest = RequestDigest::compute("crm", op, &args).unwrap();
        let facts = CallFacts {
            principal: &principal,
            ingress: Ingress::Mcp,
            target: &target,
            digest: &digest,
            request: &args,
            grant: None,
            invocation: InvocationId::new(),
        };
        f(&DecisionRequest::from_facts(&facts))
    }

    #[test]
    fn ttls_follow_the_tier_and_critical_is_never_cached() {
        let ttl = CacheTtl::default();
        assert_eq!(ttl.of(Some(Tier::Routine)), Duration::from_secs(300));
        assert_eq!(ttl.of(Some(Tier::Sensitive)), Duration::from_secs(30));
        assert!(ttl.of(Some(Tier::Critical)).is_zero() && ttl.of(None).is_zero());
        assert!(CacheTtl { sensitive_s: 61, ..ttl }.check("x").is_err());
        assert!(CacheTtl { routine_s: 86_401, ..ttl }.check("x").is_err());
        assert!(ttl.check("x").is_ok());
    }

    #[test]
    fn a_decision_is_reused_for_the_same_call_and_version_until_its_ttl_ends() {
        let cache = DecisionCache::new(CacheTtl { routine_s: 300, sensitive_s: 60 });
        let t0 = Instant::now();
        let key =
            |tenant, op, args, tier, version: &str| with_request(tenant, op, args, |r| cache.key(r, tier, version));
        assert_eq!(key("acme", "update", json!({}), Some(Tier::Critical), "v1"), None, "critical is never keyed");
        let k = key("acme", "update", json!({"a": 1}), Some(Tier::Sensitive), "v1")
            .unwrap_or_else(|| panic!("sensitive is cached"));
        cache.put(k.clone(), Some(Tier::Sensitive), "allow", t0);
        assert_eq!(cache.get(&k, t0 + Duration::from_secs(59)), Some("allow"));
        assert_eq!(cache.get(&k, t0 + Duration::from_secs(60)), None, "the TTL has run out");
        // Anything that differs is another key: the arguments, the operation, the tenant, the
        // tier, and the policy version (a changed policy never reuses a decision).
        for other in [
            key("acme", "update", json!({"a": 2}), Some(Tier::Sensitive), "v1"),
            key("acme", "delete", json!({"a": 1}), Some(Tier::Sensitive), "v1"),
            key("globex", "update", json!({"a": 1}), Some(Tier::Sensitive), "v1"),
            key("acme", "update", json!({"a": 1}), Some(Tier::Routine), "v1"),
            key("acme", "update", json!({"a": 1}), Some(Tier::Sensitive), "v2"),
        ] {
            let other = other.unwrap_or_else(|| panic!("cacheable"));
            assert_ne!(other, k);
            assert_eq!(cache.get(&other, t0), None);
        }
        // A critical decision is not kept even if asked to.
        cache.put("critical".into(), Some(Tier::Critical), "allow", t0);
        assert_eq!(cache.get("critical", t0), None);
    }

    fn tier() -> impl proptest::strategy::Strategy<Value = Tier> {
        use proptest::prelude::*;
        prop_oneof![Just(Tier::Routine), Just(Tier::Sensitive), Just(Tier::Critical)]
    }

    proptest::proptest! {
        /// A policy change (another version) never finds a decision made under the old one,
        /// whatever the call; a critical call is never kept; and the same call under the same
        /// version is always found while its TTL runs.
        #[test]
        fn a_policy_change_invalidates_every_decision(
            v1 in "[0-9a-f]{16}", v2 in "[0-9a-f]{16}", t in tier(), amount in 0u32..1000, op in "[a-z]{1,8}",
        ) {
            let cache = DecisionCache::new(CacheTtl::default());
            let now = Instant::now();
            let (k1, k2) = with_request("acme", &op, json!({"amount": amount}), |r| {
                (cache.key(r, Some(t), &v1), cache.key(r, Some(t), &v2))
            });
            proptest::prop_assert_eq!(k1.is_none(), t == Tier::Critical);
            if let (Some(k1), Some(k2)) = (k1, k2) {
                cache.put(k1.clone(), Some(t), amount, now);
                proptest::prop_assert_eq!(cache.get(&k1, now), Some(amount));
                if v1 != v2 {
                    proptest::prop_assert_eq!(cache.get(&k2, now), None);
                }
            }
        }
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = DecisionCache::new(CacheTtl::default());
        let t0 = Instant::now();
        for i in 0..=CACHE_MAX {
            cache.put(i.to_string(), Some(Tier::Routine), i, t0);
        }
        assert!(cache.len() <= CACHE_MAX, "{}", cache.len());
    }
}
