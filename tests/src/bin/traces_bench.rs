//! What tracing costs: MCP `tools/call` of a `read_only` tool (`echo`) through a gateway with
//! `[telemetry]` off (the baseline) and one exporting every call's spans over OTLP/HTTP to a
//! collector in this process, alternating in the same run, on loopback only: p50 at concurrency
//! 1 and throughput at `--concurrency`, with the spans the collector received per call.
//!
//! `switchyard-traces-bench [--seconds 5] [--concurrency 16] [--store-url postgres://…]`
//!
//! Build the gateway, the fixture and this binary in release for numbers that mean something.
//! Prints a table and one JSON line.

use serde_json::json;
use switchyard_tests::bench::{Args, Run, mcp_calls};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{Fixture, UpstreamSpec, write_config};
use switchyard_tests::otlp::Collector;

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
    let configs = [
        ("off", mcp.clone()),
        ("on", format!("{mcp}\n[telemetry]\notlp_endpoint = \"{}\"\nbatch_delay_ms = 200\n", collector.url)),
    ];
    println!("tools/call echo (read_only), {} s per cell, {ROUNDS} rounds, traces off vs on", args.seconds);
    println!(
        "{:<6} {:>9} {:>9} {:>11} {:>14} {:>14}",
        "traces", "p50 ms", "p99 ms", "c=1 /s", "loaded /s", "spans/call"
    );
    let mut cells: Vec<(&str, Run, Run, f64)> = Vec::new();
    for round in 0..ROUNDS {
        for (name, text) in &configs {
            let path = dir.path().join(format!("{name}.toml"));
            std::fs::write(&path, text)?;
            let data = dir.path().join(format!("{name}-{round}"));
            let mut gw = Gateway::start(Options {
                data_dir: data,
                config: Some(path),
                store_url: args.store_url.clone(),
                env: vec![("RUST_LOG".into(), "warn".into())],
                listen: None,
            });
            let url = format!("{}/mcp", gw.base);
            let before = collector.spans().len();
            let single = mcp_calls(&url, true, "echo", 1, args.seconds).await?;
            let loaded = mcp_calls(&url, true, "echo", args.concurrency, args.seconds).await?;
            // Stopped with SIGTERM, the gateway exports its last spans before it exits.
            tokio::task::block_in_place(|| gw.terminate());
            let calls = (single.lat_us.len() + loaded.lat_us.len() + 1 + args.concurrency) as f64;
            let per_call = (collector.spans().len() - before) as f64 / calls;
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
    println!(
        "{}",
        json!({"concurrency": args.concurrency, "seconds": args.seconds, "added_p50_ms": added,
               "throughput_ratio": ratio, "spans_per_call": spans})
    );
    Ok(())
}
