//! `switchyard auth login <upstream>`: authorize the gateway at an OAuth-protected upstream MCP
//! server on behalf of a user (authorization code + PKCE). Prints the authorization URL, receives
//! the redirect on `http://127.0.0.1:<redirect_port>/callback`, and stores the tokens (with the
//! refresh token) sealed in the store; running gateways use and refresh them from then on.
//! `switchyard auth logout <upstream>` forgets them.

use std::time::Duration;

use anyhow::Context as _;
use switchyard_mcp::error::OAuthFlowError;
use switchyard_mcp::oauth::{self, Registration};
use switchyard_mcp::vault::VaultStore;
use switchyard_mcp::{OAuthFlow, UpstreamOAuth};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::config::Config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Authorize an `authorization_code` upstream (prints a URL to open in a browser).
    Login {
        upstream: String,
        /// How long to wait for the browser to come back.
        #[arg(long, default_value_t = 300)]
        timeout_s: u64,
    },
    /// Forget an upstream's stored tokens.
    Logout { upstream: String },
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let stores = super::open_store(cfg).await?;
    let sealer = crate::keys::mcp_sealer(cfg)?;
    let (name, timeout_s) = match &cmd {
        Command::Login { upstream, timeout_s } => (upstream.clone(), *timeout_s),
        Command::Logout { upstream } => (upstream.clone(), 0),
    };
    let spec = cfg
        .mcp
        .upstreams
        .iter()
        .find(|u| u.name == name)
        .ok_or_else(|| anyhow::anyhow!("no MCP upstream named `{name}` in the configuration"))?;
    let (Some(url), Some(o)) = (&spec.url, &spec.oauth) else {
        anyhow::bail!("upstream `{name}` is not an HTTP upstream with an [oauth] section");
    };
    anyhow::ensure!(
        o.flow == OAuthFlow::AuthorizationCode,
        "upstream `{name}` uses {:?}, not authorization_code",
        o.flow
    );
    let store = VaultStore::new(&name, stores.vault.clone(), sealer);
    if matches!(cmd, Command::Logout { .. }) {
        store.forget().await.map_err(anyhow::Error::msg)?;
        println!("forgot the tokens of `{name}`");
        return Ok(());
    }
    let challenge = oauth::challenge(url).await;
    let reg = registration(o)?;
    let port = o.redirect_port;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port} for the redirect (oauth.redirect_port)"))?;
    let user_agent = |auth_url: String| async move {
        println!("Open this URL in a browser to authorize switchyard at `{name}`:\n\n  {auth_url}\n");
        println!("Waiting for the redirect on http://127.0.0.1:{port}/callback …");
        tokio::time::timeout(Duration::from_secs(timeout_s), callback(&listener, port))
            .await
            .map_err(|_| OAuthFlowError(format!("no redirect within {timeout_s} s")))?
    };
    oauth::authorization_code(url, challenge.as_deref(), &reg, Some(store), user_agent)
        .await
        .map_err(anyhow::Error::msg)?;
    println!("authorized: tokens for `{}` are stored (encrypted); running gateways use them", spec.name);
    Ok(())
}

fn registration(o: &UpstreamOAuth) -> anyhow::Result<Registration> {
    let secret = o.optional_secret().map_err(anyhow::Error::msg)?;
    Ok(Registration {
        redirect_uri: format!("http://127.0.0.1:{}/callback", o.redirect_port),
        client_name: "switchyard".into(),
        client_metadata_url: None,
        preregistered: (!o.client_id.is_empty()).then(|| (o.client_id.clone(), secret.map(|s| s.0))),
        scopes: o.scopes.clone(),
    })
}

/// Accepts one request on the loopback listener and returns the full redirect URL.
pub(super) async fn callback(listener: &tokio::net::TcpListener, port: u16) -> Result<String, OAuthFlowError> {
    loop {
        let (mut socket, _) = listener.accept().await.map_err(|e| OAuthFlowError(e.to_string()))?;
        let mut buf = vec![0u8; 8192];
        let n = socket.read(&mut buf).await.map_err(|e| OAuthFlowError(e.to_string()))?;
        let head = String::from_utf8_lossy(&buf[..n]).to_string();
        let path = head.lines().next().and_then(|l| l.split(' ').nth(1)).unwrap_or("").to_string();
        if !path.starts_with("/callback") {
            let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").await;
            continue;
        }
        let body = "Switchyard is authorized. You can close this tab.";
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        return Ok(format!("http://127.0.0.1:{port}{path}"));
    }
}
