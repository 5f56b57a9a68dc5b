//! `switchyard serve`: run the gateway.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Listen address (overrides server.listen); `127.0.0.1:0` picks a free port.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Data directory (overrides server.data_dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Store URL (overrides store.url).
    #[arg(long, env = "SWITCHYARD_STORE_URL", hide_env_values = true)]
    store: Option<String>,
}

pub async fn run(args: Args, mut cfg: Config) -> anyhow::Result<()> {
    if let Some(l) = args.listen {
        cfg.server.listen = l;
    }
    if let Some(d) = args.data_dir {
        cfg.server.data_dir = d;
    }
    if let Some(s) = args.store {
        cfg.store.url.0 = s;
    }
    cfg.validate()?;
    let traces = init_tracing(&cfg)?;
    let served = crate::app::serve(cfg, crate::app::signal()).await;
    if let Some(provider) = traces {
        // The spans of the last calls are exported before the process ends.
        let _ = tokio::task::spawn_blocking(move || crate::telemetry::stop(&provider)).await;
    }
    served
}

/// Logs to stderr (filtered by `log.filter` or `RUST_LOG`) and, when `[telemetry]` names an
/// endpoint, the invocation spans to OTLP whatever the log filter; returns what to flush at exit.
pub(super) fn init_tracing(cfg: &Config) -> anyhow::Result<Option<opentelemetry_sdk::trace::SdkTracerProvider>> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&cfg.log.filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = if cfg.log.format == "json" { fmt.json().boxed() } else { fmt.boxed() };
    let traces = crate::telemetry::start(&cfg.telemetry)?;
    let (otel, provider) = traces.map(|t| (t.layer, t.provider)).unzip();
    tracing_subscriber::registry().with(fmt.with_filter(filter)).with(otel).init();
    Ok(provider)
}
