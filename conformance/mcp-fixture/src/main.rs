//! `switchyard-mcp-fixture`: a small dual-era MCP server used as a test backend.
//!
//! It serves two audiences:
//!
//! 1. **The official conformance suite** (`@modelcontextprotocol/conformance`): every tool,
//!    resource and prompt the scored server scenarios of `--requirements 2026-07-28` and
//!    `--requirements 2025-11-25` call (`test_*` names, `test://…` resources), plus completion,
//!    `logging/setLevel`, legacy `resources/(un)subscribe`, modern `subscriptions/listen`, caching
//!    hints and the SEP-2322 MRTR (`input_required`) tools. See [`catalog`] and [`fixture`].
//! 2. **Switchyard's own tests**, through a few extra tools (see [`extra`]):
//!    - `echo {text, delay_ms?}` → text `text`, structuredContent `{"text": text}`; the delay
//!      honours cancellation.
//!    - `count_write {key, delay_ms?}` → first appends `<key>\n` to `$FIXTURE_CALL_LOG` (if set;
//!      append + flush + fsync), then sleeps, then returns `wrote <key>`. Counts physical calls.
//!    - `slow {steps, step_ms}` → one progress notification per step (when the request carries a
//!      progressToken), stops when cancelled, returns `done <steps>`.
//!    - `drift_tool {a}` → input schema chosen by `$FIXTURE_SCHEMA_VARIANT` (`1`/unset: `{a}`;
//!      `2`: `{a, b:integer}` with both required), description by `$FIXTURE_DESCRIPTION_VARIANT`
//!      (`2`: a poisoned one); returns `drift ok`.
//!    - `ask_name {}` → elicits a `name` (MRTR `input_required` on 2026-07-28, a server→client
//!      `elicitation/create` in a legacy session) and returns `hello <name>`.
//!
//! Modes:
//! - `switchyard-mcp-fixture --stdio`: MCP over stdin/stdout (logs go to stderr).
//! - `switchyard-mcp-fixture --listen 127.0.0.1:0`: Streamable HTTP at `/mcp`, both eras on one
//!   URL (2026-07-28 stateless requests, 2025-11-25 `initialize` + `Mcp-Session-Id` sessions).
//!   When ready it prints exactly one line `listening http://IP:PORT/mcp` on stdout.
//!   `GET /connections` answers how many TCP connections it has accepted.
//!
//! Environment: `FIXTURE_CALL_LOG`, `FIXTURE_SCHEMA_VARIANT` (above), `FIXTURE_ALLOWED_HOSTS`
//! (comma-separated `Host` values accepted besides the loopback names), `FIXTURE_BROKEN` (set: a
//! deliberately broken variant whose `test_simple_text` answers an image instead of text, so the scored
//! `tools-call-simple-text` scenario fails; for the tests of `switchyard conformance`),
//! `FIXTURE_SKILLS_DIR` (a directory of skills, SEP-2640: declared, listed, served; read again
//! on every skills request), `FIXTURE_REQUEST_STATE_KEY` (≥ 32 bytes; HMAC key for MRTR `requestState`, so several fixture
//! processes can share state; a built-in test key is used otherwise), `FIXTURE_HIDE_HEADERS_WHILE`
//! (a file: while it exists, tools/list leaves `test_x_mcp_header`'s `x-mcp-header` annotation out
//! while calls are still checked against it), `RUST_LOG` (stderr logs).

mod catalog;
mod extra;
mod fixture;
mod mrtr;

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, bail};
use axum::serve::ListenerExt as _;
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::fixture::Fixture;

const USAGE: &str = "usage: switchyard-mcp-fixture (--stdio | --listen IP:PORT)";

#[derive(Debug, PartialEq, Eq)]
enum Mode {
    Stdio,
    Listen(SocketAddr),
}

fn parse_args(args: &[String]) -> anyhow::Result<Mode> {
    match args {
        [flag] if flag == "--stdio" => Ok(Mode::Stdio),
        [flag, addr] if flag == "--listen" => {
            Ok(Mode::Listen(addr.parse().with_context(|| format!("invalid --listen address {addr:?}"))?))
        }
        _ => bail!("{USAGE}"),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();

    let args: Vec<String> = std::env::args().skip(1).collect();
    let fixture = Fixture::from_env()?;
    match parse_args(&args)? {
        Mode::Stdio => run_stdio(fixture).await,
        Mode::Listen(addr) => run_http(fixture, addr).await,
    }
}

async fn run_stdio(fixture: Fixture) -> anyhow::Result<()> {
    let service = fixture.serve((tokio::io::stdin(), tokio::io::stdout())).await?;
    service.waiting().await?;
    Ok(())
}

async fn run_http(fixture: Fixture, addr: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("bind {addr}"))?;
    let local = listener.local_addr()?;

    // Defaults: legacy sessions on, loopback-only Host allow-list (dns-rebinding-protection).
    // The factory runs once per stateless request and once per legacy session; all clones share
    // the process-wide state (listen subscriptions, request-state key); log level and legacy
    // resource subscriptions are per session.
    let mut config = StreamableHttpServerConfig::default();
    if let Ok(more) = std::env::var("FIXTURE_ALLOWED_HOSTS") {
        let extra = more.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_string);
        let hosts: Vec<String> = config.allowed_hosts.iter().cloned().chain(extra).collect();
        config = config.with_allowed_hosts(hosts);
    }
    let service =
        StreamableHttpService::new(move || Ok(fixture.for_session()), LocalSessionManager::default().into(), config);
    // `GET /connections`: how many TCP connections the fixture has accepted (a client that keeps
    // its connections alive opens few).
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .route("/connections", axum::routing::get(move || async move { count.load(Ordering::Relaxed).to_string() }));
    // Responses go out as they are written: without TCP_NODELAY a kept-alive client calling the
    // fixture directly stalls on delayed ACKs (tens of ms), and a direct baseline means nothing.
    let listener = listener.tap_io(move |tcp| {
        accepted.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://{local}/mcp")?;
    stdout.flush()?;
    drop(stdout);
    tracing::info!(%local, "mcp fixture listening");

    axum::serve(listener, router).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_modes() {
        assert!(matches!(parse_args(&args(&["--stdio"])), Ok(Mode::Stdio)));
        let want: Result<SocketAddr, _> = "127.0.0.1:0".parse();
        assert_eq!(parse_args(&args(&["--listen", "127.0.0.1:0"])).ok(), want.ok().map(Mode::Listen));
        assert!(parse_args(&args(&[])).is_err());
        assert!(parse_args(&args(&["--listen"])).is_err());
        assert!(parse_args(&args(&["--listen", "nope"])).is_err());
    }
}
