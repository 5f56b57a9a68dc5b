//! `switchyard connect <url> [--token T | --login]`: for a desktop client that launches only
//! stdio servers, a stdio ↔ Streamable HTTP relay to a remote Switchyard gateway (or any MCP
//! server; see [`switchyard_mcp::connect`]). With `--login`, when the remote asks for
//! authorization and no tokens are stored yet, the OAuth authorization code flow (PKCE): the
//! authorization URL is printed on stderr (and opened in a browser where one can be), the
//! browser comes back to a loopback listener, and the tokens (with the refresh token) are kept
//! sealed in the data directory, so later launches use them without asking.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use switchyard_mcp::connect::Credentials;
use switchyard_mcp::error::OAuthFlowError;
use switchyard_mcp::oauth::{self, Registration};
use switchyard_mcp::vault::VaultStore;

use crate::config::Config;

/// The environment variable holding the secret of a confidential `--client-id`.
const CLIENT_SECRET_ENV: &str = "SWITCHYARD_CONNECT_CLIENT_SECRET";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote MCP endpoint, e.g. `https://gateway.example.com/mcp`.
    url: String,
    /// A bearer token for the remote (prefer the environment variable: a command line is
    /// visible to other users of the machine).
    #[arg(long, env = "SWITCHYARD_CONNECT_TOKEN", hide_env_values = true, conflicts_with = "login")]
    token: Option<String>,
    /// Log in (authorization code flow) if the remote asks for authorization and no tokens are
    /// stored yet.
    #[arg(long)]
    login: bool,
    /// Forget the stored tokens and exit.
    #[arg(long, conflicts_with_all = ["login", "token"])]
    logout: bool,
    /// A client id registered at the authorization server (default: the server's dynamic
    /// registration). A confidential client's secret goes in `SWITCHYARD_CONNECT_CLIENT_SECRET`.
    #[arg(long)]
    client_id: Option<String>,
    /// A scope to ask for (repeatable; default: what the remote's challenge names).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// The loopback port the browser comes back to (default: any free port).
    #[arg(long, default_value_t = 0)]
    redirect_port: u16,
    /// How long the login waits for the browser to come back.
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
    /// Where the tokens are kept (default: `$XDG_DATA_HOME/switchyard/connect/<digest of the
    /// URL>`).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

pub async fn run(args: Args, mut cfg: Config) -> anyhow::Result<()> {
    cfg.server.data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => crate::stdio::data_dir("connect", std::slice::from_ref(&args.url))?,
    };
    // stdout carries the protocol; the log goes to stderr, warnings only unless asked for more.
    if cfg.log.filter == crate::config::LogConfig::default().filter {
        cfg.log.filter = "warn".into();
    }
    let traces = super::serve::init_tracing(&cfg)?;
    let credentials = match args.token.clone() {
        Some(token) => Credentials::Bearer(token),
        None => match stored(&args, &cfg).await? {
            Some(c) => c,
            None => return Ok(()), // --logout
        },
    };
    let served = switchyard_mcp::connect::serve(args.url.clone(), credentials).await.map_err(anyhow::Error::msg);
    if let Some(provider) = traces {
        let _ = tokio::task::spawn_blocking(move || crate::telemetry::stop(&provider)).await;
    }
    served
}

/// The stored authorization, a new one with `--login` when the remote asks for it, or none.
/// `None` after `--logout`.
async fn stored(args: &Args, cfg: &Config) -> anyhow::Result<Option<Credentials>> {
    let stores = super::open_store(cfg).await?;
    let sealer = crate::keys::mcp_sealer(cfg)?;
    let store = VaultStore::new("connect", stores.vault.clone(), sealer);
    if args.logout {
        store.forget().await.map_err(anyhow::Error::msg)?;
        eprintln!("switchyard: forgot the tokens for {}", args.url);
        return Ok(None);
    }
    if store.holds_credentials().await {
        match oauth::stored_authorization(&args.url, store.clone()).await {
            Ok(Some(auth)) => return Ok(Some(Credentials::OAuth(auth))),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "the stored authorization cannot be used"),
        }
    }
    if !args.login {
        return Ok(Some(Credentials::None));
    }
    let Some(challenge) = oauth::challenge(&args.url).await else {
        eprintln!("switchyard: {} does not ask for authorization; connecting without it", args.url);
        return Ok(Some(Credentials::None));
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.redirect_port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{} for the browser's redirect", args.redirect_port))?;
    let port = listener.local_addr()?.port();
    let secret = std::env::var(CLIENT_SECRET_ENV).ok().filter(|s| !s.is_empty());
    let reg = Registration {
        redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        client_name: "switchyard connect".into(),
        client_metadata_url: None,
        preregistered: args.client_id.clone().map(|id| (id, secret)),
        scopes: args.scopes.clone(),
    };
    let timeout_s = args.timeout_s;
    let user_agent = |auth_url: String| async move {
        eprintln!("switchyard: open this URL in a browser to authorize switchyard at {}:\n\n  {auth_url}\n", args.url);
        open_browser(&auth_url);
        tokio::time::timeout(Duration::from_secs(timeout_s), super::auth::callback(&listener, port))
            .await
            .map_err(|_| OAuthFlowError(format!("the browser did not come back within {timeout_s} s")))?
    };
    let auth = oauth::authorization_code(&args.url, Some(&challenge), &reg, Some(store), user_agent)
        .await
        .map_err(anyhow::Error::msg)?;
    eprintln!("switchyard: authorized; the tokens are kept encrypted in {}", cfg.server.data_dir.display());
    Ok(Some(Credentials::OAuth(auth)))
}

/// Opens `url` in the desktop's browser where there is one (macOS, or a Linux desktop session);
/// the URL is printed either way.
fn open_browser(url: &str) {
    let desktop = std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if desktop {
        "xdg-open"
    } else {
        return;
    };
    let quiet = std::process::Stdio::null;
    let _ = std::process::Command::new(opener).arg(url).stdin(quiet()).stdout(quiet()).stderr(quiet()).spawn();
}
