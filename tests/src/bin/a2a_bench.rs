//! A2A SendMessage (blocking, JSON-RPC) through the gateway vs directly against the internal
//! agent, side by side in one run, on loopback only: p50/p99 latency at concurrency 1 and
//! throughput at `--concurrency`. A third row is the gateway's built-in `echo` agent (no
//! upstream hop), which isolates what the gateway itself costs.
//!
//! `switchyard-a2a-bench [--seconds 5] [--concurrency 16] [--store-url postgres://…]`
//!
//! Starts the internal agent (official Python SDK, `tests/python/a2a_internal_agent.py`) and a
//! gateway (`$SWITCHYARD_BIN`, else next to this binary; SQLite in a temp dir unless
//! `--store-url`). Build in release for numbers that mean something. Prints a table and one
//! JSON line.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchyard_tests::a2a::InternalAgent;
use switchyard_tests::bench::{Args, Run};
use switchyard_tests::gateway::{Gateway, Options};

async fn send(http: &reqwest::Client, url: &str, id: &str) -> anyhow::Result<()> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let v: Value = http.post(url).header("a2a-version", "1.0").json(&body).send().await?.json().await?;
    if v["result"]["task"]["status"]["state"] != "TASK_STATE_COMPLETED" {
        bail!("SendMessage did not complete: {v}");
    }
    Ok(())
}

async fn drive(url: &str, concurrency: usize, seconds: u64, tag: &str) -> anyhow::Result<Run> {
    let http = reqwest::Client::new();
    for w in 0..concurrency {
        send(&http, url, &format!("warm-{tag}-{w}-{}", uuid::Uuid::new_v4())).await.context("warm-up")?;
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let (http, url, tag) = (http.clone(), url.to_string(), tag.to_string());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let started = Instant::now();
                send(&http, &url, &format!("{tag}-{w}-{n}-{}", uuid::Uuid::new_v4().simple())).await?;
                lat.push(started.elapsed().as_micros() as u64);
            }
            anyhow::Ok(lat)
        }));
    }
    Run::join(tasks, t0).await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    let dir = tempfile::tempdir()?;
    let agent = InternalAgent::start(dir.path());
    let config = dir.path().join("switchyard.toml");
    std::fs::write(
        &config,
        format!(
            "[a2a]\nanonymous = true\n\n[[a2a.agents]]\nname = \"internal\"\nkind = \"upstream\"\ncard_url = \"{}/.well-known/agent-card.json\"\n\n[[a2a.agents]]\nname = \"echo\"\nkind = \"echo\"\n",
            agent.url
        ),
    )?;
    let gw = Gateway::start(Options {
        data_dir: dir.path().join("d"),
        config: Some(config),
        store_url: args.store_url.clone(),
        env: vec![("RUST_LOG".into(), "warn".into())],
        listen: None,
    });
    let store = args.store_url.as_deref().map_or("sqlite", |_| "postgres");
    let targets = [
        ("direct", format!("{}/", agent.url)),
        ("gateway", format!("{}/a2a/internal", gw.base)),
        ("builtin", format!("{}/a2a/echo", gw.base)),
    ];
    println!(
        "SendMessage (blocking, JSON-RPC), {} s per cell, store {store}; direct = internal agent (a2a-sdk), gateway = proxied, builtin = the gateway's echo agent",
        args.seconds
    );
    println!("{:<8} {:>9} {:>9} {:>9} {:>14}", "target", "p50 ms", "p99 ms", "c=1 /s", "loaded /s");
    let mut rows = Vec::new();
    for (name, url) in &targets {
        let single = drive(url, 1, args.seconds, name).await?;
        let loaded = drive(url, args.concurrency, args.seconds, name).await?;
        println!(
            "{name:<8} {:>9.3} {:>9.3} {:>9.0} {:>9.0} (c={})",
            single.pct(0.5),
            single.pct(0.99),
            single.rate,
            loaded.rate,
            args.concurrency
        );
        rows.push((name, single, loaded));
    }
    let (d, g) = (&rows[0], &rows[1]);
    println!(
        "gateway adds {:.3} ms at p50; throughput ratio gateway/direct at c={}: {:.2}",
        g.1.pct(0.5) - d.1.pct(0.5),
        args.concurrency,
        g.2.rate / d.2.rate
    );
    let report: Vec<Value> = rows
        .iter()
        .map(|(n, s, l)| json!({"target": n, "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99), "rate_c1": s.rate, "rate_loaded": l.rate}))
        .collect();
    println!(
        "{}",
        json!({"store": store, "concurrency": args.concurrency, "seconds": args.seconds, "results": report})
    );
    Ok(())
}
