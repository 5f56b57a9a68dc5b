//! tools/call through the gateway vs directly against the same upstream, side by side in one
//! run, on loopback only: for a `read_only` tool (`echo`) and a `write` tool (`count_write`),
//! p50/p99 latency at concurrency 1 and throughput at concurrency `--concurrency`, by a
//! 2026-07-28 client and by a 2025-11-25 (legacy session) client; both read each response to
//! its end on kept-alive connections, so a stall on those (Nagle against delayed ACKs, ~40 ms)
//! shows as a p99 far above p50.
//!
//! `switchyard-mcp-bench [--seconds 5] [--concurrency 16] [--store-url postgres://…]`
//!
//! Starts the fixture upstream (`switchyard-mcp-fixture --listen 127.0.0.1:0`) and a gateway
//! (`$SWITCHYARD_BIN`, else next to this binary; SQLite in a temp dir unless `--store-url`),
//! both from the same target directory as this binary: build all three in release for numbers
//! that mean something. Prints a table and one JSON line.

use serde_json::json;
use switchyard_tests::bench::{Args, mcp_calls as drive};
use switchyard_tests::gateway::{Gateway, Options};
use switchyard_tests::mcp::{Fixture, UpstreamSpec, write_config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    let dir = tempfile::tempdir()?;
    let fixture = Fixture::start(&[]);
    let mut upstream = UpstreamSpec::http("fx", &fixture.url);
    upstream.prefix = Some(String::new());
    let config = write_config(dir.path(), &[upstream], "");
    let gw = Gateway::start(Options {
        data_dir: dir.path().to_path_buf(),
        config: Some(config),
        store_url: args.store_url.clone(),
        env: vec![("RUST_LOG".into(), "warn".into())],
        listen: None,
        wrapper: Vec::new(),
    });
    let via = format!("{}/mcp", gw.base);
    let store = args.store_url.as_deref().map_or("sqlite", |_| "postgres");
    println!(
        "tools/call, {} s per cell, store {store}; direct = fixture upstream, gateway = through /mcp",
        args.seconds
    );
    println!(
        "{:<8} {:<12} {:<8} {:>9} {:>9} {:>11} {:>9} {:>9} {:>11}",
        "era", "tool", "target", "p50 ms", "p99 ms", "c=1 /s", "", "", ""
    );
    let mut report = Vec::new();
    for (era, modern) in [("modern", true), ("legacy", false)] {
        for tool in ["echo", "count_write"] {
            let mut cells = Vec::new();
            for (target, url) in [("direct", fixture.url.as_str()), ("gateway", via.as_str())] {
                let single = drive(url, modern, tool, 1, args.seconds).await?;
                let loaded = drive(url, modern, tool, args.concurrency, args.seconds).await?;
                println!(
                    "{era:<8} {tool:<12} {target:<8} {:>9.3} {:>9.3} {:>11.0}   c={} {:>9.0}/s",
                    single.pct(0.5),
                    single.pct(0.99),
                    single.rate,
                    args.concurrency,
                    loaded.rate
                );
                cells.push((target, single, loaded));
            }
            let (d, g) = (&cells[0], &cells[1]);
            let added_p50 = g.1.pct(0.5) - d.1.pct(0.5);
            let ratio = g.2.rate / d.2.rate;
            println!(
                "{era:<8} {tool:<12} gateway adds {added_p50:.3} ms at p50; throughput ratio gateway/direct at c={}: {ratio:.2}",
                args.concurrency
            );
            report.push(json!({
            "era": era,
            "tool": tool,
            "direct": {"p50_ms": d.1.pct(0.5), "p99_ms": d.1.pct(0.99), "rate_c1": d.1.rate, "rate_loaded": d.2.rate},
            "gateway": {"p50_ms": g.1.pct(0.5), "p99_ms": g.1.pct(0.99), "rate_c1": g.1.rate, "rate_loaded": g.2.rate},
            "added_p50_ms": added_p50,
            "throughput_ratio": ratio,
        }));
        }
    }
    println!(
        "{}",
        json!({"store": store, "concurrency": args.concurrency, "seconds": args.seconds, "results": report})
    );
    Ok(())
}
