//! What tracing costs: MCP `tools/call` of a `read_only` tool (`echo`) through a gateway with
//! `[telemetry]` off (the baseline) and one exporting every call's spans over OTLP/HTTP to a
//! collector in this process, alternating in the same run, on loopback only: p50 at concurrency
//! 1 and throughput at `--concurrency`, with the spans the collector received per call.
//!
//! `switchyard-traces-bench [--seconds 5] [--concurrency 16] [--store-url postgres://…]`
//!
//! Then, from the spans of the single-client calls, where a call's time goes: for each span
//! (the face's request, the invocation, its admission, attempt, upstream call and commits), the
//! median of when it starts after the face's request span started and of how long it lasts —
//! for the read above, and then for a `write` tool (`count_write`) called for as long by a
//! single client of one more gateway exporting its spans.
//!
//! Build the gateway, the fixture and this binary in release for numbers that mean something.
//! Prints three tables and one JSON line.

use std::collections::BTreeMap;

use serde_json::json;
use switchyard_tests::bench::{Args, Run, mcp_calls};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{Fixture, UpstreamSpec, write_config};
use switchyard_tests::otlp::{Collector, SpanSeen};

const ROUNDS: usize = 2;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    let dir = tempfile::tempdir()?;
    let fixture = Fixture::start(&[]);
    let collector = Collector::start().await;
    let mut upstream = UpstreamSpec::http("fx", &fixture.url);
    upstream.prefix = Some(String::new());
    let mcp = std::fs::read_to_string(write_config(dir.path(), &[upstream], ""))?;
    let traced = format!("{mcp}\n[telemetry]\notlp_endpoint = \"{}\"\nbatch_delay_ms = 200\n", collector.url);
    let configs = [("off", mcp), ("on", traced.clone())];
    println!("tools/call echo (read_only), {} s per cell, {ROUNDS} rounds, traces off vs on", args.seconds);
    println!(
        "{:<6} {:>9} {:>9} {:>11} {:>14} {:>14}",
        "traces", "p50 ms", "p99 ms", "c=1 /s", "loaded /s", "spans/call"
    );
    let mut cells: Vec<(&str, Run, Run, f64)> = Vec::new();
    let mut single_call_spans = Vec::new();
    for round in 0..ROUNDS {
        for (name, text) in &configs {
            let mut gw = start(dir.path(), &format!("{name}-{round}"), text, &args)?;
            let url = format!("{}/mcp", gw.base);
            let before = collector.spans().len();
            let single = mcp_calls(&url, true, "echo", 1, args.seconds).await?;
            let after_single = collector.spans().len();
            let loaded = mcp_calls(&url, true, "echo", args.concurrency, args.seconds).await?;
            // Stopped with SIGTERM, the gateway exports its last spans before it exits.
            tokio::task::block_in_place(|| gw.terminate());
            let calls = (single.lat_us.len() + loaded.lat_us.len() + 1 + args.concurrency) as f64;
            let per_call = (collector.spans().len() - before) as f64 / calls;
            if *name == "on" {
                // The loaded run's spans went out after these: what was exported by then (the
                // batch delay is 200 ms) is the single client's, less its last batch at most.
                single_call_spans.extend(collector.spans().into_iter().skip(before).take(after_single - before));
            }
            println!(
                "{name:<6} {:>9.3} {:>9.3} {:>11.0} {:>14.0} {per_call:>14.2}",
                single.pct(0.5),
                single.pct(0.99),
                single.rate,
                loaded.rate
            );
            cells.push((name, single, loaded, per_call));
        }
    }
    let mean = |name: &str, f: &dyn Fn(&Run, &Run) -> f64| {
        let v: Vec<f64> = cells.iter().filter(|c| c.0 == name).map(|c| f(&c.1, &c.2)).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let p50 = |s: &Run, _: &Run| s.pct(0.5);
    let rate = |_: &Run, l: &Run| l.rate;
    let (added, ratio) = (mean("on", &p50) - mean("off", &p50), mean("on", &rate) / mean("off", &rate));
    println!("traces on add {added:.3} ms at p50; throughput ratio on/off at c={}: {ratio:.2}", args.concurrency);
    let spans = cells.iter().filter(|c| c.0 == "on").map(|c| c.3).sum::<f64>() / ROUNDS as f64;
    breakdown("read_only echo", &single_call_spans);
    let mut gw = start(dir.path(), "write", &traced, &args)?;
    let before = collector.spans().len();
    mcp_calls(&format!("{}/mcp", gw.base), true, "count_write", 1, args.seconds).await?;
    tokio::task::block_in_place(|| gw.terminate());
    breakdown("write count_write", &collector.spans()[before..]);
    println!(
        "{}",
        json!({"concurrency": args.concurrency, "seconds": args.seconds, "added_p50_ms": added,
               "throughput_ratio": ratio, "spans_per_call": spans})
    );
    Ok(())
}

/// A gateway on `config` (written to `<dir>/<name>.toml`), its data in `<dir>/<name>`.
fn start(dir: &std::path::Path, name: &str, config: &str, args: &Args) -> anyhow::Result<Gateway> {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config)?;
    Ok(Gateway::start(Options {
        data_dir: dir.join(name),
        config: Some(path),
        store_url: args.store_url.clone(),
        env: vec![("RUST_LOG".into(), "warn".into())],
        listen: None,
        wrapper: Vec::new(),
    }))
}

/// Prints, per span name, the median start after its trace's first span and the median
/// duration, over every trace that has a root span (the face's request).
fn breakdown(tool: &str, spans: &[SpanSeen]) {
    let mut traces: BTreeMap<&str, Vec<&SpanSeen>> = BTreeMap::new();
    for s in spans {
        traces.entry(s.trace_id.as_str()).or_default().push(s);
    }
    let mut seen: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut whole = 0usize;
    for members in traces.values() {
        let Some(root) = members.iter().find(|s| s.parent.is_empty()) else { continue };
        whole += 1;
        for s in members {
            let name = match s.attributes.get("what") {
                Some(what) => format!("{} ({what})", s.name),
                None => s.name.clone(),
            };
            let entry = seen.entry(name).or_default();
            entry.0.push(s.start_ns.saturating_sub(root.start_ns) as f64 / 1e6);
            entry.1.push(s.end_ns.saturating_sub(s.start_ns) as f64 / 1e6);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let mut rows: Vec<(f64, f64, usize, String)> = seen
        .into_iter()
        .map(|(name, (mut starts, mut lasts))| (median(&mut starts), median(&mut lasts), starts.len(), name))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("where a single client's {tool} call goes ({whole} traces; medians, ms after the face's span started)");
    println!("{:<34} {:>9} {:>9} {:>8}", "span", "starts", "lasts", "count");
    for (start, last, count, name) in rows {
        println!("{name:<34} {start:>9.3} {last:>9.3} {count:>8}");
    }
}
