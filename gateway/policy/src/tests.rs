use proptest::prelude::*;
use serde_json::{Value, json};
use switchyard_contract::{EffectClass, Ingress, RequestDigest, TenantId, Verdict};

use crate::grants::{GrantClaims, GrantKey};
use crate::pattern::glob;
use crate::{
    Action, Condition, Context, DecisionRequest, Evaluator, PolicyConfig, Resource, Rule, Subject, Tier, ToolHints,
    Untrusted,
};

fn req(upstream: &str, operation: &str, effect: EffectClass, request: Value) -> DecisionRequest<'static> {
    DecisionRequest {
        subject: Subject { tenant: TenantId::new("red").unwrap(), id: "alice".into() },
        action: Action { name: "tools/call".into() },
        resource: Resource { upstream: upstream.into(), operation: operation.into(), effect },
        context: Context {
            ingress: Ingress::Mcp,
            agent: None,
            digest: std::borrow::Cow::Owned(RequestDigest::compute(upstream, operation, &request).unwrap()),
            request: std::borrow::Cow::Owned(request),
            hints: Untrusted::default(),
        },
    }
}

fn policy(toml_text: &str) -> Evaluator {
    let cfg: PolicyConfig = toml::from_str(toml_text).unwrap();
    Evaluator::new(cfg).unwrap()
}

fn rule(upstream: &str, operation: &str) -> Rule {
    Rule::any(upstream, operation)
}

#[test]
fn globs_match_runs_of_characters() {
    for (p, t) in
        [("*", ""), ("*", "abc"), ("a*", "abc"), ("*c", "abc"), ("a*c", "abbbc"), ("a**c", "ac"), ("abc", "abc")]
    {
        assert!(glob(p, t), "{p} ~ {t}");
    }
    for (p, t) in [("a", "ab"), ("ab", "a"), ("a*c", "abd"), ("", "a"), ("*b", "bc")] {
        assert!(!glob(p, t), "{p} !~ {t}");
    }
}

#[test]
fn a_policy_that_cannot_mean_one_thing_is_refused() {
    for (bad, says) in [
        ("[[envelope]]\nupstream = \"x\"\ntier = \"routine\"", "envelope[0]"),
        ("[[rules]]\nupstream = \"x\"", "one of them"),
        ("[[rules]]\nupstream = \"x\"\ndeny = true\ntier = \"critical\"", "one of them"),
        ("[[rules]]\nupstream = \"\"\ndeny = true", "empty pattern"),
        ("[[rules]]\ndeny = true\n[[rules.when]]\npointer = \"/a\"\nequals = 1\nprefix = \"x\"", "exactly one"),
        ("[[rules]]\ndeny = true\n[[rules.when]]\npointer = \"a\"\nequals = 1", "JSON pointer"),
    ] {
        let cfg: PolicyConfig = toml::from_str(bad).unwrap_or_else(|e| panic!("{bad}: {e}"));
        let err = Evaluator::new(cfg).err().unwrap_or_else(|| panic!("accepted: {bad}"));
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
    assert!(toml::from_str::<PolicyConfig>("[[rules]]\nnope = 1").is_err(), "unknown keys are refused");
}

#[test]
fn defaults_hold_writes_and_allow_reads() {
    let p = policy("");
    let write = p.evaluate(&req("fx", "delete", EffectClass::Write, json!({})));
    assert!(matches!(write.decision, Verdict::Hold { .. }), "{write:?}");
    assert_eq!(write.tier, Some(Tier::Sensitive));
    let read = p.evaluate(&req("fx", "list", EffectClass::ReadOnly, json!({})));
    assert_eq!((read.decision, read.tier), (Verdict::Allow, Some(Tier::Routine)));
}

#[test]
fn precedence_is_envelope_then_deny_then_tier() {
    let p = policy(
        r#"
        [[envelope]]
        upstream = "prod-*"
        reason = "production is off limits"

        [[rules]]
        id = "no-drops"
        operation = "drop_*"
        deny = true

        [[rules]]
        upstream = "*"
        tier = "routine"

        [[rules]]
        operation = "pay"
        tier = "critical"
        "#,
    );
    let prod = p.evaluate(&req("prod-db", "select", EffectClass::ReadOnly, json!({})));
    assert_eq!(prod.decision, Verdict::Deny { reason: "production is off limits".into() });
    assert_eq!(prod.basis, "envelope[0]");
    let drop = p.evaluate(&req("dev", "drop_table", EffectClass::Write, json!({})));
    assert!(matches!(drop.decision, Verdict::Deny { .. }) && drop.basis == "no-drops", "{drop:?}");
    let routine = p.evaluate(&req("dev", "echo", EffectClass::Write, json!({})));
    assert_eq!(routine.decision, Verdict::Allow, "a routine rule lets a write run");
    let pay = p.evaluate(&req("dev", "pay", EffectClass::Write, json!({})));
    assert_eq!(pay.tier, Some(Tier::Critical), "the most severe matching tier wins");
    assert!(matches!(pay.decision, Verdict::Hold { .. }));
}

#[test]
fn argument_conditions_compare_and_fail_closed() {
    let p = policy(
        r#"
        [[rules]]
        operation = "pay"
        tier = "routine"
        [[rules.when]]
        pointer = "/arguments/amount"
        max = 100

        [[rules]]
        operation = "pay"
        deny = true
        reason = "not to that bank"
        [[rules.when]]
        pointer = "/arguments/iban"
        prefix = "XX"

        [[rules]]
        operation = "mail"
        tier = "routine"
        [[rules.when]]
        pointer = "/arguments/to"
        in = ["ops@example.com", "dev@example.com"]
        "#,
    );
    let pay = |args: Value| p.evaluate(&req("bank", "pay", EffectClass::Write, json!({"arguments": args})));
    assert_eq!(pay(json!({"amount": 5, "iban": "DE1"})).decision, Verdict::Allow);
    assert!(matches!(pay(json!({"amount": 500, "iban": "DE1"})).decision, Verdict::Hold { .. }), "over the limit");
    assert_eq!(pay(json!({"amount": 5, "iban": "XX1"})).decision, Verdict::Deny { reason: "not to that bank".into() });
    for unevaluable in [json!({"iban": "DE1"}), json!({"amount": "5", "iban": "DE1"}), json!({"amount": 5})] {
        let out = pay(unevaluable.clone());
        let Verdict::Deny { reason } = &out.decision else { panic!("{unevaluable}: {out:?}") };
        assert!(reason.contains("cannot be evaluated"), "{reason}");
    }
    let mail = |to: &str| p.evaluate(&req("smtp", "mail", EffectClass::Write, json!({"arguments": {"to": to}})));
    assert_eq!(mail("ops@example.com").decision, Verdict::Allow);
    assert!(matches!(mail("x@evil.example").decision, Verdict::Hold { .. }));
}

#[test]
fn subject_and_tenant_patterns_narrow_a_rule() {
    let mut r = rule("*", "*");
    (r.deny, r.subject, r.tenant) = (true, Some("bot-*".into()), Some("red".into()));
    let p = Evaluator::new(PolicyConfig { rules: vec![r], ..PolicyConfig::default() }).unwrap();
    let mut call = req("fx", "list", EffectClass::ReadOnly, json!({}));
    assert_eq!(p.evaluate(&call).decision, Verdict::Allow, "alice is not a bot");
    call.subject.id = "bot-7".into();
    assert!(matches!(p.evaluate(&call).decision, Verdict::Deny { .. }));
    call.subject.tenant = TenantId::new("blue").unwrap();
    assert_eq!(p.evaluate(&call).decision, Verdict::Allow, "another tenant");
}

#[test]
fn a_quota_defers_its_tenant_only_and_says_when_to_come_back() {
    let p = policy(
        r#"
        [[quotas]]
        id = "per-tenant"
        rate_per_s = 1.0
        burst = 2
        "#,
    );
    let red = req("fx", "list", EffectClass::ReadOnly, json!({}));
    let mut blue = red.clone();
    blue.subject.tenant = TenantId::new("blue").unwrap();
    assert_eq!(p.evaluate(&red).decision, Verdict::Allow);
    assert_eq!(p.evaluate(&red).decision, Verdict::Allow, "the burst");
    let over = p.evaluate(&red);
    let Verdict::Defer { retry_after_ms, reason } = &over.decision else { panic!("{over:?}") };
    assert!((1..=1000).contains(retry_after_ms), "{retry_after_ms}");
    assert!(reason.contains("per-tenant"), "{reason}");
    assert_eq!(p.evaluate(&blue).decision, Verdict::Allow, "another tenant has its own bucket");
}

#[test]
fn a_denied_call_spends_no_token_and_shares_split_across_replicas() {
    let p = policy(
        r#"
        [[envelope]]
        operation = "drop"

        [[quotas]]
        rate_per_s = 0.001
        burst = 3
        replicas = 2
        "#,
    );
    for _ in 0..5 {
        assert!(matches!(p.evaluate(&req("fx", "drop", EffectClass::Write, json!({}))).decision, Verdict::Deny { .. }));
    }
    let read = req("fx", "list", EffectClass::ReadOnly, json!({}));
    // ceil(3 / 2) = 2 tokens on this replica.
    assert_eq!(p.evaluate(&read).decision, Verdict::Allow);
    assert_eq!(p.evaluate(&read).decision, Verdict::Allow);
    assert!(matches!(p.evaluate(&read).decision, Verdict::Defer { .. }));
    for bad in [
        "[[quotas]]\nrate_per_s = 0.0\nburst = 1",
        "[[quotas]]\nrate_per_s = 1.0\nburst = 0",
        "[[quotas]]\nrate_per_s = 1.0\nburst = 1\nper = []",
    ] {
        let cfg: PolicyConfig = toml::from_str(bad).unwrap_or_else(|e| panic!("{bad}: {e}"));
        assert!(Evaluator::new(cfg).is_err(), "accepted: {bad}");
    }
}

fn claims(sub: &str, operation: &str, ceiling: Tier, exp_in_s: i64) -> GrantClaims {
    let now = switchyard_contract::wall_clock_ms() / 1000;
    GrantClaims {
        jti: "grt_test".into(),
        iss: String::new(),
        tenant: "red".into(),
        sub: sub.into(),
        upstream: "*".into(),
        operation: operation.into(),
        ceiling,
        when: Vec::new(),
        iat: u64::try_from(now).unwrap_or(0),
        exp: u64::try_from(now + exp_in_s).unwrap_or(0),
        approval: None,
    }
}

fn key() -> GrantKey {
    GrantKey::from_pkcs8(&GrantKey::generate().unwrap()).unwrap()
}

#[test]
fn grants_verify_offline_and_refuse_forgeries_and_expiry() {
    let (k, other) = (key(), key());
    let token = k.mint(claims("alice", "pay", Tier::Sensitive, 60)).unwrap();
    let back = k.verify(&token).unwrap();
    assert_eq!((back.sub.as_str(), back.iss.as_str(), back.ceiling), ("alice", "switchyard", Tier::Sensitive));
    assert!(other.verify(&token).is_err(), "another key's grant");
    let expired = k.mint(claims("alice", "pay", Tier::Sensitive, -5)).unwrap();
    assert!(k.verify(&expired).is_err(), "expired");
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    parts[1] = parts[1].chars().rev().collect();
    assert!(k.verify(&parts.join(".")).is_err(), "tampered");
}

#[test]
fn a_grant_lets_a_held_call_run_up_to_its_ceiling_only() {
    let p = policy("[[rules]]\noperation = \"wire\"\ntier = \"critical\"");
    let pay = req("bank", "pay", EffectClass::Write, json!({}));
    assert!(matches!(p.evaluate(&pay).decision, Verdict::Hold { .. }), "sensitive by default");
    let g = claims("alice", "*", Tier::Sensitive, 60);
    let out = p.evaluate_with(&pay, Some(&g));
    assert_eq!(out.decision, Verdict::Allow);
    assert!(out.basis.starts_with("grant grt_test"), "{}", out.basis);
    let wire = req("bank", "wire", EffectClass::Write, json!({}));
    assert!(matches!(p.evaluate_with(&wire, Some(&g)).decision, Verdict::Hold { .. }), "critical is above the ceiling");
    let bob = claims("bob", "*", Tier::Critical, 60);
    assert!(matches!(p.evaluate_with(&pay, Some(&bob)).decision, Verdict::Hold { .. }), "another subject's grant");
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![Just("*".to_string()), Just("a".to_string()), Just("b".to_string()), Just("a*".to_string())]
}

fn tier() -> impl Strategy<Value = Tier> {
    prop_oneof![Just(Tier::Routine), Just(Tier::Sensitive), Just(Tier::Critical)]
}

fn any_rule() -> impl Strategy<Value = Rule> {
    (pattern(), pattern(), any::<bool>(), tier(), proptest::option::of(0i64..10)).prop_map(|(u, o, deny, t, limit)| {
        let mut r = rule(&u, &o);
        if deny {
            r.deny = true
        } else {
            r.tier = Some(t)
        }
        r.when = limit
            .map(|m| Condition {
                pointer: "/n".into(),
                equals: None,
                one_of: None,
                prefix: None,
                min: None,
                max: Some(m as f64),
            })
            .into_iter()
            .collect();
        r
    })
}

fn call() -> impl Strategy<Value = DecisionRequest<'static>> {
    (prop_oneof![Just("a"), Just("ab"), Just("b")], prop_oneof![Just("a"), Just("b")], any::<bool>(), 0i64..10)
        .prop_map(|(u, o, write, n)| {
            let effect = if write { EffectClass::Write } else { EffectClass::ReadOnly };
            req(u, o, effect, json!({ "n": n }))
        })
}

fn severity(d: &Verdict) -> u8 {
    match d {
        Verdict::Allow => 0,
        Verdict::Defer { .. } => 1,
        Verdict::Hold { .. } => 2,
        Verdict::Deny { .. } => 3,
    }
}

proptest! {
    /// An unconditional envelope entry that names the call denies it, whatever the rules say.
    #[test]
    fn the_envelope_beats_every_rule(rules in proptest::collection::vec(any_rule(), 0..6), c in call()) {
        let envelope = vec![rule(&c.resource.upstream, "*")];
        let p = Evaluator::new(PolicyConfig { envelope, rules, ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let out = p.evaluate(&c);
        prop_assert!(matches!(out.decision, Verdict::Deny { .. }), "{:?}", out);
        prop_assert_eq!(out.basis, "envelope[0]");
    }

    /// Adding a rule never makes a decision more permissive: a deny stays a deny, and a
    /// tier never drops.
    #[test]
    fn adding_a_rule_never_relaxes_a_decision(rules in proptest::collection::vec(any_rule(), 0..6), extra in any_rule(), c in call()) {
        let base = Evaluator::new(PolicyConfig { rules: rules.clone(), ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut more = rules;
        more.push(extra);
        let grown = Evaluator::new(PolicyConfig { rules: more, ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (before, after) = (base.evaluate(&c), grown.evaluate(&c));
        // A tier rule only ever raises the tier; a matching default is replaced only by a
        // rule, which the precedence applies the same way.
        if matches!(before.decision, Verdict::Deny { .. }) {
            prop_assert!(matches!(after.decision, Verdict::Deny { .. }), "{:?} then {:?}", before, after);
        }
        if let (Some(a), Some(b)) = (after.tier, before.tier)
            && before.basis != "the default tier of a write" && before.basis != "the default tier of a read"
        {
            prop_assert!(a >= b, "{:?} then {:?}", before, after);
        }
        if before.basis.starts_with("rules[") {
            prop_assert!(severity(&after.decision) >= severity(&before.decision), "{:?} then {:?}", before, after);
        }
    }

    /// What an upstream says of its own tool never changes a decision.
    #[test]
    fn upstream_hints_never_decide(rules in proptest::collection::vec(any_rule(), 0..6), c in call(), ro in any::<bool>(), destructive in any::<bool>()) {
        let p = Evaluator::new(PolicyConfig { rules, ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut hinted = c.clone();
        hinted.context.hints = Untrusted::new(ToolHints { read_only: Some(ro), destructive: Some(destructive) });
        let (plain, with_hints) = (p.evaluate(&c), p.evaluate(&hinted));
        prop_assert_eq!(plain.decision, with_hints.decision);
        prop_assert_eq!(plain.tier, with_hints.tier);
    }

    /// A grant never lets a call run above its ceiling, and never beats a denial.
    #[test]
    fn a_grant_never_raises_a_tier_above_its_ceiling(rules in proptest::collection::vec(any_rule(), 0..6), c in call(), ceiling in tier()) {
        let p = Evaluator::new(PolicyConfig { rules, ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut g = claims("alice", "*", ceiling, 60);
        g.tenant = c.subject.tenant.as_str().to_string();
        let (without, with) = (p.evaluate(&c), p.evaluate_with(&c, Some(&g)));
        if with.basis.starts_with("grant ") {
            prop_assert!(with.tier.is_some_and(|t| t <= ceiling), "{:?}", with);
            prop_assert!(!matches!(without.decision, Verdict::Deny { .. }), "{:?} then {:?}", without, with);
        } else {
            prop_assert_eq!(without.decision, with.decision);
        }
    }

    /// The policy version (part of every decision, and of any cache key) is a function of the
    /// policy: the same policy has the same version, a changed one another.
    #[test]
    fn the_version_follows_the_policy(rules in proptest::collection::vec(any_rule(), 1..6), extra in any_rule()) {
        let a = Evaluator::new(PolicyConfig { rules: rules.clone(), ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let again = Evaluator::new(PolicyConfig { rules: rules.clone(), ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(a.version(), again.version());
        let mut changed = rules;
        changed.push(extra);
        let b = Evaluator::new(PolicyConfig { rules: changed, ..PolicyConfig::default() }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_ne!(a.version(), b.version());
    }
}

const CEDAR: &str = r#"
@id("reads")
permit(principal in Switchyard::Tenant::"red", action, resource) when { resource.effect == "read_only" };

@id("routine-writes")
permit(principal, action == Switchyard::Action::"tools/call", resource) when { context.tier == "routine" };

@id("payments")
@hold("payments wait for finance")
permit(principal, action, resource == Switchyard::Operation::"bank/pay");

@id("no-deletes")
@reason("nothing is deleted through the gateway")
forbid(principal, action, resource) when { resource.name like "delete_*" };
"#;

fn cedar(text: &str) -> Result<crate::cedar::Cedar, crate::PolicyError> {
    let config =
        crate::cedar::CedarConfig { policies: "test.cedar".into(), tenants: Vec::new(), cache: Default::default() };
    crate::cedar::Cedar::from_text(config, text)
}

#[test]
fn a_cedar_policy_set_allows_denies_and_holds() {
    let c = cedar(CEDAR).unwrap();
    let decide = |upstream, op, effect, tier| c.decide(&req(upstream, op, effect, json!({})), tier);
    let read = decide("crm", "lookup", EffectClass::ReadOnly, Tier::Routine);
    assert_eq!(read.verdict, Verdict::Allow);
    assert!(read.basis.contains("`reads`"), "{}", read.basis);
    assert_eq!(decide("crm", "update", EffectClass::Write, Tier::Routine).verdict, Verdict::Allow);
    let unpermitted = decide("crm", "update", EffectClass::Write, Tier::Sensitive);
    assert_eq!(unpermitted.verdict, Verdict::Deny { reason: "no Cedar policy permits this call".into() });
    let held = decide("bank", "pay", EffectClass::Write, Tier::Sensitive);
    assert_eq!(held.verdict, Verdict::Hold { reason: "payments wait for finance".into() });
    // A permit without `@hold` that also decides lets it run.
    assert_eq!(decide("bank", "pay", EffectClass::Write, Tier::Routine).verdict, Verdict::Allow);
    let forbidden = decide("crm", "delete_all", EffectClass::ReadOnly, Tier::Routine);
    assert_eq!(forbidden.verdict, Verdict::Deny { reason: "nothing is deleted through the gateway".into() });
    assert!(forbidden.basis.contains("`no-deletes`"), "{}", forbidden.basis);
}

#[test]
fn a_cedar_policy_set_that_does_not_validate_refuses_the_start() {
    for (text, says) in [
        ("permit(principal, action, resource) when { resource.owner == \"x\" };", "does not validate"),
        ("permit(principal, action == Switchyard::Action::\"delete\", resource);", "does not validate"),
        ("permit(principal, action, resource) when { context.tier > 3 };", "does not validate"),
        ("permit(principal, action resource);", "does not parse"),
    ] {
        let e = cedar(text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[tokio::test]
async fn cedar_decides_for_its_tenants_after_the_envelope_and_its_hash_is_recorded() {
    use switchyard_contract::PolicyPoint;
    let path = std::env::temp_dir().join(format!("switchyard-cedar-{}.cedar", std::process::id()));
    std::fs::write(&path, CEDAR).unwrap();
    let text = format!(
        "[[envelope]]\noperation = \"drop_*\"\n[[rules]]\noperation = \"wipe\"\ntier = \"critical\"\n\
         [cedar]\npolicies = \"{}\"\ntenants = [\"red\"]\n",
        path.display()
    );
    let evaluator = policy(&text);
    let _ = std::fs::remove_file(&path);
    let principal = |t: &str| switchyard_contract::Principal::new(TenantId::new(t).unwrap(), "alice");
    let decide = |p: switchyard_contract::Principal, op: &'static str, effect| {
        let evaluator = &evaluator;
        async move {
            let target = switchyard_contract::Target { upstream: "crm".into(), operation: op.into(), effect };
            let request = json!({});
            let digest = RequestDigest::compute("crm", op, &request).unwrap();
            let facts = switchyard_contract::CallFacts {
                principal: &p,
                ingress: Ingress::Mcp,
                target: &target,
                digest: &digest,
                request: &request,
                grant: None,
                invocation: switchyard_contract::InvocationId::new(),
            };
            evaluator.decide(&facts).await
        }
    };
    let ruled = decide(principal("red"), "update", EffectClass::Write).await;
    assert!(matches!(ruled.verdict, Verdict::Deny { .. }), "{ruled:?}");
    let hash = evaluator.cedar_hash().unwrap_or_default().to_string();
    assert!(ruled.basis.contains(&format!("cedar {hash}")), "{ruled:?}");
    // The same call again is answered from the cache (a sensitive call, within 30 s); a
    // critical one is evaluated every time.
    let again = decide(principal("red"), "update", EffectClass::Write).await;
    assert_eq!(again.verdict, ruled.verdict);
    assert!(again.basis.contains("(cached)") && !ruled.basis.contains("(cached)"), "{again:?}");
    for _ in 0..2 {
        let critical = decide(principal("red"), "wipe", EffectClass::Write).await;
        assert!(critical.basis.contains("tier critical") && !critical.basis.contains("(cached)"), "{critical:?}");
    }
    let envelope = decide(principal("red"), "drop_table", EffectClass::ReadOnly).await;
    assert!(envelope.basis.contains("envelope[0]"), "the envelope comes first: {envelope:?}");
    // Another tenant is decided by the tiers (an unlisted write waits for approval).
    let other = decide(principal("blue"), "update", EffectClass::Write).await;
    assert!(matches!(other.verdict, Verdict::Hold { .. }), "{other:?}");
}

/// The decision cache never shadows a grant: a grant that covers the call lets it run although
/// Cedar's refusal of the same call is cached, and once revoked the very next decision is
/// Cedar's again.
#[tokio::test]
async fn a_grant_beats_a_cached_cedar_decision_and_its_revocation_applies_at_the_next_call() {
    use std::sync::Arc;
    use switchyard_contract::{GrantStore, PolicyPoint, Principal, Ruling, Target};
    let path = std::env::temp_dir().join(format!("switchyard-cedar-grant-{}.cedar", std::process::id()));
    std::fs::write(&path, CEDAR).unwrap();
    let der = GrantKey::generate().unwrap();
    let k = || GrantKey::from_pkcs8(&der).unwrap();
    let store = Arc::new(switchyard_contract::memory::MemoryGrants::default());
    let p = policy(&format!("[cedar]\npolicies = \"{}\"\n", path.display())).with_grants(k(), store.clone());
    let _ = std::fs::remove_file(&path);
    let red = TenantId::new("red").unwrap();
    let g = claims("alice", "update", Tier::Sensitive, 60);
    let json = serde_json::to_value(&g).unwrap();
    store.record(&g.jti, &red, "alice", &json).await.unwrap();
    let token = k().mint(g).unwrap();
    let principal = Principal::new(red, "alice");
    let target = Target { upstream: "crm".into(), operation: "update".into(), effect: EffectClass::Write };
    let request = json!({});
    let digest = RequestDigest::compute("crm", "update", &request).unwrap();
    let decide = |grant: Option<&'static str>| {
        let (p, principal, target, digest, request) = (&p, &principal, &target, &digest, &request);
        async move {
            let facts = switchyard_contract::CallFacts {
                principal,
                ingress: Ingress::Mcp,
                target,
                digest,
                request,
                grant,
                invocation: switchyard_contract::InvocationId::new(),
            };
            p.decide(&facts).await
        }
    };
    let token: &'static str = Box::leak(token.into_boxed_str());
    let denied = |r: &Ruling| matches!(r.verdict, Verdict::Deny { .. });
    let first = decide(None).await;
    assert!(denied(&first) && !first.basis.contains("(cached)"), "{first:?}");
    let cached = decide(None).await;
    assert!(denied(&cached) && cached.basis.contains("(cached)"), "{cached:?}");
    let granted = decide(Some(token)).await;
    assert_eq!(granted.verdict, Verdict::Allow, "{granted:?}");
    assert!(granted.basis.contains("grant grt_test") && !granted.basis.contains("cedar"), "{granted:?}");
    assert!(store.revoke("grt_test", "ops").await.unwrap());
    let revoked = decide(Some(token)).await;
    assert!(denied(&revoked) && revoked.basis.contains("grt_test is revoked"), "{revoked:?}");
}

/// A held call of alice's on `bank/pay` with `request`, as the engine would have stored it.
fn held(request: Value) -> switchyard_contract::Invocation {
    use switchyard_contract::state::{Hold, NewInvocation};
    use switchyard_contract::{InvocationId, Principal, Target, WorkerId};
    let digest = RequestDigest::compute("bank", "pay", &request).unwrap();
    let d = NewInvocation {
        id: InvocationId::new(),
        principal: Principal::new(TenantId::new("red").unwrap(), "alice"),
        target: Target { upstream: "bank".into(), operation: "pay".into(), effect: EffectClass::Write },
        request,
        digest,
        ingress_key: None,
        parent: None,
        trace: None,
        worker: WorkerId::new(),
        lease_ttl_ms: 1_000,
        hold: Some(Hold { reason: "sensitive".into(), basis: "test".into() }),
        first_attempt: None,
        proves_unsent: false,
        audit: None,
    };
    switchyard_contract::Invocation::admit(d, 0).0
}

#[tokio::test]
async fn an_approval_grant_is_bound_to_its_call_spent_once_and_the_envelope_still_applies() {
    use std::sync::Arc;
    use switchyard_contract::{GrantStore, PolicyPoint, Principal};
    let der = GrantKey::generate().unwrap();
    let k = || GrantKey::from_pkcs8(&der).unwrap();
    let store = Arc::new(switchyard_contract::memory::MemoryGrants::default());
    let p = policy("").with_grants(k(), store.clone());
    let call = held(json!({"amount": 5}));
    let ops = Principal::new(call.principal.tenant.clone(), "ops");
    let minted = p.approval_grant(&call, &ops).await.unwrap();
    let g = minted.unwrap_or_else(|| panic!("grants are on: an approval mints one"));
    let claims = k().verify(&g.token).unwrap();
    assert_eq!(claims.jti, g.id);
    let binding = claims.approval.clone().unwrap_or_else(|| panic!("bound"));
    assert_eq!(
        (binding.invocation, binding.digest, binding.by),
        (call.id.to_string(), call.digest.as_str().to_string(), "ops".into())
    );
    assert_eq!(store.list(None).await.map(|l| l.len()).unwrap_or(0), 1, "recorded: listed and revocable");

    // Presented at admission as an ordinary grant, it covers nothing.
    let pay = req("bank", "pay", EffectClass::Write, json!({"amount": 5}));
    assert!(
        matches!(p.evaluate_with(&pay, Some(&claims)).decision, Verdict::Hold { .. }),
        "no replay through admission"
    );

    // Another call with the same arguments, or this call with other arguments: refused.
    let twin = held(json!({"amount": 5}));
    let r = p.recheck(&twin, Some(&g.token)).await;
    assert!(matches!(&r.verdict, Verdict::Deny { reason } if reason.contains("another call")), "{r:?}");
    let mut changed = call.clone();
    changed.digest = RequestDigest::compute("bank", "pay", &json!({"amount": 5000})).unwrap();
    let r = p.recheck(&changed, Some(&g.token)).await;
    assert!(matches!(&r.verdict, Verdict::Deny { reason } if reason.contains("other arguments")), "{r:?}");
    let forged = key().mint(claims.clone()).unwrap();
    assert!(matches!(p.recheck(&call, Some(&forged)).await.verdict, Verdict::Deny { .. }), "another key's");
    assert!(matches!(p.recheck(&call, None).await.verdict, Verdict::Deny { .. }), "an approval without its grant");

    // Its own call runs, and may be checked again (a takeover) — but the grant is now spent.
    let r = p.recheck(&call, Some(&g.token)).await;
    assert_eq!(r.verdict, Verdict::Allow, "{r:?}");
    assert!(r.basis.contains(&format!("approval grant {} spent", g.id)), "{}", r.basis);
    assert_eq!(p.recheck(&call, Some(&g.token)).await.verdict, Verdict::Allow, "the same call again");
    let spent = store.list(None).await.unwrap_or_default();
    assert_eq!(spent[0].revoked_by.as_deref(), Some(format!("used by {}", call.id).as_str()));

    // A revoked approval stops its call; so does an envelope made after the hold.
    let other = held(json!({"amount": 7}));
    let g2 = p.approval_grant(&other, &ops).await.ok().flatten().unwrap_or_else(|| panic!("minted"));
    assert!(store.revoke(&g2.id, "ops").await.unwrap_or(false));
    let r = p.recheck(&other, Some(&g2.token)).await;
    assert!(matches!(&r.verdict, Verdict::Deny { reason } if reason.contains("revoked")), "{r:?}");
    let frozen =
        policy("[[envelope]]\nupstream = \"bank\"\nreason = \"payments are frozen\"").with_grants(k(), store.clone());
    let third = held(json!({"amount": 9}));
    let g3 = frozen.approval_grant(&third, &ops).await.ok().flatten().unwrap_or_else(|| panic!("minted"));
    let r = frozen.recheck(&third, Some(&g3.token)).await;
    assert_eq!(r.verdict, Verdict::Deny { reason: "payments are frozen".into() }, "{r:?}");

    // Without grants: nothing is minted, and the envelope is still asked.
    let plain = policy("");
    assert_eq!(plain.approval_grant(&call, &ops).await.ok().flatten(), None);
    assert_eq!(plain.recheck(&call, None).await.verdict, Verdict::Allow);
}
