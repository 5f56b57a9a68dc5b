//! Policy decision overhead: the time the engine spends asking its `PolicyPoint` before an
//! admission, for the built-in evaluator with a realistic policy (an envelope, 50 rules with
//! patterns and argument conditions, two quotas that never run dry), next to the no-policy
//! baseline (`AllowAll`) in the same run. Reports p50/p99 per decision and the ratio.
//!
//! ```text
//! cargo run --release -p switchyard-tests --bin switchyard-policy-bench -- [--decisions 200000]
//! ```

use std::time::Instant;

use serde_json::json;
use switchyard_contract::{
    AllowAll, CallFacts, EffectClass, Ingress, PolicyPoint, Principal, RequestDigest, Target, TenantId,
};
use switchyard_policy::{Evaluator, PolicyConfig};

/// `cedar`: a Cedar policy set deciding every tenant's calls, and whether its decisions are
/// cached.
fn policy(authzen: Option<&str>, cedar: Option<(&std::path::Path, bool)>) -> anyhow::Result<Evaluator> {
    let mut text = String::from(
        "[[envelope]]\nupstream = \"prod-*\"\n[[envelope]]\noperation = \"drop_*\"\n\
         [[quotas]]\nrate_per_s = 1e9\nburst = 1000000000\n\
         [[quotas]]\nper = [\"tenant\", \"upstream\"]\nrate_per_s = 1e9\nburst = 1000000000\n",
    );
    for i in 0..50 {
        text.push_str(&format!(
            "[[rules]]\nupstream = \"svc-{i}*\"\noperation = \"op_*\"\ntier = \"critical\"\n\
             [[rules.when]]\npointer = \"/arguments/amount\"\nmin = {i}\n"
        ));
    }
    text.push_str("[[rules]]\nupstream = \"fx\"\noperation = \"echo\"\ntier = \"routine\"\n");
    if let Some(url) = authzen {
        text.push_str(&format!("[authzen]\nurl = \"{url}\"\n"));
    }
    if let Some((path, cached)) = cedar {
        text.push_str(&format!("[cedar]\npolicies = {}\n", toml::Value::String(path.display().to_string())));
        if !cached {
            text.push_str("[cedar.cache]\nroutine_s = 0\nsensitive_s = 0\n");
        }
    }
    let cfg: PolicyConfig = toml::from_str(&text)?;
    Ok(Evaluator::new(cfg)?)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0) as f64 / 1000.0
}

async fn measure(point: &dyn PolicyPoint, n: usize) -> (f64, f64) {
    let principal = Principal::new(TenantId::new("acme").unwrap_or_else(|e| panic!("{e}")), "alice");
    let target = Target { upstream: "fx".into(), operation: "echo".into(), effect: EffectClass::Write };
    let request = json!({"tool": "echo", "arguments": {"text": "hi", "amount": 3}});
    let digest = RequestDigest::compute("fx", "echo", &request).unwrap_or_else(|e| panic!("{e}"));
    let facts = CallFacts {
        principal: &principal,
        ingress: Ingress::Mcp,
        target: &target,
        digest: &digest,
        request: &request,
        grant: None,
        invocation: switchyard_contract::InvocationId::new(),
    };
    for _ in 0..n / 10 {
        std::hint::black_box(point.decide(&facts).await);
    }
    let mut ns = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        std::hint::black_box(point.decide(&facts).await);
        ns.push(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    ns.sort_unstable();
    (percentile(&ns, 0.5), percentile(&ns, 0.99))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut n = 200_000;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--decisions" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(n),
            other => anyhow::bail!("unknown argument `{other}`"),
        }
    }
    let evaluator = policy(None, None)?;
    let (base50, base99) = measure(&AllowAll, n).await;
    let (p50, p99) = measure(&evaluator, n).await;
    // The same policy deferring to an AuthZEN PDP on loopback that allows everything: after the
    // first (warm-up) decision every one is a cache hit (routine: reused for 300 s).
    let pdp = axum::Router::new().route(
        "/access/v1/evaluations",
        axum::routing::post(|axum::Json(body): axum::Json<serde_json::Value>| async move {
            let n = body["evaluations"].as_array().map_or(0, Vec::len);
            axum::Json(json!({"evaluations": vec![json!({"decision": true}); n]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, pdp).await });
    let with_pdp = policy(Some(&url), None)?;
    let (hit50, hit99) = measure(&with_pdp, n).await;
    // The same policy with a Cedar policy set of 50 permits and 50 forbids (conditions on the
    // subject, the operation's attributes and the context) deciding every tenant's calls.
    let dir = tempfile::tempdir()?;
    let cedar_file = dir.path().join("policies.cedar");
    std::fs::write(&cedar_file, cedar_policies(50))?;
    let (cedar50, cedar99) = measure(&policy(None, Some((&cedar_file, false)))?, n).await;
    let (cached50, cached99) = measure(&policy(None, Some((&cedar_file, true)))?, n).await;
    println!("decision       p50 µs   p99 µs");
    println!("no policy    {base50:>8.3} {base99:>8.3}");
    println!("52 rules     {p50:>8.3} {p99:>8.3}   (+{:.3} µs at p50 over no policy)", p50 - base50);
    println!("+ authzen    {hit50:>8.3} {hit99:>8.3}   (PDP decisions served from the cache)");
    println!("+ cedar      {cedar50:>8.3} {cedar99:>8.3}   (101 Cedar policies, every decision evaluated)");
    println!("+ cedar hit  {cached50:>8.3} {cached99:>8.3}   (the same, decisions served from the cache)");
    println!(
        "{}",
        json!({"decisions": n, "baseline": {"p50_us": base50, "p99_us": base99}, "policy": {"p50_us": p50, "p99_us": p99},
               "added_p50_us": p50 - base50, "policy_version": evaluator.version(),
               "authzen_cache_hit": {"p50_us": hit50, "p99_us": hit99},
               "cedar": {"p50_us": cedar50, "p99_us": cedar99},
               "cedar_cache_hit": {"p50_us": cached50, "p99_us": cached99}})
    );
    Ok(())
}

/// `n` permits and `n` forbids, none of which decides the measured call alone: the authorizer
/// evaluates every one.
fn cedar_policies(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "permit (principal, action == Switchyard::Action::\"tools/call\", resource in Switchyard::Upstream::\"svc-{i}\")\n\
             when {{ resource.effect == \"read_only\" && context.tier != \"critical\" }};\n\
             forbid (principal == Switchyard::Subject::\"mallory-{i}\", action, resource)\n\
             when {{ context.ingress == \"mcp\" }};\n"
        ));
    }
    text.push_str("permit (principal, action, resource) when { context.tier == \"routine\" };\n");
    text
}
