//! The TLS hop's cost on loopback: the same gateway binary serving plain HTTP and serving TLS
//! (`[server] tls`, a certificate from a throw-away CA made with `openssl`), measured side by
//! side in one run, alternating rounds, at one client:
//! - an admin API call to the built-in demo's `echo` (a durable read, answered once settled) on
//!   a kept-alive connection: what TLS adds to a call;
//! - `GET /healthz` on a new connection each time: what a connection's setup (TCP, and the TLS
//!   handshake) adds.
//!
//! `switchyard-tls-bench [--seconds 5]` (per cell and round; 3 rounds). The gateway is
//! `$SWITCHYARD_BIN`, else next to this binary: build both in release.

use std::time::{Duration, Instant};

use serde_json::json;
use switchyard_tests::bench::{Args, Run};
use switchyard_tests::gateway::{Gateway, Options, TOKEN};
use switchyard_tests::tls::{certificate_authority, client_trusting, server_certificate, server_section, trusting};

const ROUNDS: usize = 3;

/// `seconds` of `call`s one after another: their latencies.
async fn measure<F, Fut>(seconds: u64, mut call: F) -> anyhow::Result<Vec<u64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    call().await?; // warm-up
    let (deadline, mut lat) = (Instant::now() + Duration::from_secs(seconds), Vec::new());
    while Instant::now() < deadline {
        let t = Instant::now();
        call().await?;
        lat.push(t.elapsed().as_micros() as u64);
    }
    Ok(lat)
}

/// A keyless call: a new invocation each time.
async fn echo(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let resp = http
        .post(format!("{base}/admin/v1/invocations?wait_ms=5000"))
        .bearer_auth(TOKEN)
        .json(&json!({"upstream": "demo", "operation": "echo", "request": {"hello": "tls"}}))
        .send()
        .await?;
    anyhow::ensure!(resp.status().as_u16() == 201, "echo answered {}", resp.status());
    let body: serde_json::Value = resp.json().await?;
    anyhow::ensure!(body["state"]["state"] == "succeeded", "echo did not succeed: {body}");
    Ok(())
}

async fn health(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let resp = http.get(format!("{base}/healthz")).send().await?;
    anyhow::ensure!(resp.status().is_success(), "healthz answered {}", resp.status());
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    let dir = tempfile::tempdir()?;
    let ca = certificate_authority(dir.path());
    let (cert, key) = server_certificate(dir.path(), "server", 1);
    let config = dir.path().join("tls.toml");
    std::fs::write(&config, server_section(&cert, &key))?;
    let quiet = vec![("RUST_LOG".to_string(), "warn".to_string())];
    let plain =
        Gateway::start(Options { data_dir: dir.path().join("plain"), env: quiet.clone(), ..Options::default() });
    let tls = Gateway::start(Options {
        data_dir: dir.path().join("tls"),
        config: Some(config),
        env: quiet,
        ..Options::default()
    });
    let kept = [reqwest::Client::new(), client_trusting(&ca)];
    // A new connection for every request: no idle connection is kept.
    let fresh = || reqwest::Client::builder().pool_max_idle_per_host(0);
    let new_conn = [fresh().build()?, trusting(&ca, fresh())];
    let bases = [plain.base.clone(), tls.base.clone()];
    let mut cells: [[Vec<u64>; 2]; 2] = Default::default(); // [call|connect][plain|tls]
    for _ in 0..ROUNDS {
        for side in 0..2 {
            let (http, base) = (&kept[side], &bases[side]);
            cells[0][side].extend(measure(args.seconds, || echo(http, base)).await?);
        }
        for side in 0..2 {
            let (http, base) = (&new_conn[side], &bases[side]);
            cells[1][side].extend(measure(args.seconds, || health(http, base)).await?);
        }
    }
    println!("TLS at the edge, one client, {} s per cell × {ROUNDS} rounds, alternating", args.seconds);
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>10} {:>12}",
        "", "plain p50", "TLS p50", "plain p99", "TLS p99", "TLS adds p50"
    );
    let mut report = Vec::new();
    for (row, name) in [(0, "admin API echo, kept-alive"), (1, "GET /healthz, new connection")] {
        let [p, t] = [&cells[row][0], &cells[row][1]].map(|lat| Run::new(lat.clone(), Duration::from_secs(1)));
        let added = t.pct(0.5) - p.pct(0.5);
        println!(
            "{name:<34} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>12.3}",
            p.pct(0.5),
            t.pct(0.5),
            p.pct(0.99),
            t.pct(0.99),
            added
        );
        report.push(json!({"cell": name, "plain_p50_ms": p.pct(0.5), "tls_p50_ms": t.pct(0.5),
            "plain_p99_ms": p.pct(0.99), "tls_p99_ms": t.pct(0.99), "tls_adds_p50_ms": added}));
    }
    println!("{}", json!({"seconds": args.seconds, "rounds": ROUNDS, "results": report}));
    Ok(())
}
