//! Cedar policies, evaluated in process (`cedar-policy`): for the tenants `[policy.cedar]` names,
//! a Cedar policy set decides in place of the tiers (the envelope, deny rules and quotas still
//! come first). The policy set is read and validated against the gateway's schema ([`SCHEMA`],
//! strict mode) when the gateway starts: a policy that names an attribute, action or type the
//! gateway never sends refuses the start. The set's hash is recorded with every decision.
//!
//! Each call is one request: principal `Switchyard::Subject::"<subject>"` (in
//! `Switchyard::Tenant::"<tenant>"`), action `Switchyard::Action::"tools/call"`, `"SendMessage"`
//! or `"submit"`, resource `Switchyard::Operation::"<upstream>/<operation>"` (in
//! `Switchyard::Upstream::"<upstream>"`, with its `upstream`, `name` and `effect`), and context
//! `{ingress, tier, digest}` (`tier`: what the local rules would assign, argument conditions
//! included). Cedar's answer maps to a verdict: `Deny` refuses the call, saying the `@reason`
//! of the `forbid` that decided (else that no policy permits it); `Allow` runs it, unless every
//! `permit` that decided carries `@hold("…")`, which holds it for approval with that reason. An
//! evaluation error in a policy that would have permitted the call leaves it denied (Cedar skips
//! erroring policies), so a broken condition fails closed. A decision is reused for the same
//! call under the same policy for its tier's TTL (`cache`, as for AuthZEN: routine 300 s,
//! sensitive 30 s — at most 60 —, critical never); see the cache module for why it is never
//! stale.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicySet, Request,
    RestrictedExpression, Schema, ValidationMode, Validator,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchyard_contract::Verdict;

use crate::cache::{CacheTtl, DecisionCache};
use crate::error::PolicyError;
use crate::request::{DecisionRequest, Tier};

/// The entity model the gateway sends: policies are validated against it.
pub const SCHEMA: &str = r#"namespace Switchyard {
  entity Tenant;
  entity Subject in [Tenant] { tenant: String };
  entity Upstream;
  entity Operation in [Upstream] { upstream: String, name: String, effect: String };
  action "tools/call", "SendMessage", "submit" appliesTo {
    principal: [Subject],
    resource: [Operation],
    context: { ingress: String, tier: String, digest: String }
  };
}
"#;

/// `[policy.cedar]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CedarConfig {
    /// The policy set (Cedar syntax).
    pub policies: PathBuf,
    /// The tenants whose calls it decides; empty: every tenant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<String>,
    /// How long a decision is reused for the same call (same subject, action, resource,
    /// request digest and tier, under the same policy set), by the call's tier. A `critical`
    /// call is always evaluated.
    #[serde(default)]
    pub cache: CacheTtl,
}

impl CedarConfig {
    pub(crate) fn decides_for(&self, tenant: &str) -> bool {
        crate::pattern::names_tenant(&self.tenants, tenant)
    }
}

/// The schema's type names, parsed once.
struct Types {
    tenant: EntityTypeName,
    subject: EntityTypeName,
    upstream: EntityTypeName,
    operation: EntityTypeName,
    action: EntityTypeName,
}

impl Types {
    fn new() -> Result<Self, PolicyError> {
        let name = |n: &str| {
            EntityTypeName::from_str(&format!("Switchyard::{n}"))
                .map_err(|e| PolicyError(format!("cedar: the gateway's type name `{n}`: {e}")))
        };
        Ok(Self {
            tenant: name("Tenant")?,
            subject: name("Subject")?,
            upstream: name("Upstream")?,
            operation: name("Operation")?,
            action: name("Action")?,
        })
    }
}

/// A validated policy set, ready to decide.
pub struct Cedar {
    config: CedarConfig,
    policies: PolicySet,
    schema: Schema,
    authorizer: Authorizer,
    types: Types,
    cache: DecisionCache<CedarDecision>,
    /// The first 16 hex digits of the SHA-256 of the policy text.
    hash: String,
}

impl std::fmt::Debug for Cedar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cedar").field("policies", &self.config.policies).field("hash", &self.hash).finish()
    }
}

/// What the policy set decided on one call, and which policies decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CedarDecision {
    pub verdict: Verdict,
    /// `allowed by …`, `held by …`, `denied by …` or `denied: no policy permits it`.
    pub basis: String,
}

impl Cedar {
    /// Reads `config.policies` and validates it against [`SCHEMA`].
    pub fn load(config: &CedarConfig) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(&config.policies)
            .map_err(|e| PolicyError(format!("cedar: cannot read {}: {e}", config.policies.display())))?;
        Self::from_text(config.clone(), &text)
    }

    /// `text`: the policy set `config.policies` holds.
    pub fn from_text(config: CedarConfig, text: &str) -> Result<Self, PolicyError> {
        config.cache.check("cedar.cache")?;
        let place = config.policies.display().to_string();
        let policies =
            PolicySet::from_str(text).map_err(|e| PolicyError(format!("cedar: {place} does not parse: {e}")))?;
        let (schema, _) = Schema::from_cedarschema_str(SCHEMA)
            .map_err(|e| PolicyError(format!("cedar: the gateway's schema: {e}")))?;
        let result = Validator::new(schema.clone()).validate(&policies, ValidationMode::Strict);
        if !result.validation_passed() {
            let errors: Vec<String> = result.validation_errors().map(ToString::to_string).collect();
            return Err(PolicyError(format!(
                "cedar: {place} does not validate against the gateway's schema: {}",
                errors.join("; ")
            )));
        }
        let hash = hex::encode(Sha256::digest(text.as_bytes()))[..16].to_string();
        let cache = DecisionCache::new(config.cache);
        let types = Types::new()?;
        Ok(Self { config, policies, schema, authorizer: Authorizer::new(), types, cache, hash })
    }

    pub fn config(&self) -> &CedarConfig {
        &self.config
    }

    /// The policy set's hash, recorded with each decision.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Decides `req` (`tier`: what the local rules assign it; `version`: the whole policy's,
    /// which includes this set's hash), reusing the decision on the same call within its tier's
    /// TTL; the flag says whether it was reused.
    pub fn decide_cached(&self, req: &DecisionRequest, tier: Tier, version: &str) -> (CedarDecision, bool) {
        let key = self.cache.key(req, Some(tier), version);
        if let Some(hit) = key.as_ref().and_then(|k| self.cache.get(k, Instant::now())) {
            return (hit, true);
        }
        let decision = self.decide(req, tier);
        if let Some(k) = key {
            self.cache.put(k, Some(tier), decision.clone(), Instant::now());
        }
        (decision, false)
    }

    /// Decides `req`; `tier` is what the local rules assign it.
    pub fn decide(&self, req: &DecisionRequest, tier: Tier) -> CedarDecision {
        match self.request(req, tier) {
            Ok((request, entities)) => self.answer(&self.authorizer.is_authorized(&request, &self.policies, &entities)),
            Err(why) => {
                let reason = format!("the Cedar request could not be built ({why}); refused");
                CedarDecision { verdict: Verdict::Deny { reason: reason.clone() }, basis: reason }
            }
        }
    }

    /// The request and its four entities, built directly (no JSON on the way), checked against
    /// the schema.
    fn request(&self, req: &DecisionRequest, tier: Tier) -> Result<(Request, Entities), String> {
        let uid = |ty: &EntityTypeName, id: &str| EntityUid::from_type_name_and_id(ty.clone(), EntityId::new(id));
        let string = |v: &str| RestrictedExpression::new_string(v.to_string());
        let types = &self.types;
        let operation_id = format!("{}/{}", req.resource.upstream, req.resource.operation);
        let tenant = uid(&types.tenant, req.subject.tenant.as_str());
        let subject = uid(&types.subject, &req.subject.id);
        let upstream = uid(&types.upstream, &req.resource.upstream);
        let operation = uid(&types.operation, &operation_id);
        let error = |e: &dyn std::fmt::Display| e.to_string();
        let entities = [
            Entity::new_no_attrs(tenant.clone(), HashSet::new()),
            Entity::new(
                subject.clone(),
                HashMap::from([("tenant".to_string(), string(req.subject.tenant.as_str()))]),
                HashSet::from([tenant]),
            )
            .map_err(|e| error(&e))?,
            Entity::new_no_attrs(upstream.clone(), HashSet::new()),
            Entity::new(
                operation.clone(),
                HashMap::from([
                    ("upstream".to_string(), string(&req.resource.upstream)),
                    ("name".to_string(), string(&req.resource.operation)),
                    ("effect".to_string(), string(req.resource.effect.as_str())),
                ]),
                HashSet::from([upstream]),
            )
            .map_err(|e| error(&e))?,
        ];
        let entities = Entities::from_entities(entities, Some(&self.schema)).map_err(|e| error(&e))?;
        let action = uid(&types.action, &req.action.name);
        let context = Context::from_pairs([
            ("ingress".to_string(), string(req.context.ingress.name())),
            ("tier".to_string(), string(tier.as_str())),
            ("digest".to_string(), string(req.context.digest.as_str())),
        ])
        .map_err(|e| error(&e))?;
        let request = Request::new(subject, action, operation, context, Some(&self.schema)).map_err(|e| error(&e))?;
        Ok((request, entities))
    }

    fn answer(&self, response: &cedar_policy::Response) -> CedarDecision {
        let decided: Vec<_> = response.diagnostics().reason().collect();
        let name = |id: &cedar_policy::PolicyId| {
            self.policies.annotation(id, "id").map_or_else(|| id.to_string(), str::to_string)
        };
        let names = decided.iter().map(|id| format!("`{}`", name(id))).collect::<Vec<_>>().join(", ");
        match response.decision() {
            Decision::Allow => {
                let holds: Vec<&str> = decided.iter().filter_map(|id| self.policies.annotation(id, "hold")).collect();
                if !decided.is_empty() && holds.len() == decided.len() {
                    let reason = holds.first().map_or("a Cedar policy holds it", |r| *r).to_string();
                    return CedarDecision { verdict: Verdict::Hold { reason }, basis: format!("held by {names}") };
                }
                CedarDecision { verdict: Verdict::Allow, basis: format!("allowed by {names}") }
            }
            Decision::Deny if decided.is_empty() => {
                let errors = response.diagnostics().errors().count();
                let reason = if errors == 0 {
                    "no Cedar policy permits this call".to_string()
                } else {
                    format!("no Cedar policy permits this call ({errors} policies could not be evaluated)")
                };
                CedarDecision { verdict: Verdict::Deny { reason: reason.clone() }, basis: format!("denied: {reason}") }
            }
            Decision::Deny => {
                let reason = decided
                    .iter()
                    .find_map(|id| self.policies.annotation(id, "reason"))
                    .map_or_else(|| format!("forbidden by Cedar policy {names}"), str::to_string);
                CedarDecision { verdict: Verdict::Deny { reason }, basis: format!("denied by {names}") }
            }
        }
    }
}
