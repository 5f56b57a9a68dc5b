//! `switchyard artifacts list|show|get|gc`: work on the configured artifact store and the store
//! database directly (works while the gateway runs, and when it does not).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use futures::StreamExt;
use switchyard_artifacts::{Artifacts, PutRequest};
use switchyard_contract::{ArtifactError, ArtifactId, ByteStream, InvocationId, TenantId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::Config;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List a tenant's artifacts, newest first.
    List {
        #[arg(long, default_value = "default")]
        tenant: String,
        /// Only the artifacts of this invocation.
        #[arg(long)]
        invocation: Option<InvocationId>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Show one artifact's metadata as JSON.
    Show { id: ArtifactId },
    /// Download an artifact, verifying its SHA-256 (a file is written only if it verifies).
    Get {
        id: ArtifactId,
        /// Output file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Store a file as an artifact of an invocation (streamed; prints the new artifact as JSON).
    Put {
        file: PathBuf,
        #[arg(long, default_value = "default")]
        tenant: String,
        /// The owning invocation (`inv_…`).
        #[arg(long)]
        invocation: InvocationId,
        /// Default: the file name.
        #[arg(long)]
        name: Option<String>,
        #[arg(long, default_value = "application/octet-stream")]
        media_type: String,
        /// A key of `[artifacts.retention]` (default: `artifacts.default_retention_class`).
        #[arg(long)]
        retention: Option<String>,
    },
    /// Run one collector pass: delete expired artifacts, then unreferenced bytes.
    Gc,
}

pub async fn run(cmd: Command, cfg: &Config) -> anyhow::Result<()> {
    let artifacts = crate::artifacts_http::open(cfg, super::open_store(cfg).await?.artifacts).await?;
    match cmd {
        Command::List { tenant, invocation, limit, cursor } => {
            let page = artifacts.list(&TenantId::new(tenant)?, invocation, limit, cursor.as_deref()).await?;
            println!("{:<36}  {:>12}  {:<24}  {:<10}  name", "id", "size", "media type", "retention");
            for a in &page.items {
                let name = if a.chunk_seq > 0 { format!("{} #{}", a.name, a.chunk_seq) } else { a.name.clone() };
                let (id, size) = (a.id.to_string(), a.size);
                println!("{id:<36}  {size:>12}  {:<24}  {:<10}  {name}", a.media_type, a.retention_class);
            }
            if let Some(c) = page.next_cursor {
                println!("next page: --cursor {c}");
            }
        }
        Command::Show { id } => {
            let meta = artifacts.get(None, id).await?;
            println!("{}", serde_json::to_string_pretty(&meta)?);
        }
        Command::Get { id, output } => get(&artifacts, id, output).await?,
        Command::Put { file, tenant, invocation, name, media_type, retention } => {
            let name = name.or_else(|| file.file_name().map(|n| n.to_string_lossy().into_owned()));
            let req = PutRequest {
                tenant: TenantId::new(tenant)?,
                invocation,
                name: name.unwrap_or_else(|| "artifact".into()),
                media_type,
                chunk_seq: 0,
                retention_class: retention,
            };
            let meta = artifacts.put(req, file_body(tokio::fs::File::open(&file).await?)).await?;
            println!("{}", serde_json::to_string_pretty(&meta)?);
        }
        Command::Gc => {
            let report = artifacts.collect_garbage().await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
    }
    Ok(())
}

async fn get(artifacts: &Artifacts, id: ArtifactId, output: Option<PathBuf>) -> anyhow::Result<()> {
    let download = artifacts.open(None, id, None).await?;
    let total = download.meta.size;
    let Some(path) = output else {
        let mut out = tokio::io::stdout();
        let mut body = download.body;
        while let Some(chunk) = body.next().await {
            out.write_all(&chunk?).await?;
        }
        return Ok(out.flush().await?);
    };
    // Write beside the target and rename only once every byte verified.
    let partial = path.with_extension(format!("{}.partial", path.extension().and_then(|e| e.to_str()).unwrap_or("")));
    let result = async {
        let mut file = tokio::fs::File::create(&partial).await?;
        let mut progress = Progress::new(total);
        let mut body = download.body;
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            file.write_all(&chunk).await?;
            progress.advance(chunk.len() as u64);
        }
        file.sync_all().await?;
        progress.finish();
        anyhow::Ok(())
    }
    .await;
    if let Err(e) = result {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(e);
    }
    tokio::fs::rename(&partial, &path).await?;
    eprintln!("{} bytes, {} verified -> {}", total, download.meta.sha256, path.display());
    Ok(())
}

/// A file as a stream of 1 MiB chunks.
fn file_body(file: tokio::fs::File) -> ByteStream {
    Box::pin(futures::stream::unfold(Some(file), |state| async move {
        let mut file = state?;
        let mut buf = bytes::BytesMut::with_capacity(1024 * 1024);
        match file.read_buf(&mut buf).await {
            Ok(0) => None,
            Ok(_) => Some((Ok(buf.freeze()), Some(file))),
            Err(e) => Some((Err(ArtifactError::Body(e.to_string())), None)),
        }
    }))
}

/// A one-line progress bar on a terminal's standard error, for downloads over 8 MiB.
struct Progress {
    total: u64,
    done: u64,
    shown: Option<Instant>,
    started: Instant,
}

impl Progress {
    fn new(total: u64) -> Self {
        let on = total > 8 * 1024 * 1024 && std::io::stderr().is_terminal();
        Self { total, done: 0, shown: on.then(Instant::now), started: Instant::now() }
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        if self.shown.is_some_and(|t| t.elapsed().as_millis() >= 100) {
            self.draw();
            self.shown = Some(Instant::now());
        }
    }

    fn draw(&self) {
        let frac = self.done as f64 / self.total.max(1) as f64;
        let filled = (frac * 30.0) as usize;
        let mib_s = self.done as f64 / 1048576.0 / self.started.elapsed().as_secs_f64().max(0.001);
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(30 - filled.min(30)));
        let mut err = std::io::stderr();
        let _ = write!(err, "\r[{bar}] {:>5.1}%  {:>8.1} MiB/s", frac * 100.0, mib_s);
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.shown.is_some() {
            self.draw();
            eprintln!();
        }
    }
}
