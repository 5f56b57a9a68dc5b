//! End-to-end tests of the real binary: the no-configuration quickstart, the admin API over
//! HTTP (idempotency, SSE watch), and graceful shutdown.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use switchyard_tests::gateway::{Gateway, Options, binary, call_log};

/// `switchyard serve` with no configuration, in an empty directory: ready in under a second,
/// SQLite and a generated admin token under `./.switchyard`, and it says where.
#[tokio::test]
async fn quickstart_without_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let mut child = Command::new(binary())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env_remove("SWITCHYARD_CONFIG")
        .env_remove("SWITCHYARD_STORE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let ready = lines.next().unwrap_or_default();
    let elapsed = t0.elapsed();
    let banner: Vec<String> = lines.by_ref().take(3).collect();
    let base = ready.strip_prefix("switchyard ready: listening on ").unwrap_or_else(|| panic!("{ready}")).to_string();
    assert!(elapsed < Duration::from_secs(1), "ready after {elapsed:?}");
    eprintln!("quickstart ready in {elapsed:?}");
    let banner = banner.join("\n");
    assert!(banner.contains("sqlite://.switchyard/switchyard.db"), "{banner}");
    assert!(banner.contains(".switchyard/admin-token (generated)"), "{banner}");
    let token = std::fs::read_to_string(dir.path().join(".switchyard/admin-token")).unwrap_or_default();
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{base}/admin/v1/invocations?wait_ms=5000"))
        .bearer_auth(token.trim())
        .json(&json!({"upstream": "demo", "operation": "echo", "request": {"hello": "world"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let v: Value = resp.json().await.unwrap_or_default();
    assert_eq!(v["state"]["result"]["echo"]["hello"], "world", "{v}");
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful shutdown exits 0, got {status}");
}

/// The events endpoint streams every event as SSE, resumes after `Last-Event-ID`, and ends
/// after the terminal event.
#[tokio::test]
async fn sse_watch_streams_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), ..Options::default() });
    let (status, inv) =
        gw.submit("t", "echo", json!({"fail_first": 1, "delay_ms": 300}), Some("sse-1"), 0).await.unwrap();
    assert_eq!(status, 201);
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    let sse = |last: Option<&str>| {
        let mut req = gw
            .http
            .get(format!("{}/admin/v1/invocations/{id}/events", gw.base))
            .bearer_auth(switchyard_tests::gateway::TOKEN)
            .header("x-switchyard-tenant", "t")
            .header("accept", "text/event-stream");
        if let Some(l) = last {
            req = req.header("last-event-id", l);
        }
        req.send()
    };
    let resp = sse(None).await.unwrap();
    assert_eq!(resp.headers().get("content-type").and_then(|v| v.to_str().ok()), Some("text/event-stream"));
    let body = tokio::time::timeout(Duration::from_secs(10), async {
        let mut text = String::new();
        let mut stream = resp.bytes_stream();
        while let Some(Ok(chunk)) = stream.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    })
    .await
    .unwrap_or_else(|_| panic!("SSE stream did not end after the terminal event"));
    let ids: Vec<u64> = body.lines().filter_map(|l| l.strip_prefix("id: ")).filter_map(|s| s.parse().ok()).collect();
    let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "{body}");
    assert_eq!(names.first(), Some(&"admitted"));
    assert_eq!(names.last(), Some(&"succeeded"));
    assert!(names.contains(&"attempt_failed"), "{names:?}");
    let resumed = sse(Some("2")).await.unwrap().text().await.unwrap_or_default();
    let again: Vec<u64> =
        resumed.lines().filter_map(|l| l.strip_prefix("id: ")).filter_map(|s| s.parse().ok()).collect();
    assert_eq!(again, (3..=ids.len() as u64).collect::<Vec<_>>());
}

/// SIGTERM while a write is in flight: the gateway drains it and exits cleanly; the write
/// completes once.
#[tokio::test]
async fn graceful_shutdown_drains_in_flight_calls() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { data_dir: dir.path().join("d"), ..Options::default() };
    let mut gw = Gateway::start(opts.clone());
    let (_, inv) = gw.submit("t", "count", json!({"delay_ms": 500}), Some("drain"), 0).await.unwrap();
    for _ in 0..100 {
        if !call_log(&opts.data_dir).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gw.terminate(), "exit status 0 after SIGTERM");
    let gw = Gateway::start(opts.clone());
    let (_, now) =
        gw.get("t", &format!("/admin/v1/invocations/{}", inv["id"].as_str().unwrap_or_default())).await.unwrap();
    assert_eq!(now["state"]["state"], "succeeded", "{now}");
    assert_eq!(call_log(&opts.data_dir).len(), 1);
}

/// The CLI: `validate-config` accepts the shipped files and names the bad key in a broken one;
/// `migrate`, `invocations list|show|events` work on the gateway's store.
#[tokio::test]
async fn cli_validates_configuration_and_inspects_the_store() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(binary());
        cmd.args(args).env_remove("SWITCHYARD_CONFIG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let sample = root.join("config/switchyard.toml");
    let (ok, out) = run(&["validate-config", &sample.display().to_string()], &[]);
    assert!(ok && out.contains(": ok"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[engine]\nlease_ttl_ms = 1000\nbackoff_max_ms = 900\n").unwrap();
    let (ok, out) = run(&["validate-config", &bad.display().to_string()], &[]);
    assert!(!ok && out.contains("engine.backoff_max_ms"), "{out}");
    std::fs::write(&bad, "[server]\nlisten = \"nowhere\"\n").unwrap();
    let (ok, out) = run(&["validate-config", &bad.display().to_string()], &[]);
    assert!(!ok && out.contains("listen"), "{out}");

    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), ..Options::default() });
    let (_, inv) = gw.submit("cli", "echo", json!({"n": 1}), Some("cli-1"), 5000).await.unwrap();
    let id = inv["id"].as_str().unwrap_or_default();
    let (ok, out) = gw.cli(&["migrate"]);
    assert!(ok && out.contains("migrations applied"), "{out}");
    let (ok, out) = gw.cli(&["invocations", "list", "--tenant", "cli"]);
    assert!(ok && out.contains(id) && out.contains("succeeded") && out.contains("demo/echo"), "{out}");
    let (ok, out) = gw.cli(&["invocations", "show", id]);
    assert!(ok && out.contains("\"state\": \"succeeded\""), "{out}");
    let (ok, out) = gw.cli(&["invocations", "events", id]);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(ok && out.lines().all(|l| l.starts_with('{')), "{out}");
    let (ok, out) = gw.cli(&["invocations", "show", "inv_00000000000000000000000000000000"]);
    assert!(!ok && out.contains("not found"), "{out}");
    let (ok, out) = gw.cli(&["reconcile", id, "applied"]);
    assert!(!ok && out.contains("only `unknown` invocations can be reconciled"), "{out}");
}

/// Shutdown ends open watches instead of waiting out the grace period: an SSE client on an
/// `unknown` invocation (a stream that would never end by itself) does not hold SIGTERM up.
#[tokio::test]
async fn shutdown_ends_open_watch_streams() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("SWITCHYARD__ENGINE__ATTEMPT_TIMEOUT_MS".to_string(), "200".to_string())];
    let mut gw = Gateway::start(Options { data_dir: dir.path().join("d"), env, ..Options::default() });
    let (_, inv) = gw.submit("t", "count", json!({"delay_ms": 2000}), Some("stuck"), 5000).await.unwrap();
    assert_eq!(inv["state"]["state"], "unknown", "{inv}");
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    let resp = gw
        .http
        .get(format!("{}/admin/v1/invocations/{id}/events", gw.base))
        .bearer_auth(switchyard_tests::gateway::TOKEN)
        .header("x-switchyard-tenant", "t")
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move {
        let mut stream = resp.bytes_stream();
        while let Some(Ok(_)) = stream.next().await {}
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t0 = Instant::now();
    let clean = tokio::task::spawn_blocking(move || gw.terminate()).await.unwrap_or(false);
    assert!(clean, "exit status 0 after SIGTERM");
    assert!(t0.elapsed() < Duration::from_secs(5), "shutdown took {:?} (grace is 10 s)", t0.elapsed());
    tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .unwrap_or_else(|_| panic!("the SSE stream did not end"))
        .ok();
}

/// A restarted gateway is the same worker (its id is kept in the data dir): it takes back the
/// leases it held before a `kill -9` at once, instead of waiting out the 30 s default lease.
#[tokio::test]
async fn a_restart_takes_back_its_own_leases_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { data_dir: dir.path().join("d"), ..Options::default() };
    let paused = Options { env: vec![("SWITCHYARD_FAULT_PAUSE".into(), "before_dispatch".into())], ..opts.clone() };
    let mut gw = Gateway::start(paused);
    let (status, inv) = gw.submit("t", "echo", json!({"n": 1}), Some("lease-back"), 0).await.unwrap();
    assert_eq!(status, 201, "{inv}");
    gw.kill9();
    let gw = Gateway::start(opts);
    let t0 = Instant::now();
    let (_, done) = gw.submit("t", "echo", json!({"n": 1}), Some("lease-back"), 10_000).await.unwrap();
    assert_eq!(done["state"]["state"], "succeeded", "{done}");
    assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}: the old lease was waited out", t0.elapsed());
    assert_eq!(done["lease"]["fence"], 2, "taken over under a new fence: {done}");
}

/// An open stream costs its connection and its watch, not a copy of the gateway's routes: 1,000
/// idle admin event streams grow the gateway's resident set by less than 40 kB each (~20 kB; it
/// was ~67 kB while axum rebuilt the route table for every connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_costs_little_memory() {
    const STREAMS: usize = 1000;
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("SWITCHYARD__ENGINE__ATTEMPT_TIMEOUT_MS".to_string(), "600000".to_string())];
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), env, ..Options::default() });
    let (_, inv) = gw.submit("t", "echo", json!({"delay_ms": 300_000}), None, 0).await.unwrap();
    let id = inv["id"].as_str().unwrap_or_default().to_string();
    let rss_kb = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", gw.pid())).unwrap_or_default();
        let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap_or_default();
        line.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no VmRSS: {status}"))
    };
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let open = |n: usize| {
        let (client, url) = (client.clone(), format!("{}/admin/v1/invocations/{id}/events", gw.base));
        futures::stream::iter(0..n)
            .map(move |_| {
                let req = client
                    .get(&url)
                    .bearer_auth(switchyard_tests::gateway::TOKEN)
                    .header("x-switchyard-tenant", "t")
                    .header("accept", "text/event-stream");
                async move {
                    let resp = req.send().await.unwrap();
                    assert_eq!(resp.status(), 200);
                    let mut body = resp.bytes_stream();
                    body.next().await.unwrap_or_else(|| panic!("ended")).unwrap();
                    body
                }
            })
            .buffer_unordered(100)
            .collect::<Vec<_>>()
    };
    // A first batch warms the allocator and the runtime up; the second is measured.
    let warm = open(200).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kb();
    let streams = open(STREAMS).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let per_stream = rss_kb().saturating_sub(before) as f64 / STREAMS as f64;
    assert!(per_stream < 40.0, "{per_stream:.1} kB per open stream");
    drop((warm, streams));
}

/// What a newcomer meets first answers with one line that says what to do: a port in use, an
/// address the machine does not have, a PostgreSQL that does not answer, a misspelt key, and a
/// stdio MCP server that is not installed.
#[tokio::test]
async fn first_errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let fails = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(binary())
            .args(args)
            .current_dir(dir.path())
            .env_remove("SWITCHYARD_CONFIG")
            .env_remove("SWITCHYARD_STORE_URL")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert!(err.starts_with("error: "), "{err}");
        err
    };
    let gw = Gateway::start(Options { data_dir: dir.path().join("d"), ..Options::default() });
    let taken = gw.base.trim_start_matches("http://").to_string();
    let err = fails(&["serve", "--listen", &taken, "--data-dir", "other"], &[]);
    assert!(err.contains("another process listens there") && err.contains("--listen ADDR"), "{err}");
    let err = fails(&["serve", "--listen", "192.0.2.1:8787", "--data-dir", "other"], &[]);
    assert!(err.contains("this machine has no such address"), "{err}");
    let err = fails(
        &["serve", "--store", "postgres://nobody@127.0.0.1:1/switchyard", "--data-dir", "other"],
        &[("SWITCHYARD__STORE__ACQUIRE_TIMEOUT_MS", "300")],
    );
    assert!(err.contains("is PostgreSQL running") && err.contains("SWITCHYARD__STORE__URL"), "{err}");
    std::fs::write(dir.path().join("bad.toml"), "[server]\nlisen = \"127.0.0.1:8787\"\n").unwrap();
    let err = fails(&["--config", "bad.toml", "serve"], &[]);
    assert!(err.contains("unknown field `lisen`") && err.contains("`listen`"), "{err}");

    let config = dir.path().join("stdio.toml");
    std::fs::write(
        &config,
        "[mcp]\nanonymous = true\n[[mcp.upstreams]]\nname = \"local\"\ncommand = [\"no-such-mcp-server\"]\n",
    )
    .unwrap();
    let gw = Gateway::start(Options { data_dir: dir.path().join("s"), config: Some(config), ..Options::default() });
    let log = gw.opts.data_dir.join("gateway.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = String::new();
    while Instant::now() < deadline && !text.contains("no-such-mcp-server") {
        tokio::time::sleep(Duration::from_millis(100)).await;
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    assert!(
        text.contains("cannot start `no-such-mcp-server`") && text.contains("put it on the gateway's PATH"),
        "{text}"
    );
}
