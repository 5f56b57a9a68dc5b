//! A gateway started inside the command, on loopback with a temporary SQLite store, fronting the
//! target as an upstream, so the same suite can run through it.

use std::net::SocketAddr;

use anyhow::Context as _;

use crate::config::Config;

/// A running in-process gateway; [`Gateway::stop`] drains it and removes its data.
#[derive(Debug)]
pub struct Gateway {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub config: Config,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _data: tempfile::TempDir,
}

/// A TOML string (quoted and escaped).
pub fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

impl Gateway {
    /// Starts `switchyard serve` in this process with `sections` (TOML) after a `[server]`
    /// table that sets a temporary data directory (SQLite and files) and `127.0.0.1:0`; its log
    /// (`RUST_LOG`, default `warn`) goes to `log`.
    pub async fn start(sections: &str, log: &std::path::Path) -> anyhow::Result<Self> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        // One gateway per command: the first log file set is the one used.
        let _ = tracing_subscriber::fmt()
            .with_writer(std::sync::Mutex::new(file))
            .with_ansi(false)
            .with_env_filter(filter)
            .try_init();
        let data = tempfile::Builder::new().prefix("switchyard-conformance-").tempdir()?;
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = {}\nshutdown_grace_ms = 2000\n\n{sections}",
            quoted(&data.path().to_string_lossy())
        );
        let config = Config::from_text(&text, "the through-gateway configuration", std::iter::empty())
            .with_context(|| format!("the gateway's configuration does not load:\n{text}"))?;
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let task = tokio::spawn(crate::app::serve_announcing(config.clone(), shutdown, Some(ready_tx)));
        match ready_rx.await {
            Ok(addr) => Ok(Self { base: format!("http://{addr}"), config, stop, task, _data: data }),
            Err(_) => match task.await {
                Ok(Err(e)) => Err(e.context("the gateway did not start")),
                Ok(Ok(())) => anyhow::bail!("the gateway stopped before it listened"),
                Err(e) => anyhow::bail!("the gateway did not start: {e}"),
            },
        }
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.task.await.context("the gateway's task")?
    }
}
