//! What operators write (`[policy]` in the gateway's TOML): an envelope of hard denies, rules,
//! and what each tier does when no grant applies. Checked once at start ([`PolicyConfig::check`]):
//! a policy that cannot mean one thing is refused, not guessed at.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{PolicyError, Unevaluable};
use crate::pattern::{any, glob, names_resource};
use crate::request::{DecisionRequest, Tier};

/// What a tier does when no grant applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TierAction {
    /// The call runs.
    Allow,
    /// Held for a human's approval.
    Hold,
    /// The call is refused.
    Deny,
}

/// Each tier's default action: routine calls run, sensitive and critical ones wait for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TierActions {
    /// The action for a `routine` call no grant covers: `allow`, `hold` or `deny`.
    #[serde(default = "allow")]
    pub routine: TierAction,
    /// The action for a `sensitive` call no grant covers.
    #[serde(default = "hold")]
    pub sensitive: TierAction,
    /// The action for a `critical` call no grant covers.
    #[serde(default = "hold")]
    pub critical: TierAction,
}

fn allow() -> TierAction {
    TierAction::Allow
}

fn hold() -> TierAction {
    TierAction::Hold
}

impl Default for TierActions {
    fn default() -> Self {
        Self { routine: TierAction::Allow, sensitive: TierAction::Hold, critical: TierAction::Hold }
    }
}

impl TierActions {
    pub fn of(&self, tier: Tier) -> TierAction {
        match tier {
            Tier::Routine => self.routine,
            Tier::Sensitive => self.sensitive,
            Tier::Critical => self.critical,
        }
    }
}

/// One argument condition: the value at `pointer` (RFC 6901, into the request as the face
/// submitted it) equals a value, is one of a list, starts with a prefix, or lies in a numeric
/// range (`min`/`max`, inclusive). Exactly one comparison per condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// An RFC 6901 JSON pointer into the request as the face submitted it (an MCP tool
    /// argument is at `/arguments/<name>`); empty: the whole request.
    pub pointer: String,
    /// Holds when the value equals this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    /// Holds when the value is one of these.
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Value>>,
    /// Holds when the value is a string that starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Holds when the value is a number at least this (with or without `max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Holds when the value is a number at most this (with or without `min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl Condition {
    fn check(&self) -> Result<(), PolicyError> {
        if !(self.pointer.is_empty() || self.pointer.starts_with('/')) {
            return Err(PolicyError(format!("pointer `{}` is not a JSON pointer (it starts with `/`)", self.pointer)));
        }
        let range = self.min.is_some() || self.max.is_some();
        let kinds = [self.equals.is_some(), self.one_of.is_some(), self.prefix.is_some(), range];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(PolicyError(format!(
                "condition on `{}` needs exactly one of equals, in, prefix, min/max",
                self.pointer
            )));
        }
        Ok(())
    }

    /// Whether the condition holds on `request`; `Err` when it cannot be evaluated (the value
    /// is absent or of another type), which the evaluator turns into a denial.
    pub fn holds(&self, request: &Value) -> Result<bool, Unevaluable> {
        let absent = || Unevaluable(format!("`{}` is absent", self.pointer));
        let v = request.pointer(&self.pointer).ok_or_else(absent)?;
        if let Some(e) = &self.equals {
            return Ok(v == e);
        }
        if let Some(set) = &self.one_of {
            return Ok(set.contains(v));
        }
        if let Some(p) = &self.prefix {
            let s = v.as_str().ok_or_else(|| Unevaluable(format!("`{}` is not a string", self.pointer)))?;
            return Ok(s.starts_with(p.as_str()));
        }
        let n = v.as_f64().ok_or_else(|| Unevaluable(format!("`{}` is not a number", self.pointer)))?;
        Ok(self.min.is_none_or(|m| n >= m) && self.max.is_none_or(|m| n <= m))
    }
}

/// A rule: which calls it is about (glob patterns, `*` = any run of characters), under which
/// argument conditions (all must hold), and what it says: deny, or a tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A name for decisions and the audit trail (default: its place, e.g. `rules[2]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The upstream pattern.
    #[serde(default = "any")]
    pub upstream: String,
    /// The operation pattern (for an MCP tool, its name on its upstream).
    #[serde(default = "any")]
    pub operation: String,
    /// The subject (principal) pattern; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The tenant pattern; any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// `true`: refuse the calls the entry names. A rule says `deny = true` or gives a `tier`, one
    /// of them; an envelope entry always denies.
    #[serde(default)]
    pub deny: bool,
    /// The tier the rule gives the calls it names; the most severe tier a matching rule gives
    /// applies. Not in an envelope entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// Said to the caller when the rule denies or holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Argument conditions, all of which must hold for the entry to apply. Each compares the
    /// value at a JSON `pointer` with exactly one of `equals`, `in`, `prefix` or `min`/`max`
    /// (inclusive); one that cannot be evaluated (the value is absent or of another type)
    /// denies the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
}

impl Rule {
    /// A rule naming `upstream` and `operation`, saying nothing yet.
    pub(crate) fn any(upstream: &str, operation: &str) -> Self {
        Self {
            id: None,
            upstream: upstream.into(),
            operation: operation.into(),
            subject: None,
            tenant: None,
            deny: false,
            tier: None,
            reason: None,
            when: Vec::new(),
        }
    }

    /// Whether the rule's patterns name this call (conditions aside).
    pub fn names(&self, req: &DecisionRequest) -> bool {
        names_resource(&self.upstream, &self.operation, req)
            && self.subject.as_deref().is_none_or(|p| glob(p, &req.subject.id))
            && self.tenant.as_deref().is_none_or(|p| glob(p, req.subject.tenant.as_str()))
    }

    /// Whether every condition holds (`Err`: one cannot be evaluated).
    pub fn conditions_hold(&self, req: &DecisionRequest) -> Result<bool, Unevaluable> {
        for c in &self.when {
            if !c.holds(&req.context.request)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The operator's policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// The tier of a write no rule assigns one.
    #[serde(default = "sensitive")]
    pub default_write_tier: Tier,
    /// The tier of a `read_only` operation no rule assigns one.
    #[serde(default = "routine")]
    pub default_read_tier: Tier,
    /// What each tier does when no grant applies: `allow`, `hold` (for approval) or `deny`.
    /// By default routine calls run, sensitive and critical ones wait for approval.
    #[serde(default)]
    pub tiers: TierActions,
    /// How long a held call waits for approval; then it fails `approval_expired`.
    #[serde(default = "a_day")]
    pub approval_ttl_s: u64,
    /// The Ed25519 key (PKCS#8, hex) grants are signed and verified with; default
    /// `<data_dir>/grant-signing-key`, generated once. Replicas share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_key_file: Option<String>,
    /// Hard denies: nothing (no rule, no grant) overrides them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envelope: Vec<Rule>,
    /// Rules: which calls each is about (patterns, `*` any run of characters), under which
    /// argument conditions, and what it says: `deny = true`, or a `tier`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// Rate limits at admission.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<crate::quota::Quota>,
    /// Limits on calls in flight at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrency: Vec<crate::concurrency::Concurrency>,
    /// An external decision point (OpenID AuthZEN) that decides in place of the tiers for the
    /// tenants it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authzen: Option<crate::authzen::AuthzenConfig>,
    /// A Cedar policy set that decides in place of the tiers for the tenants it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cedar: Option<crate::cedar::CedarConfig>,
}

fn a_day() -> u64 {
    24 * 3600
}

fn sensitive() -> Tier {
    Tier::Sensitive
}

fn routine() -> Tier {
    Tier::Routine
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            default_write_tier: Tier::Sensitive,
            default_read_tier: Tier::Routine,
            tiers: TierActions::default(),
            approval_ttl_s: a_day(),
            grant_key_file: None,
            envelope: Vec::new(),
            rules: Vec::new(),
            quotas: Vec::new(),
            concurrency: Vec::new(),
            authzen: None,
            cedar: None,
        }
    }
}

/// The longest a call may wait for approval: what waits on a held call (a bridged call's run)
/// is bounded by it.
pub const MAX_APPROVAL_TTL_S: u64 = 7 * 24 * 3600;

impl PolicyConfig {
    /// Refuses a policy that cannot mean one thing: an envelope entry that assigns a tier, a
    /// rule that neither denies nor assigns a tier (or does both), an empty pattern, a
    /// condition with no comparison or with two.
    pub fn check(&self) -> Result<(), PolicyError> {
        if !(1..=MAX_APPROVAL_TTL_S).contains(&self.approval_ttl_s) {
            return Err(PolicyError(format!("approval_ttl_s must be within 1..={MAX_APPROVAL_TTL_S} (7 days)")));
        }
        let bad = |place: String, why: String| PolicyError(format!("{place}: {why}"));
        let at = |place: String| move |why: PolicyError| bad(place.clone(), why.0);
        for (i, r) in self.envelope.iter().enumerate() {
            if r.tier.is_some() {
                return Err(bad(
                    format!("envelope[{i}]"),
                    "the envelope only denies; give tiers in [[policy.rules]]".into(),
                ));
            }
            Self::check_rule(r).map_err(at(format!("envelope[{i}]")))?;
        }
        for (i, r) in self.rules.iter().enumerate() {
            if r.deny == r.tier.is_some() {
                return Err(bad(
                    format!("rules[{i}]"),
                    "a rule says `deny = true` or gives a `tier`, one of them".into(),
                ));
            }
            Self::check_rule(r).map_err(at(format!("rules[{i}]")))?;
        }
        if let Some(a) = &self.authzen {
            a.check()?;
            if let Some(c) = &self.cedar
                && (a.tenants.is_empty() || c.tenants.is_empty() || a.tenants.iter().any(|t| c.tenants.contains(t)))
            {
                return Err(PolicyError(
                    "[policy.authzen] and [policy.cedar] both decide for some tenant: give each its own `tenants`"
                        .into(),
                ));
            }
        }
        for (i, c) in self.concurrency.iter().enumerate() {
            c.check().map_err(at(format!("concurrency[{i}]")))?;
            Self::check_rule(&Rule { tenant: c.tenant.clone(), ..Rule::any(&c.upstream, &c.operation) })
                .map_err(at(format!("concurrency[{i}]")))?;
        }
        for (i, q) in self.quotas.iter().enumerate() {
            q.check().map_err(at(format!("quotas[{i}]")))?;
            Self::check_rule(&Rule { tenant: q.tenant.clone(), ..Rule::any(&q.upstream, &q.operation) })
                .map_err(at(format!("quotas[{i}]")))?;
        }
        Ok(())
    }

    fn check_rule(r: &Rule) -> Result<(), PolicyError> {
        let patterns = [Some(&r.upstream), Some(&r.operation), r.subject.as_ref(), r.tenant.as_ref()];
        if patterns.into_iter().flatten().any(String::is_empty) {
            return Err(PolicyError("an empty pattern matches nothing; use `*` for any".into()));
        }
        r.when.iter().try_for_each(Condition::check)
    }
}
