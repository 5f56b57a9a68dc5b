//! A bounded load generator for the admin API: `concurrency` clients each submit durable calls
//! (waiting for each outcome) for `seconds`, on loopback only. Prints one JSON line with the
//! rate and latency percentiles. A call the policy defers (`429`) counts as `deferred`, not as an
//! error, and the client goes straight on (a flood).
//!
//! `switchyard-loadgen --base http://127.0.0.1:8787 --token T --concurrency 16 --seconds 10 --operation count [--tenant T]`

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

struct Args {
    base: String,
    token: String,
    concurrency: usize,
    seconds: u64,
    operation: String,
    tenant: String,
}

fn parse() -> anyhow::Result<Args> {
    let mut a = Args {
        base: String::new(),
        token: String::new(),
        concurrency: 16,
        seconds: 10,
        operation: "count".into(),
        tenant: "default".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--base" => a.base = value,
            "--token" => a.token = value,
            "--concurrency" => a.concurrency = value.parse()?,
            "--seconds" => a.seconds = value.parse()?,
            "--operation" => a.operation = value,
            "--tenant" => a.tenant = value,
            other => bail!("unknown flag {other}"),
        }
    }
    let loopback = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];
    if !loopback.iter().any(|p| a.base.starts_with(p)) {
        bail!("--base must be a loopback http URL");
    }
    if !(1..=512).contains(&a.concurrency) || !(1..=300).contains(&a.seconds) {
        bail!("--concurrency must be 1..=512 and --seconds 1..=300");
    }
    Ok(a)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse()?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(args.concurrency).build()?;
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let t0 = Instant::now();
    let mut workers = Vec::new();
    for w in 0..args.concurrency {
        let (http, base, token, op) = (http.clone(), args.base.clone(), args.token.clone(), args.operation.clone());
        let tenant = args.tenant.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let (mut errors, mut deferred) = (0u64, 0u64);
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let started = Instant::now();
                let body = json!({"upstream": "demo", "operation": op, "request": {"w": w, "n": n}});
                let resp = http
                    .post(format!("{base}/admin/v1/invocations?wait_ms=10000"))
                    .bearer_auth(&token)
                    .header("x-switchyard-tenant", &tenant)
                    .json(&body)
                    .send()
                    .await;
                let ok = match resp {
                    Ok(r) if r.status().as_u16() == 201 => {
                        let v: serde_json::Value = r.json().await.unwrap_or_default();
                        v["state"]["state"] == "succeeded"
                    }
                    Ok(r) if r.status().as_u16() == 429 => {
                        deferred += 1;
                        continue;
                    }
                    _ => false,
                };
                if ok {
                    latencies.push(started.elapsed());
                } else {
                    errors += 1;
                }
            }
            (latencies, errors, deferred)
        }));
    }
    let mut all = Vec::new();
    let (mut errors, mut deferred) = (0, 0);
    for w in workers {
        let (l, e, d) = w.await?;
        all.extend(l);
        errors += e;
        deferred += d;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{}",
        json!({
            "operation": args.operation,
            "concurrency": args.concurrency,
            "completed": all.len(),
            "errors": errors,
            "deferred": deferred,
            "tenant": args.tenant,
            "seconds": elapsed,
            "per_second": all.len() as f64 / elapsed,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
        })
    );
    Ok(())
}
