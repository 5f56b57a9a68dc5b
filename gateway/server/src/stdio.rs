//! `switchyard stdio -- <command> [args…]`: the gateway in front of one local MCP server, for a
//! desktop client or an IDE that launches it instead of the server. It speaks MCP on its own
//! stdin and stdout, spawns the server as its child (as a stdio upstream: nothing of the
//! gateway's environment but the variables it is told to pass), and serves the client through
//! the same face as `/mcp`: every `tools/call` a durable invocation in an embedded store, decided
//! by the policy, each tool pinned on first sight. A held call blocks until a person decides it
//! from another terminal (the command is printed on stderr), or until it expires.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::Digest as _;
use switchyard_contract::{EffectClass, Invocations, ListQuery, Principal, StateName, TenantId};
use switchyard_mcp::config::{McpUpstreamConfig, UpstreamKind};

use crate::app::App;
use crate::config::Config;

/// The upstream's name, for policy rules (`upstream = "local"`) and the CLI.
pub const UPSTREAM: &str = "local";
/// Who calls: the person at the desktop client (tenant `default`, so the CLI finds the calls).
const SUBJECT: &str = "stdio";

/// Where a launch keeps what it must find again: `$XDG_DATA_HOME/switchyard/<kind>/<digest of
/// what it was launched for>` (`~/.local/share` without it). For `stdio`, `key` is the command,
/// so a second launch of the same server finds its history, pins and grants; for `connect`, the
/// URL, so a second launch finds its tokens.
pub fn data_dir(kind: &str, key: &[String]) -> anyhow::Result<PathBuf> {
    let base = match (std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME")) {
        (Some(d), _) if !d.is_empty() => PathBuf::from(d),
        (_, Some(h)) if !h.is_empty() => Path::new(&h).join(".local/share"),
        _ => anyhow::bail!("neither XDG_DATA_HOME nor HOME is set: give the data directory with --data-dir DIR"),
    };
    let digest = sha2::Sha256::digest(key.join("\0").as_bytes());
    Ok(base.join("switchyard").join(kind).join(hex::encode(&digest[..8])))
}

/// The child as a stdio upstream: one process, as the client would have launched (its state
/// and its questions stay those of one session); no prefix (the client sees the server's own
/// names); every tool a `write` unless named in `read_only`.
pub fn upstream(command: Vec<String>, read_only: &[String], inherit_env: Vec<String>) -> McpUpstreamConfig {
    McpUpstreamConfig {
        name: UPSTREAM.into(),
        kind: UpstreamKind::Mcp,
        agent: None,
        url: None,
        command,
        env: BTreeMap::new(),
        inherit_env,
        prefix: Some(String::new()),
        operations: read_only.iter().map(|t| (t.clone(), EffectClass::ReadOnly)).collect(),
        tasks: BTreeMap::new(),
        oauth: None,
        max_sessions: Some(1),
    }
}

/// Serves the client on stdin and stdout until it closes them, then stops as `serve` does.
pub async fn serve(cfg: Config, config_file: Option<&Path>) -> anyhow::Result<()> {
    let app = App::build(&cfg).await?;
    let background = app.start_background(&cfg).await?;
    if !app.mcp.discover().await.is_empty() {
        tracing::warn!(command = ?command(&cfg), "the server did not answer yet; it is started again on the next call");
    }
    let face = app.mcp_face(&cfg)?;
    let caller = Principal::new(TenantId::new("default")?, SUBJECT);
    let holds = tokio::spawn(announce_holds(app.engine.clone(), caller.clone(), approve_hint(&cfg, config_file)));
    if let Err(e) = switchyard_mcp::stdio::serve(face, caller).await {
        tracing::warn!(error = %e, "the client did not open an MCP session");
    }
    holds.abort();
    app.a2a.close();
    let engine = app.engine.shutdown(Duration::from_millis(cfg.server.shutdown_grace_ms)).await;
    app.finish(&cfg, background).await;
    engine?;
    Ok(())
}

fn command(cfg: &Config) -> Vec<String> {
    cfg.mcp.upstreams.iter().find(|u| u.name == UPSTREAM).map(|u| u.command.clone()).unwrap_or_default()
}

/// The command, to paste into another terminal, that finds this wrapper's store.
fn approve_hint(cfg: &Config, config_file: Option<&Path>) -> String {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let config = config_file.map(|f| format!(" --config {}", quote(f))).unwrap_or_default();
    format!("SWITCHYARD__SERVER__DATA_DIR={} switchyard{config} approvals", quote(&cfg.server.data_dir))
}

/// Prints each call the policy holds, once, with the commands that decide it.
async fn announce_holds(engine: switchyard_contract::Engine, caller: Principal, hint: String) {
    let mut told = std::collections::HashSet::new();
    loop {
        let query = ListQuery { state: Some(StateName::AwaitingApproval), limit: Some(50), ..ListQuery::default() };
        if let Ok(page) = engine.list(&caller.tenant, query).await {
            for inv in page.items.into_iter().filter(|i| told.insert(i.id)) {
                let reason = engine.hold_reason(&inv).await.unwrap_or_else(|| "held by the policy".into());
                eprintln!(
                    "switchyard: `{}` waits for approval ({reason}). Decide it from another terminal:\n  \
                     {hint} approve {id}\n  {hint} deny {id}",
                    inv.target.operation,
                    id = inv.id
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
