//! Artifact store benchmark: streams a large artifact (default 1 GiB) to a real S3-compatible
//! server (s3s-fs 0.14.1 in a child process on 127.0.0.1, so its memory is not counted) through
//! `Artifacts::put` (S3 store, SQLite index), and the same bytes through a plain aws-sdk-s3
//! multipart upload with the same part size and concurrency, in the same run, after one small
//! unmeasured warm-up of each. Reports the peak RSS growth of this process during each upload
//! (VmHWM after resetting it through /proc/self/clear_refs; glibc is told to mmap buffers of
//! 1 MiB and more so RSS tracks live memory) and the throughput ratio store / plain (total
//! time over all rounds). Objects are deleted after each round.
//!
//! ```text
//! cargo run --release -p switchyard-tests --bin switchyard-artifact-bench -- [--size-mib 1024] \
//!     [--part-mib 8] [--concurrency 4] [--rounds 2]
//! ```

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use aws_sdk_s3::primitives::ByteStream as SdkBody;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use switchyard_artifacts::{Artifacts, Policy, PutRequest, S3Store};
use switchyard_contract::{ArtifactError, ArtifactStore, ByteStream, InvocationId, TenantId};
use switchyard_tests::s3::{ACCESS_KEY, S3Server, SECRET_KEY};

const MIB: usize = 1024 * 1024;
const BUCKET: &str = "bench";

#[derive(Debug, Clone, Copy)]
struct Opts {
    size: usize,
    part: usize,
    concurrency: usize,
    rounds: usize,
}

fn parse_opts() -> anyhow::Result<Opts> {
    let mut o = Opts { size: 1024 * MIB, part: 8 * MIB, concurrency: 4, rounds: 2 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value: usize = args.next().with_context(|| format!("{flag} needs a value"))?.parse()?;
        match flag.as_str() {
            "--size-mib" => o.size = value * MIB,
            "--part-mib" => o.part = value * MIB,
            "--concurrency" => o.concurrency = value,
            "--rounds" => o.rounds = value.max(1),
            other => bail!("unknown flag {other}"),
        }
    }
    Ok(o)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve-s3") {
        return serve_s3(args.get(2).context("--serve-s3 DIR")?);
    }
    // Buffers of 1 MiB and more are mmapped and unmapped by glibc, so RSS follows live memory
    // instead of what the allocator keeps cached: each round's peak is measured from a clean base.
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        let status = Command::new(std::env::current_exe()?)
            .args(&args[1..])
            .env("MALLOC_MMAP_THRESHOLD_", (1024 * 1024).to_string())
            .status()?;
        std::process::exit(status.code().unwrap_or(1));
    }
    let opts = parse_opts()?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run(opts))
}

/// The child: an s3s-fs server over DIR until our stdin closes (the parent exited).
fn serve_s3(dir: &str) -> anyhow::Result<()> {
    let server = S3Server::start_at(std::path::Path::new(dir), "127.0.0.1:0".parse()?);
    println!("{}", server.addr());
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(server);
    Ok(())
}

/// Kills the server child when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(dir: &std::path::Path) -> anyhow::Result<(Child, String)> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .arg("--serve-s3")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the S3 server child")?;
    let out = child.stdout.take().context("no stdout")?;
    let child = Child(child);
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    let addr = line.trim().to_string();
    anyhow::ensure!(!addr.is_empty(), "the S3 server child did not report its address");
    Ok((child, format!("http://{addr}")))
}

fn status_kib(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0)
}

/// Resets the peak RSS to the current RSS; returns the current RSS in bytes.
fn reset_peak() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    status_kib("VmRSS:") * 1024
}

fn peak() -> u64 {
    status_kib("VmHWM:") * 1024
}

/// `size` bytes in 1 MiB chunks: a random block with each chunk's index and the seed stamped
/// into it, so chunks differ and each round's bytes differ. Cheap to produce.
fn chunks(size: usize, seed: u64) -> impl Iterator<Item = Bytes> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ seed;
    let block: Vec<u8> = (0..MIB)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    (0..size.div_ceil(MIB)).map(move |i| {
        let len = MIB.min(size - i * MIB);
        let mut b = BytesMut::from(&block[..len]);
        let stamp = (i as u64 ^ seed.rotate_left(32)).to_le_bytes();
        let n = stamp.len().min(len);
        b[..n].copy_from_slice(&stamp[..n]);
        b.freeze()
    })
}

fn body(size: usize, seed: u64) -> ByteStream {
    Box::pin(futures::stream::iter(chunks(size, seed).map(Ok::<_, ArtifactError>)))
}

/// The reference: aws-sdk-s3 multipart upload, same part size and concurrency, no hashing.
async fn plain_upload(client: &aws_sdk_s3::Client, key: &str, o: Opts, seed: u64) -> anyhow::Result<()> {
    let created = client.create_multipart_upload().bucket(BUCKET).key(key).send().await?;
    let upload = created.upload_id.context("no upload id")?;
    let mut parts = Vec::new();
    let mut inflight = FuturesUnordered::new();
    let mut buf = BytesMut::with_capacity(o.part);
    let mut n = 0;
    let mut source = chunks(o.size, seed).peekable();
    while let Some(chunk) = source.next() {
        buf.extend_from_slice(&chunk);
        if buf.len() < o.part && source.peek().is_some() {
            continue;
        }
        while inflight.len() >= o.concurrency {
            if let Some(done) = inflight.next().await {
                parts.push(done??);
            }
        }
        n += 1;
        let part = buf.split().freeze();
        buf.reserve(o.part);
        let (client, key, upload) = (client.clone(), key.to_string(), upload.clone());
        inflight.push(tokio::spawn(async move {
            let out = client
                .upload_part()
                .bucket(BUCKET)
                .key(key)
                .upload_id(upload)
                .part_number(n)
                .content_length(part.len() as i64)
                .body(SdkBody::from(part))
                .send()
                .await?;
            anyhow::Ok(CompletedPart::builder().set_e_tag(out.e_tag).part_number(n).build())
        }));
    }
    while let Some(done) = inflight.next().await {
        parts.push(done??);
    }
    parts.sort_by_key(|p| p.part_number);
    let done = CompletedMultipartUpload::builder().set_parts(Some(parts)).build();
    client.complete_multipart_upload().bucket(BUCKET).key(key).upload_id(upload).multipart_upload(done).send().await?;
    Ok(())
}

/// One artifact through the store; its bytes are deleted afterwards.
async fn store_upload(artifacts: &Artifacts, o: Opts, round: usize, seed: u64) -> anyhow::Result<String> {
    let req = PutRequest {
        tenant: TenantId::new("bench")?,
        invocation: InvocationId::new(),
        name: format!("bench-{round}.bin"),
        media_type: "application/octet-stream".into(),
        chunk_seq: 0,
        retention_class: None,
    };
    let meta = artifacts.put(req, body(o.size, seed)).await?;
    anyhow::ensure!(meta.size == o.size as u64, "stored {} bytes", meta.size);
    Ok(meta.location)
}

#[derive(Debug, Default, Clone, Copy)]
struct Sample {
    secs: f64,
    rss_growth: u64,
}

async fn measure<T, F: std::future::Future<Output = anyhow::Result<T>>>(f: F) -> anyhow::Result<(Sample, T)> {
    let base = reset_peak();
    let started = Instant::now();
    let out = f.await?;
    let secs = started.elapsed().as_secs_f64();
    Ok((Sample { secs, rss_growth: peak().saturating_sub(base) }, out))
}

async fn run(o: Opts) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new().prefix("switchyard-bench-").tempdir()?;
    std::fs::create_dir_all(dir.path().join("s3"))?;
    let (_child, endpoint) = start_server(&dir.path().join("s3"))?;
    let settings = switchyard_artifacts::S3Settings {
        endpoint,
        region: "us-east-1".into(),
        bucket: BUCKET.into(),
        prefix: String::new(),
        path_style: true,
        access_key_id: ACCESS_KEY.into(),
        secret_access_key: SECRET_KEY.into(),
        session_token: None,
        part_size: o.part,
        concurrency: o.concurrency,
    };
    let store = S3Store::new(settings.clone())?;
    store.create_bucket_if_missing().await?;
    let client = settings.client();
    let url = format!("sqlite://{}/bench.db", dir.path().display());
    let index = switchyard_store::connect(&url, &switchyard_store::StoreOptions::default()).await?.artifacts;
    let artifacts = Artifacts::new(Arc::new(store.clone()), index, Policy::default());
    let mib = o.size as f64 / MIB as f64;
    println!(
        "artifact bench: {mib:.0} MiB per upload, part {} MiB, concurrency {}, {} round(s), s3s-fs 0.14.1 on {}",
        o.part / MIB,
        o.concurrency,
        o.rounds,
        settings.endpoint
    );
    // Warm-up (not measured): first-use costs of the runtime, the SDK and the index.
    let warm = Opts { size: 2 * o.part + 1, ..o };
    let location = store_upload(&artifacts, warm, 99, 99).await?;
    store.delete(&location).await?;
    plain_upload(&client, "plain/warm", warm, 99).await?;
    client.delete_object().bucket(BUCKET).key("plain/warm").send().await?;
    let (mut plain_total, mut store_total, mut store_peak, mut plain_peak) = (0.0, 0.0, 0u64, 0u64);
    for round in 0..o.rounds {
        let seed = 1000 + round as u64;
        let key = format!("plain/{round}");
        // Alternate which upload goes first.
        let ((through, location), (plain, ())) = if round % 2 == 0 {
            let through = measure(store_upload(&artifacts, o, round, seed)).await?;
            (through, measure(plain_upload(&client, &key, o, seed)).await?)
        } else {
            let plain = measure(plain_upload(&client, &key, o, seed)).await?;
            (measure(store_upload(&artifacts, o, round, seed)).await?, plain)
        };
        client.delete_object().bucket(BUCKET).key(&key).send().await?;
        store.delete(&location).await?;
        println!(
            "round {round}: plain {:>7.1} MiB/s (peak RSS +{:>5.1} MiB) | \
             store {:>7.1} MiB/s (peak RSS +{:>5.1} MiB) | ratio {:.2}",
            mib / plain.secs,
            plain.rss_growth as f64 / MIB as f64,
            mib / through.secs,
            through.rss_growth as f64 / MIB as f64,
            plain.secs / through.secs
        );
        plain_total += plain.secs;
        store_total += through.secs;
        store_peak = store_peak.max(through.rss_growth);
        plain_peak = plain_peak.max(plain.rss_growth);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ratio = plain_total / store_total;
    let growth = store_peak as f64 / MIB as f64;
    println!(
        "RESULT store peak RSS growth {growth:.1} MiB (max over rounds; goal <= 64; plain {:.1} MiB), \
         throughput ratio store/plain {ratio:.2} (goal >= 0.80)",
        plain_peak as f64 / MIB as f64
    );
    let ok = growth <= 64.0 && ratio >= 0.8;
    println!("{}", if ok { "PASS" } else { "BELOW GOAL" });
    Ok(())
}
