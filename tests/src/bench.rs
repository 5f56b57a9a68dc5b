//! What the loopback benchmark binaries share: their flags and latency summaries.

use anyhow::{Context, bail};

/// `--seconds N --concurrency N [--store-url URL]`.
#[derive(Debug, Clone)]
pub struct Args {
    pub seconds: u64,
    pub concurrency: usize,
    pub store_url: Option<String>,
}

impl Args {
    pub fn parse() -> anyhow::Result<Args> {
        let mut a = Args { seconds: 5, concurrency: 16, store_url: None };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--seconds" => a.seconds = value.parse()?,
                "--concurrency" => a.concurrency = value.parse()?,
                "--store-url" => a.store_url = Some(value),
                other => bail!("unknown flag {other}"),
            }
        }
        if !(1..=120).contains(&a.seconds) || !(1..=256).contains(&a.concurrency) {
            bail!("--seconds must be 1..=120 and --concurrency 1..=256");
        }
        Ok(a)
    }
}

/// Latencies (µs, sorted) and calls per second of one measured cell.
#[derive(Debug, Clone)]
pub struct Run {
    pub lat_us: Vec<u64>,
    pub rate: f64,
}

impl Run {
    /// From unsorted latencies measured over `elapsed`.
    pub fn new(mut lat_us: Vec<u64>, elapsed: std::time::Duration) -> Run {
        let rate = lat_us.len() as f64 / elapsed.as_secs_f64();
        lat_us.sort_unstable();
        Run { lat_us, rate }
    }

    /// Joins the workers of a cell started at `t0`, each returning its latencies (µs).
    pub async fn join(
        workers: Vec<tokio::task::JoinHandle<anyhow::Result<Vec<u64>>>>,
        t0: std::time::Instant,
    ) -> anyhow::Result<Run> {
        let mut lat_us = Vec::new();
        for w in workers {
            lat_us.extend(w.await??);
        }
        Ok(Run::new(lat_us, t0.elapsed()))
    }

    /// The `p` quantile (0..=1) in milliseconds.
    pub fn pct(&self, p: f64) -> f64 {
        if self.lat_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.lat_us.len() as f64 - 1.0) * p).round() as usize;
        self.lat_us[i.min(self.lat_us.len() - 1)] as f64 / 1000.0
    }
}

/// MCP `tools/call`s of `tool` at `url` by `concurrency` clients (2026-07-28 ones if `modern`,
/// else 2025-11-25 sessions) for `seconds`, after one warm-up call each; every call must succeed.
pub async fn mcp_calls(url: &str, modern: bool, tool: &str, concurrency: usize, seconds: u64) -> anyhow::Result<Run> {
    use crate::mcp::{call, connect};
    use serde_json::json;
    use std::time::{Duration, Instant};
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        clients.push(connect(url, modern).await);
    }
    // Warm up each connection (and the gateway's upstream sessions).
    for (w, c) in clients.iter().enumerate() {
        let args = json!({"text": "warm", "key": format!("warm-{w}")});
        c.call_tool(call(tool, args)).await.context("warm-up call")?;
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (w, client) in clients.into_iter().enumerate() {
        let tool = tool.to_string();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut n = 0u64;
            while Instant::now() < deadline {
                n += 1;
                let args = json!({"text": "bench", "key": format!("{w}-{n}")});
                let started = Instant::now();
                let r = client.call_tool(call(&tool, args)).await;
                if r.as_ref().map(|r| r.is_error == Some(true)).unwrap_or(true) {
                    return Err(anyhow::anyhow!("call failed: {r:?}"));
                }
                lat.push(started.elapsed().as_micros() as u64);
            }
            let _ = client.cancel().await;
            Ok(lat)
        }));
    }
    Run::join(tasks, t0).await
}
