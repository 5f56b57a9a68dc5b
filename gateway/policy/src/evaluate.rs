//! The built-in decision point: precedence envelope > explicit deny > grant > tier default,
//! with argument conditions that fail closed.

use std::time::Instant;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use switchyard_contract::{
    ApprovalGrant, CallFacts, EffectClass, Error, Ingress, Invocation, PolicyPoint, Principal, Ruling, Verdict,
};

use std::sync::Arc;

use switchyard_contract::GrantStore;

use crate::authzen::{Pdp, PdpDecision};
use crate::cedar::Cedar;
use crate::concurrency::InFlight;
use crate::config::{PolicyConfig, Rule, TierAction};
use crate::error::{PolicyError, Unevaluable};
use crate::grants::{ApprovalBinding, GrantClaims, GrantKey, USED_BY};
use crate::quota::Buckets;
use crate::request::{DecisionRequest, Tier};

/// A decision (the contract's [`Verdict`]: allow, deny, hold or defer) and why: the tier it applied (none for a denial that came before tiers), the
/// rule or default that decided (`basis`), the tier the upstream's own hints would suggest
/// (shown, never applied), and the version of the policy that decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub decision: Verdict,
    pub tier: Option<Tier>,
    pub basis: String,
    pub suggested: Option<Tier>,
    pub policy: String,
    /// The id of the grant that let the call run, if one did (then no decision point is asked).
    pub grant: Option<String>,
}

/// The built-in evaluator over one checked [`PolicyConfig`], with this replica's quota buckets.
#[derive(Debug)]
pub struct Evaluator {
    config: PolicyConfig,
    version: String,
    buckets: Buckets,
    /// The key grants are verified with, and where revocations are kept.
    grants: Option<(GrantKey, Arc<dyn GrantStore>)>,
    /// The external decision point that decides in place of the tiers for its tenants.
    pdp: Option<Pdp>,
    /// The Cedar policy set that decides in place of the tiers for its tenants.
    cedar: Option<Cedar>,
    /// The concurrency slots the calls running on this replica hold.
    in_flight: InFlight,
}

impl Evaluator {
    /// Checks `config` (reading and validating its Cedar policy set, if it names one) and fixes
    /// its version: the first 16 hex digits of the SHA-256 of its canonical JSON and the Cedar
    /// policy set's hash, recorded with every decision.
    pub fn new(config: PolicyConfig) -> Result<Self, PolicyError> {
        config.check()?;
        let cedar = config.cedar.as_ref().map(Cedar::load).transpose()?;
        let json = serde_json::to_value(&config).map_err(|e| PolicyError(e.to_string()))?;
        let canonical = serde_json_canonicalizer::to_string(&json).map_err(|e| PolicyError(e.to_string()))?;
        let mut hash = Sha256::new();
        hash.update(canonical.as_bytes());
        if let Some(c) = &cedar {
            hash.update(c.hash().as_bytes());
        }
        let version = hex::encode(hash.finalize())[..16].to_string();
        let pdp = config.authzen.clone().map(Pdp::new);
        let in_flight = InFlight::default();
        Ok(Self { config, version, buckets: Buckets::default(), grants: None, pdp, cedar, in_flight })
    }

    /// Accepts grants signed with `key`, unless `store` has them revoked.
    pub fn with_grants(mut self, key: GrantKey, store: Arc<dyn GrantStore>) -> Self {
        self.grants = Some((key, store));
        self
    }

    /// The claims of a presented grant this gateway accepts, or why it does not: a grant that
    /// does not verify, has expired, or is revoked (or whose revocation cannot be checked) is
    /// set aside and the call decided without it.
    async fn accepted(&self, token: Option<&str>) -> (Option<GrantClaims>, Option<String>) {
        let Some(token) = token else { return (None, None) };
        let Some((key, store)) = &self.grants else { return (None, Some("grants are not enabled".into())) };
        let claims = match key.verify(token) {
            Ok(c) => c,
            Err(e) => return (None, Some(format!("grant refused: {e}"))),
        };
        match store.is_revoked(&claims.jti).await {
            Ok(false) => (Some(claims), None),
            Ok(true) => (None, Some(format!("grant {} is revoked", claims.jti))),
            Err(e) => (None, Some(format!("grant {} set aside: its revocation cannot be checked ({e})", claims.jti))),
        }
    }

    /// The hash of the Cedar policy set, if one is configured.
    pub fn cedar_hash(&self) -> Option<&str> {
        self.cedar.as_ref().map(Cedar::hash)
    }

    /// The policy's version (see [`Evaluator::new`]).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Decides one call presented without a grant.
    pub fn evaluate(&self, req: &DecisionRequest) -> Outcome {
        self.evaluate_with(req, None)
    }

    /// Decides one call; `grant`: the claims of a grant it presented, already verified.
    pub fn evaluate_with(&self, req: &DecisionRequest, grant: Option<&GrantClaims>) -> Outcome {
        self.evaluate_as(req, grant, true)
    }

    /// [`evaluate_with`](Self::evaluate_with); `spend`: take a quota token (a simulation takes
    /// none, and says what a call would be told now).
    fn evaluate_as(&self, req: &DecisionRequest, grant: Option<&GrantClaims>, spend: bool) -> Outcome {
        let outcome = |decision, tier, basis: String| Outcome {
            decision,
            tier,
            basis,
            suggested: suggested(req),
            policy: self.version.clone(),
            grant: None,
        };
        // 1. The envelope (every entry denies), then 2. the rules that deny.
        if let Some(refused) = self.refusal(req) {
            return refused;
        }
        // Quotas: a call over one waits its turn (deferred, nothing admitted). A denied call
        // above spent no token.
        let quotas = match spend {
            true => self.buckets.take(&self.config.quotas, req, Instant::now()),
            false => self.buckets.would_take(&self.config.quotas, req, Instant::now()),
        };
        if let Err((quota, retry_after_ms)) = quotas {
            let reason = format!("over quota `{quota}`");
            return outcome(Verdict::Defer { retry_after_ms, reason }, None, quota);
        }
        // 3. (below) A grant that covers the call lets it run up to the grant's ceiling.
        // 4. The most severe tier a matching rule assigns, else the default for the effect.
        let mut chosen: Option<(Tier, String)> = None;
        for (i, rule) in self.config.rules.iter().enumerate().filter(|(_, r)| !r.deny && r.names(req)) {
            let place = format!("rules[{i}]");
            match rule.conditions_hold(req) {
                Ok(true) => {
                    let tier = rule.tier.unwrap_or(Tier::Critical);
                    if chosen.as_ref().is_none_or(|(t, _)| tier > *t) {
                        chosen = Some((tier, name(rule, &place)));
                    }
                }
                Ok(false) => {}
                Err(why) => return unevaluable(outcome, rule, &place, &why),
            }
        }
        let (tier, basis) = chosen.unwrap_or_else(|| match req.resource.effect {
            EffectClass::Write => (self.config.default_write_tier, "the default tier of a write".into()),
            EffectClass::ReadOnly => (self.config.default_read_tier, "the default tier of a read".into()),
        });
        if let Some(g) = grant.filter(|g| g.covers(req) && tier <= g.ceiling) {
            let basis = format!("grant {} (ceiling {})", g.jti, g.ceiling.as_str());
            return Outcome { grant: Some(g.jti.clone()), ..outcome(Verdict::Allow, Some(tier), basis) };
        }
        let decision = match self.config.tiers.of(tier) {
            TierAction::Allow => Verdict::Allow,
            TierAction::Hold => Verdict::Hold {
                reason: format!("`{}` is {} ({basis}): it waits for approval", req.resource.operation, tier.as_str()),
            },
            TierAction::Deny => Verdict::Deny {
                reason: format!(
                    "`{}` is {} ({basis}), which this gateway refuses",
                    req.resource.operation,
                    tier.as_str()
                ),
            },
        };
        outcome(decision, Some(tier), basis)
    }
}

impl Evaluator {
    /// The envelope's or a deny rule's refusal of the call, if one refuses it (a condition
    /// that cannot be evaluated refuses too).
    fn refusal(&self, req: &DecisionRequest) -> Option<Outcome> {
        let outcome = |decision, basis: String| Outcome {
            decision,
            tier: None,
            basis,
            suggested: suggested(req),
            policy: self.version.clone(),
            grant: None,
        };
        for (place, rules, default, envelope) in [
            ("envelope", &self.config.envelope, "refused by the operator's envelope", true),
            ("rules", &self.config.rules, "refused by policy", false),
        ] {
            for (i, rule) in rules.iter().enumerate().filter(|(_, r)| (envelope || r.deny) && r.names(req)) {
                let place = format!("{place}[{i}]");
                match rule.conditions_hold(req) {
                    Ok(true) => {
                        let reason = rule.reason.clone().unwrap_or_else(|| default.to_string());
                        return Some(outcome(Verdict::Deny { reason }, name(rule, &place)));
                    }
                    Ok(false) => {}
                    Err(why) => return Some(unevaluable(|d, _, b| outcome(d, b), rule, &place, &why)),
                }
            }
        }
        None
    }

    /// Checks an approval's grant against the call it was minted for and spends it (once; the
    /// same call may spend it again after a crash). `Err` says why it does not pass.
    async fn spend_approval(&self, inv: &Invocation, token: &str) -> Result<String, String> {
        let Some((key, store)) = &self.grants else { return Err("grants are not enabled".into()) };
        let claims = key.verify(token).map_err(|e| format!("the approval's grant does not verify: {e}"))?;
        claims.approves(inv.principal.tenant.as_str(), &inv.id.to_string(), inv.digest.as_str())?;
        let by = format!("{USED_BY}{}", inv.id);
        match store.spend(&claims.jti, &by).await {
            Ok(true) => Ok(claims.jti),
            Ok(false) => Err(format!("the approval's grant {} was revoked or used by another call", claims.jti)),
            Err(e) => Err(format!("the approval's grant {} cannot be checked ({})", claims.jti, e.message)),
        }
    }
}

/// A fresh id for an approval's grant: `apr_` and 32 random hex digits.
fn approval_id() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| Error::internal("no randomness for a grant id"))?;
    Ok(format!("apr_{}", hex::encode(bytes)))
}

/// When a call over a concurrency limit is told to come back (a slot frees when a call ends,
/// which nobody can foretell).
const CONCURRENCY_RETRY_MS: u64 = 200;

/// How a PDP decision's basis says it was reused.
fn cached(hit: bool) -> &'static str {
    if hit { " (cached)" } else { "" }
}

fn name(rule: &Rule, place: &str) -> String {
    rule.id.clone().unwrap_or_else(|| place.to_string())
}

/// A condition that cannot be evaluated fails closed: the call is denied, saying which.
fn unevaluable(
    outcome: impl Fn(Verdict, Option<Tier>, String) -> Outcome,
    rule: &Rule,
    place: &str,
    why: &Unevaluable,
) -> Outcome {
    let basis = name(rule, place);
    let reason = format!("policy rule `{basis}` cannot be evaluated on this call ({why}); refused");
    outcome(Verdict::Deny { reason }, None, basis)
}

/// What the upstream's own hints would suggest: shown beside a decision, never applied.
fn suggested(req: &DecisionRequest) -> Option<Tier> {
    let hints = req.context.hints.claim();
    match (hints.destructive, hints.read_only) {
        (Some(true), _) => Some(Tier::Critical),
        (_, Some(true)) => Some(Tier::Routine),
        _ => None,
    }
}

impl Evaluator {
    /// The ruling on one call; `commit`: take its quota token and concurrency slot (a
    /// simulation takes neither, and is told what a call would be told now).
    async fn rule(&self, facts: &CallFacts<'_>, commit: bool) -> Ruling {
        let (grant, set_aside) = self.accepted(facts.grant).await;
        let req = DecisionRequest::from_facts(facts);
        let mut outcome = self.evaluate_as(&req, grant.as_ref(), commit);
        // A call that reached the tiers (no envelope, deny rule or quota stopped it) and that no
        // grant lets run is the external decision point's to decide, for its tenants.
        let undecided = outcome.tier.is_some() && outcome.grant.is_none();
        if let Some(pdp) = self.pdp.as_ref().filter(|p| p.config().decides_for(req.subject.tenant.as_str()))
            && undecided
        {
            let (decision, basis) = match pdp.decide(&req, outcome.tier, &self.version).await {
                Ok((PdpDecision::Allow, hit)) => (Verdict::Allow, format!("allowed{}", cached(hit))),
                Ok((PdpDecision::Deny(reason), hit)) => {
                    let basis = format!("denied{}: {reason}", cached(hit));
                    (Verdict::Deny { reason }, basis)
                }
                Ok((PdpDecision::Hold(reason), hit)) => {
                    let basis = format!("held{}: {reason}", cached(hit));
                    (Verdict::Hold { reason }, basis)
                }
                Err(why) => {
                    let reason = format!("the policy decision point did not decide ({why}); refused");
                    (Verdict::Deny { reason: reason.clone() }, reason)
                }
            };
            outcome.decision = decision;
            outcome.basis = format!("authzen {}: {basis}", pdp.config().url);
        }
        // Likewise the Cedar policy set, for its tenants.
        if let Some(cedar) = self.cedar.as_ref().filter(|c| c.config().decides_for(req.subject.tenant.as_str()))
            && let Some(tier) = outcome.tier.filter(|_| undecided)
        {
            let (decided, hit) = cedar.decide_cached(&req, tier, &self.version);
            outcome.decision = decided.verdict;
            outcome.basis = format!("cedar {}: {}{}", cedar.hash(), decided.basis, cached(hit));
        }
        // A call that may run takes a concurrency slot, or waits its turn (nothing admitted).
        let slot = |req: &DecisionRequest| match commit {
            true => self.in_flight.take(&self.config.concurrency, req, facts.invocation),
            false => self.in_flight.would_take(&self.config.concurrency, req),
        };
        if outcome.decision == Verdict::Allow
            && let Err((limit, share)) = slot(&req)
        {
            let reason = format!("over the concurrency limit `{limit}` ({share} calls in flight here)");
            outcome.decision = Verdict::Defer { retry_after_ms: CONCURRENCY_RETRY_MS, reason };
            outcome.basis = limit;
        }
        let tier = outcome.tier.map(|t| format!(", tier {}", t.as_str())).unwrap_or_default();
        let note = set_aside.map(|n| format!("; {n}")).unwrap_or_default();
        let basis = format!("policy {}: {}{tier}{note}", outcome.policy, outcome.basis);
        Ruling { verdict: outcome.decision, basis }
    }
}

#[async_trait]
impl PolicyPoint for Evaluator {
    async fn decide(&self, facts: &CallFacts<'_>) -> Ruling {
        self.rule(facts, true).await
    }

    async fn simulate(&self, facts: &CallFacts<'_>) -> Ruling {
        self.rule(facts, false).await
    }

    fn release(&self, invocation: switchyard_contract::InvocationId) {
        self.in_flight.release(invocation);
    }

    fn in_force(&self) -> Option<(String, serde_json::Value)> {
        Some((self.version.clone(), serde_json::to_value(&self.config).ok()?))
    }

    /// A single-use grant bound to the held call `inv` (its id and digest), valid for the
    /// approval time, recorded (listed, revocable) before it is handed out.
    async fn approval_grant(&self, inv: &Invocation, by: &Principal) -> Result<Option<ApprovalGrant>, Error> {
        let Some((key, store)) = &self.grants else { return Ok(None) };
        let now = u64::try_from(switchyard_contract::wall_clock_ms() / 1000).unwrap_or(0);
        let claims = GrantClaims {
            jti: approval_id()?,
            iss: String::new(),
            tenant: inv.principal.tenant.as_str().to_string(),
            sub: inv.principal.subject.clone(),
            upstream: inv.target.upstream.clone(),
            operation: inv.target.operation.clone(),
            ceiling: Tier::Critical,
            when: Vec::new(),
            iat: now,
            exp: now + self.config.approval_ttl_s,
            approval: Some(ApprovalBinding {
                invocation: inv.id.to_string(),
                digest: inv.digest.as_str().to_string(),
                by: by.subject.clone(),
            }),
        };
        let token = key.mint(claims.clone()).map_err(|e| Error::internal(e.to_string()))?;
        let json = serde_json::to_value(&claims).map_err(|e| Error::internal(e.to_string()))?;
        store.record(&claims.jti, &inv.principal.tenant, &inv.principal.subject, &json).await?;
        Ok(Some(ApprovalGrant { id: claims.jti, token }))
    }

    /// At dispatch of an approved call: its approval's grant must check out and be unspent
    /// (where grants are enabled), and the envelope and deny rules as they are now must not
    /// refuse it. The tiers, quotas and decision points that held it are not asked again: a
    /// human decided.
    async fn recheck(&self, inv: &Invocation, grant: Option<&str>) -> Ruling {
        let basis = |b: String| format!("policy {}: at dispatch: {b}", self.version);
        let proof = match (grant, self.grants.is_some()) {
            (Some(token), _) => match self.spend_approval(inv, token).await {
                Ok(jti) => format!("approval grant {jti} spent"),
                Err(reason) => {
                    return Ruling { verdict: Verdict::Deny { reason: reason.clone() }, basis: basis(reason) };
                }
            },
            (None, true) => {
                let reason = "the call was approved without a grant, and this gateway requires one".to_string();
                return Ruling { verdict: Verdict::Deny { reason: reason.clone() }, basis: basis(reason) };
            }
            (None, false) => "approved (no grant key)".to_string(),
        };
        let facts = CallFacts {
            principal: &inv.principal,
            ingress: Ingress::Admin,
            target: &inv.target,
            digest: &inv.digest,
            request: &inv.request,
            grant: None,
            invocation: inv.id,
        };
        match self.refusal(&DecisionRequest::from_facts(&facts)) {
            Some(refused) => Ruling { verdict: refused.decision, basis: basis(format!("{}; {proof}", refused.basis)) },
            None => Ruling {
                verdict: Verdict::Allow,
                basis: basis(format!("{proof}; no envelope or deny rule refuses it")),
            },
        }
    }
}
