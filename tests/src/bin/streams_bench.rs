//! Memory and database load of idle event streams, on loopback only: the gateway's resident set
//! when idle and with `--streams` open admin event streams (SSE on invocations that stay in
//! flight), and — with `--store-url postgres://…` — the transactions per second the database
//! commits while those streams sit idle, next to the same measure with no stream open, in the
//! same run. It also times an unrelated durable call (p50 at concurrency 1) before the streams
//! open, while they are open, and again after they are closed, so per-stream work that slows
//! everything else shows, and is told apart from what the streams leave behind (such as the
//! connection pool their opening grew): a rise that stays after they close is not their own cost.
//!
//! With `--kind a2a` the streams are A2A `SubscribeToTask` streams (HTTP+JSON SSE) on tasks of the
//! built-in `tck` agent that wait for input (non-terminal, with no run in flight).
//!
//! `switchyard-streams-bench [--streams 10000] [--seconds 5] [--store-url postgres://…] [--kind events|a2a]`
//!
//! The gateway is `$SWITCHYARD_BIN`, else the one next to this binary (build both in release).
//! Each process needs a descriptor per stream: raise `ulimit -n` above `--streams` plus a margin.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::json;
use switchyard_tests::bench::Run;
use switchyard_tests::gateway::{Gateway, Options, TOKEN};

const TENANT: &str = "bench";
/// Streams are spread over this many in-flight invocations.
const INVOCATIONS: usize = 100;

struct Args {
    streams: usize,
    seconds: u64,
    store_url: Option<String>,
    /// A2A subscriptions instead of admin event streams.
    a2a: bool,
}

fn parse() -> anyhow::Result<Args> {
    let mut a = Args { streams: 10_000, seconds: 5, store_url: None, a2a: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--streams" => a.streams = value.parse()?,
            "--seconds" => a.seconds = value.parse()?,
            "--store-url" => a.store_url = Some(value),
            "--kind" => match value.as_str() {
                "events" => a.a2a = false,
                "a2a" => a.a2a = true,
                other => bail!("--kind is events or a2a, not {other}"),
            },
            other => bail!("unknown flag {other}"),
        }
    }
    if !(1..=20_000).contains(&a.streams) || !(1..=60).contains(&a.seconds) {
        bail!("--streams must be 1..=20000 and --seconds 1..=60");
    }
    Ok(a)
}

/// The gateway's resident set, in kB.
fn rss_kb(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")
}

/// Transactions the database committed or rolled back per second, over at least `seconds`.
async fn db_tx_per_second(url: &str, seconds: u64) -> anyhow::Result<f64> {
    let count = || -> anyhow::Result<f64> {
        let out = switchyard_tests::pg::psql(
            url,
            "SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database WHERE datname = current_database()",
        )
        .map_err(anyhow::Error::msg)?;
        Ok(out.trim().parse()?)
    };
    // PostgreSQL publishes a backend's counters late (an idle connection's up to 10 s later):
    // let what came before settle, count over the window, and let the window's own settle
    // before counting again (nothing else runs meanwhile).
    const SETTLE: Duration = Duration::from_secs(11);
    tokio::time::sleep(SETTLE).await;
    let before = count()?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds) + SETTLE).await;
    let after = count()?;
    // In steady state what was counted ran over as long as the counts were apart; the psql
    // sessions' own transactions are counted out.
    Ok(((after - before - 2.0).max(0.0)) / t0.elapsed().as_secs_f64())
}

/// Durable `echo` calls one after another for `seconds`; their latencies.
async fn unrelated_calls(gw: &Gateway, seconds: u64) -> anyhow::Result<Run> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let t0 = Instant::now();
    let mut lat = Vec::new();
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let started = Instant::now();
        let (status, v) = gw.submit("other", "echo", json!({"n": n}), None, 10_000).await?;
        if status != 201 || v["state"]["state"] != "succeeded" {
            bail!("unrelated call failed: {status} {v}");
        }
        lat.push(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
    }
    Ok(Run::new(lat, t0.elapsed()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse()?;
    let dir = tempfile::tempdir()?;
    // The A2A side: the built-in `tck` agent, open to anonymous callers.
    let config = args.a2a.then(|| -> anyhow::Result<std::path::PathBuf> {
        let path = dir.path().join("switchyard.toml");
        std::fs::write(&path, "[a2a]\nanonymous = true\n[[a2a.agents]]\nname = \"tck\"\nkind = \"tck\"\n")?;
        Ok(path)
    });
    let gw = Gateway::start(Options {
        data_dir: dir.path().join("d"),
        store_url: args.store_url.clone(),
        config: config.transpose()?,
        // The followed calls must stay idle: no attempt timeout (and retry) within the run.
        env: vec![
            ("RUST_LOG".into(), "warn".into()),
            ("SWITCHYARD__ENGINE__ATTEMPT_TIMEOUT_MS".into(), "900000".into()),
        ],
        ..Options::default()
    });
    let store = if args.store_url.is_some() { "postgres" } else { "sqlite" };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_kb = rss_kb(gw.pid())?;
    // What the streams follow, made before the baseline: invocations that stay in flight (an
    // `echo` that takes 10 minutes; both sides count their lease renewals), or A2A tasks that
    // wait for input.
    let mut ids = Vec::new();
    for i in 0..INVOCATIONS {
        ids.push(if args.a2a { waiting_task(&gw, i).await? } else { in_flight(&gw, i).await? });
    }
    // The database's load is measured while nothing else runs, before the unrelated calls.
    let base_tx = match &args.store_url {
        Some(url) => Some(db_tx_per_second(url, args.seconds).await?),
        None => None,
    };
    let base_calls = unrelated_calls(&gw, args.seconds).await?;

    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    let before_kb = rss_kb(gw.pid())?;
    let opened = futures::stream::iter(0..args.streams)
        .map(|i| {
            let id = &ids[i % ids.len()];
            let req = if args.a2a {
                client.post(format!("{}/a2a/tck/rest/tasks/{id}:subscribe", gw.base)).header("a2a-version", "1.0")
            } else {
                client
                    .get(format!("{}/admin/v1/invocations/{id}/events", gw.base))
                    .bearer_auth(TOKEN)
                    .header("x-switchyard-tenant", TENANT)
            };
            async move {
                let resp = req.header("accept", "text/event-stream").send().await?;
                if !resp.status().is_success() {
                    bail!("stream {i}: {}", resp.status());
                }
                let mut body = resp.bytes_stream();
                // The replayed events (or the task) arrive first: the stream is open and served.
                body.next().await.context("stream ended at once")??;
                Ok(body)
            }
        })
        .buffer_unordered(200)
        .collect::<Vec<_>>()
        .await;
    let mut streams = Vec::with_capacity(opened.len());
    for s in opened {
        streams.push(s?);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let open_kb = rss_kb(gw.pid())?;
    let loaded_tx = match &args.store_url {
        Some(url) => Some(db_tx_per_second(url, args.seconds).await?),
        None => None,
    };
    let loaded_calls = unrelated_calls(&gw, args.seconds).await?;
    drop(streams);
    // Let the gateway see every stream gone before timing again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after_calls = unrelated_calls(&gw, args.seconds).await?;
    let per_stream = (open_kb.saturating_sub(before_kb)) as f64 / args.streams as f64;
    let kind = if args.a2a { "A2A SubscribeToTask" } else { "admin event" };
    let over = if args.a2a { "tasks waiting for input" } else { "in-flight invocations" };
    println!("idle {kind} streams, store {store}, {} streams over {INVOCATIONS} {over}", args.streams);
    println!("{:<34} {:>14} {:>14} {:>14}", "measure", "no streams", "streams open", "streams closed");
    println!("{:<34} {:>14.1} {:>14.1}", "gateway RSS MB", idle_kb as f64 / 1024.0, open_kb as f64 / 1024.0);
    println!("{:<34} {:>14} {:>14.1}", "RSS per stream kB", "-", per_stream);
    println!(
        "{:<34} {:>14.3} {:>14.3} {:>14.3}",
        "unrelated durable call p50 ms",
        base_calls.pct(0.5),
        loaded_calls.pct(0.5),
        after_calls.pct(0.5)
    );
    if let (Some(b), Some(l)) = (base_tx, loaded_tx) {
        println!("{:<34} {:>14.1} {:>14.1}", "database transactions/s", b, l);
    }
    let report = json!({
        "store": store,
        "kind": if args.a2a { "a2a" } else { "events" },
        "streams": args.streams,
        "rss_idle_kb": idle_kb,
        "rss_streams_kb": open_kb,
        "rss_per_stream_kb": per_stream,
        "unrelated_p50_ms": [base_calls.pct(0.5), loaded_calls.pct(0.5), after_calls.pct(0.5)],
        "db_tx_per_s": [base_tx, loaded_tx],
    });
    println!("{report}");
    Ok(())
}

/// An invocation that stays in flight for 10 minutes.
async fn in_flight(gw: &Gateway, i: usize) -> anyhow::Result<String> {
    let (status, v) = gw.submit(TENANT, "echo", json!({"delay_ms": 600_000, "i": i}), None, 0).await?;
    if status != 201 {
        bail!("submit: {status} {v}");
    }
    Ok(v["id"].as_str().unwrap_or_default().to_string())
}

/// A task of the `tck` agent that waits for input.
async fn waiting_task(gw: &Gateway, i: usize) -> anyhow::Result<String> {
    let message = json!({"messageId": format!("tck-input-required-{i}-{}", std::process::id()), "role": "ROLE_USER",
                         "parts": [{"text": "hello"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let v: serde_json::Value = gw
        .http
        .post(format!("{}/a2a/tck", gw.base))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    let task = &v["result"]["task"];
    if task["status"]["state"] != "TASK_STATE_INPUT_REQUIRED" {
        bail!("the tck agent did not wait for input: {v}");
    }
    Ok(task["id"].as_str().unwrap_or_default().to_string())
}
