//! What `switchyard stdio` adds in front of a local MCP server: the MCP fixture over stdio,
//! launched directly and behind the wrapper, measured side by side in one run (alternating
//! rounds, one client, the official Rust SDK):
//! - start-up: from launching the command to the answered `initialize`;
//! - `tools/call` of a read (`echo`, marked `--read-only`): a durable read;
//! - `tools/call` of a write (`count_write`): a durable write, its record committed (SQLite,
//!   the embedded store) before the call is sent;
//! - the wrapper's resident memory after the run (its peak too).
//!
//! `switchyard-stdio-bench [--seconds 5]` (per cell and round; 3 rounds). The gateway is
//! `$SWITCHYARD_BIN`, else next to this binary; the fixture next to it too: build both in
//! release.

use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::{RunningService, ServiceExt as _};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use switchyard_tests::bench::{Args, Run};

const ROUNDS: usize = 3;

type Client = RunningService<RoleClient, ()>;

/// Launches `program args` and opens a session: the client and how long that took.
async fn launch(program: &std::path::Path, args: &[String]) -> anyhow::Result<(Client, Duration, Option<u32>)> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env("RUST_LOG", "warn");
    let t = Instant::now();
    let transport = TokioChildProcess::new(command)?;
    let pid = transport.id();
    let client = ().serve(transport).await?;
    Ok((client, t.elapsed(), pid))
}

async fn call(client: &Client, tool: &str, args: serde_json::Value) -> anyhow::Result<()> {
    let result = client.peer().call_tool(switchyard_tests::mcp::call(tool, args)).await?;
    anyhow::ensure!(result.is_error != Some(true), "{tool} answered an error: {result:?}");
    Ok(())
}

/// `seconds` of `tool` calls one after another: their latencies.
async fn measure(client: &Client, tool: &str, seconds: u64) -> anyhow::Result<Vec<u64>> {
    let args = |n: usize| match tool {
        "echo" => json!({"text": format!("bench {n}")}),
        _ => json!({"key": format!("bench {n}")}),
    };
    call(client, tool, args(0)).await?; // warm-up
    let (deadline, mut lat) = (Instant::now() + Duration::from_secs(seconds), Vec::new());
    while Instant::now() < deadline {
        let t = Instant::now();
        call(client, tool, args(lat.len() + 1)).await?;
        lat.push(t.elapsed().as_micros() as u64);
    }
    Ok(lat)
}

/// `VmRSS` and `VmHWM` of `pid`, in MB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
    };
    (kb("VmRSS:").unwrap_or(0.0) / 1024.0, kb("VmHWM:").unwrap_or(0.0) / 1024.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    let dir = tempfile::tempdir()?;
    let fixture = switchyard_tests::mcp::fixture_binary();
    let gateway = switchyard_tests::gateway::binary();
    let direct_args = vec!["--stdio".to_string()];
    let mut wrapped_args: Vec<String> =
        ["stdio", "--data-dir", &dir.path().join("d").display().to_string(), "--read-only", "echo", "--"]
            .map(str::to_string)
            .to_vec();
    wrapped_args.push(fixture.display().to_string());
    wrapped_args.push("--stdio".into());
    let sides = [(fixture.as_path(), &direct_args), (gateway.as_path(), &wrapped_args)];

    let mut starts: [Vec<f64>; 2] = Default::default();
    let mut cells: [[Vec<u64>; 2]; 2] = Default::default(); // [read|write][direct|wrapped]
    let mut rss = (0.0, 0.0);
    for _ in 0..ROUNDS {
        for (side, (program, argv)) in sides.iter().enumerate() {
            let (client, took, pid) = launch(program, argv).await?;
            starts[side].push(took.as_secs_f64() * 1000.0);
            cells[0][side].extend(measure(&client, "echo", args.seconds).await?);
            cells[1][side].extend(measure(&client, "count_write", args.seconds).await?);
            if side == 1 {
                rss = pid.map(memory).unwrap_or_default();
            }
            client.cancel().await?;
        }
    }
    println!(
        "switchyard stdio in front of the MCP fixture (stdio), one client, {} s per cell × {ROUNDS} rounds",
        args.seconds
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "", "direct p50", "wrapped p50", "direct p99", "wrapped p99", "adds p50"
    );
    let mut report = Vec::new();
    let [d, w] = [median(starts[0].clone()), median(starts[1].clone())];
    println!("{:<28} {d:>10.3} {w:>10.3} {:>10} {:>10} {:>10.3}", "start-up to initialize (ms)", "", "", w - d);
    report.push(json!({"cell": "start-up", "direct_ms": d, "wrapped_ms": w, "adds_ms": w - d}));
    for (row, name) in [(0, "tools/call read (echo)"), (1, "tools/call write (count_write)")] {
        let [d, w] = [&cells[row][0], &cells[row][1]].map(|lat| Run::new(lat.clone(), Duration::from_secs(1)));
        let added = w.pct(0.5) - d.pct(0.5);
        println!(
            "{name:<28} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {added:>10.3}",
            d.pct(0.5),
            w.pct(0.5),
            d.pct(0.99),
            w.pct(0.99)
        );
        report.push(json!({"cell": name, "direct_p50_ms": d.pct(0.5), "wrapped_p50_ms": w.pct(0.5),
            "direct_p99_ms": d.pct(0.99), "wrapped_p99_ms": w.pct(0.99), "adds_p50_ms": added}));
    }
    println!("wrapper resident memory after the run: {:.1} MB (peak {:.1} MB)", rss.0, rss.1);
    println!(
        "{}",
        json!({"seconds": args.seconds, "rounds": ROUNDS, "results": report, "rss_mb": rss.0, "peak_rss_mb": rss.1})
    );
    Ok(())
}
