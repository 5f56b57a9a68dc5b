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
    init_tracing(&cfg);
    crate::app::serve(cfg, crate::app::signal()).await
}

fn init_tracing(cfg: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&cfg.log.filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if cfg.log.format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}
