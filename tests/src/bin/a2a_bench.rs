//! A2A SendMessage (blocking, JSON-RPC) through the gateway vs directly against the internal
//! agent, side by side in one run, on loopback only: p50/p99 latency at concurrency 1 and
//! throughput at `--concurrency`. A third row is the gateway's built-in `echo` agent (no
//! upstream hop), which isolates what the gateway itself costs. A fourth, `paced`, calls the
//! agent directly again but leaves it idle before each call as long as the gateway's work leaves
//! it idle (the gateway's added p50): the a2a-sdk agent answers more slowly after a pause, so
//! part of what the gateway adds over `direct` is the agent's own, and the gap to `paced` is the
//! gateway's.
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

/// `pause`: idle time before each call (the paced baseline).
async fn drive(url: &str, concurrency: usize, seconds: u64, tag: &str, pause: Duration) -> anyhow::Result<Run> {
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
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                let started = Instant::now();
                send(&http, &url, &format!("{tag}-{w}-{n}-{}", uuid::Uuid::new_v4().simple())).await?;
                lat.push(started.elapsed().as_micros() as u64);
            }
            anyhow::Ok(lat)
        }));
    }
    Run::join(tasks, t0).await
}

fn print_row(name: &str, single: &Run, loaded: Option<(&Run, usize)>) {
    let loaded = loaded.map_or_else(String::new, |(l, c)| format!("{:>9.0} (c={c})", l.rate));
    println!("{name:<8} {:>9.3} {:>9.3} {:>9.0} {loaded:>14}", single.pct(0.5), single.pct(0.99), single.rate);
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
        wrapper: Vec::new(),
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
        let single = drive(url, 1, args.seconds, name, Duration::ZERO).await?;
        let loaded = drive(url, args.concurrency, args.seconds, name, Duration::ZERO).await?;
        print_row(name, &single, Some((&loaded, args.concurrency)));
        rows.push((*name, single, Some(loaded)));
    }
    // The agent answers more slowly after sitting idle, and through the gateway it sits idle
    // while the gateway works between two of its calls. `paced`: the agent called directly,
    // idle that long before each call (the gateway's added p50), single client.
    let added = rows[1].1.pct(0.5) - rows[0].1.pct(0.5);
    let pause = Duration::from_secs_f64(added.max(0.0) / 1000.0);
    let paced = drive(&targets[0].1, 1, args.seconds, "paced", pause).await?;
    print_row("paced", &paced, None);
    println!(
        "gateway adds {added:.3} ms at p50 ({:.3} ms over the paced agent); throughput ratio gateway/direct at c={}: {:.2}",
        rows[1].1.pct(0.5) - paced.pct(0.5),
        args.concurrency,
        rows[1].2.as_ref().map_or(0.0, |g| g.rate) / rows[0].2.as_ref().map_or(1.0, |d| d.rate)
    );
    rows.push(("paced", paced, None));
    let report: Vec<Value> = rows
        .iter()
        .map(|(n, s, l)| json!({"target": n, "p50_ms": s.pct(0.5), "p99_ms": s.pct(0.99), "rate_c1": s.rate, "rate_loaded": l.as_ref().map(|l| l.rate)}))
        .collect();
    println!(
        "{}",
        json!({"store": store, "concurrency": args.concurrency, "seconds": args.seconds, "results": report})
    );
    Ok(())
}
