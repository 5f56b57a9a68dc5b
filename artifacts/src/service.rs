//! [`Artifacts`]: the byte store and the metadata index together — write (stage, commit,
//! dedup), verified reads, and the collector.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;
use switchyard_contract::{
    ArtifactError, ArtifactId, ArtifactIndex, ArtifactMeta, ArtifactStore, ByteRange, ByteStream, Commit,
    ContentDigest, Error, ErrorKind, InvocationId, Keep, NewArtifact, TenantId,
};

use crate::chunks::{Summer, chunk_span, verified_chunks};
use crate::verify::{Check, verified};

/// Range reads of blobs without chunk checksums: up to this size the whole object is read and
/// hashed; beyond it only the object's size and the range's length are checked.
pub const VERIFY_RANGES_UP_TO: u64 = 64 * 1024 * 1024;

/// How many times a commit waits for a collector that is deleting the same digest.
const BUSY_RETRIES: u32 = 100;
const BUSY_WAIT: Duration = Duration::from_millis(50);

/// What a producer says about a new artifact.
#[derive(Debug, Clone)]
pub struct PutRequest {
    pub tenant: TenantId,
    pub invocation: InvocationId,
    pub name: String,
    pub media_type: String,
    /// Order among chunks of one A2A chunked artifact (same invocation and name); 0 otherwise.
    pub chunk_seq: u32,
    /// `None`: the configured default class.
    pub retention_class: Option<String>,
}

/// Retention classes and collector limits.
#[derive(Debug, Clone)]
pub struct Policy {
    pub retention: BTreeMap<String, Keep>,
    pub default_class: String,
    /// See `artifacts.gc_grace_ms`.
    pub gc_grace_ms: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            retention: BTreeMap::from([("default".into(), Keep::Forever)]),
            default_class: "default".into(),
            gc_grace_ms: 3_600_000,
        }
    }
}

/// What one collector pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    pub expired_artifacts: u64,
    pub deleted_blobs: u64,
    pub deleted_bytes: u64,
    pub swept_staging: u64,
    /// Finalized objects no blob row names (an upload that crashed before committing).
    pub swept_orphans: u64,
}

/// A byte range as a client asks for it (`Range: bytes=…`), before the size is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeSpec {
    /// `a-b`
    FromTo(u64, u64),
    /// `a-`
    From(u64),
    /// `-n`: the last n bytes.
    Suffix(u64),
}

impl RangeSpec {
    /// The satisfiable part of this range for an object of `size` bytes (RFC 9110 §14.1.2).
    pub fn resolve(self, size: u64) -> Result<ByteRange, ArtifactError> {
        let bad = ArtifactError::RangeNotSatisfiable { size };
        let last = size.checked_sub(1).ok_or(bad.clone())?;
        let (start, end) = match self {
            RangeSpec::FromTo(a, b) if a <= b => (a, b.min(last)),
            RangeSpec::FromTo(..) => return Err(bad),
            RangeSpec::From(a) => (a, last),
            RangeSpec::Suffix(0) => return Err(bad),
            RangeSpec::Suffix(n) => (size.saturating_sub(n), last),
        };
        if start > last {
            return Err(bad);
        }
        Ok(ByteRange { start, end })
    }
}

/// An opened artifact: its metadata, the range being served (if any) and verified bytes.
pub struct Download {
    pub meta: ArtifactMeta,
    pub range: Option<ByteRange>,
    pub body: ByteStream,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download").field("meta", &self.meta).field("range", &self.range).finish_non_exhaustive()
    }
}

/// The artifact service shared by the HTTP endpoint, the CLI and producers.
#[derive(Debug, Clone)]
pub struct Artifacts {
    store: Arc<dyn ArtifactStore>,
    index: Arc<dyn ArtifactIndex>,
    policy: Arc<Policy>,
    traffic: Arc<Traffic>,
}

/// Bytes through this process's artifact service since it started.
#[derive(Debug, Default)]
struct Traffic {
    /// Received by committed uploads (deduplicated ones included).
    stored: std::sync::atomic::AtomicU64,
    /// Sent to readers (whole artifacts and ranges, as they stream out).
    served: std::sync::atomic::AtomicU64,
}

impl Artifacts {
    pub fn new(store: Arc<dyn ArtifactStore>, index: Arc<dyn ArtifactIndex>, policy: Policy) -> Self {
        Self { store, index, policy: Arc::new(policy), traffic: Arc::default() }
    }

    /// Bytes received by committed uploads and bytes sent to readers, since this process started.
    pub fn traffic(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.traffic.stored.load(Relaxed), self.traffic.served.load(Relaxed))
    }

    pub fn index(&self) -> &Arc<dyn ArtifactIndex> {
        &self.index
    }

    pub fn store(&self) -> &Arc<dyn ArtifactStore> {
        &self.store
    }

    fn draft(&self, req: PutRequest) -> Result<NewArtifact, ArtifactError> {
        let class = req.retention_class.unwrap_or_else(|| self.policy.default_class.clone());
        let keep = *self
            .policy
            .retention
            .get(&class)
            .ok_or_else(|| ArtifactError::Invalid(format!("unknown retention class `{class}`")))?;
        if req.name.is_empty() || req.name.len() > 256 || req.name.chars().any(char::is_control) {
            return Err(ArtifactError::Invalid("artifact name must be 1-256 printable characters".into()));
        }
        let mt = &req.media_type;
        if mt.is_empty()
            || mt.len() > 200
            || !mt.contains('/')
            || !mt.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(ArtifactError::Invalid(format!("`{mt}` is not a media type")));
        }
        Ok(NewArtifact {
            id: ArtifactId::new(),
            tenant: req.tenant,
            invocation: req.invocation,
            name: req.name,
            media_type: req.media_type,
            chunk_seq: req.chunk_seq,
            retention_class: class,
            keep,
        })
    }

    /// Streams `body` into the store and commits its metadata; returns once both are durable.
    /// Identical bytes are stored once. If `body` fails or this future is dropped while
    /// streaming, nothing is readable and no row exists.
    pub async fn put(&self, req: PutRequest, body: ByteStream) -> Result<ArtifactMeta, ArtifactError> {
        let meta = self.put_uncounted(req, body).await?;
        self.traffic.stored.fetch_add(meta.size, std::sync::atomic::Ordering::Relaxed);
        Ok(meta)
    }

    async fn put_uncounted(&self, req: PutRequest, body: ByteStream) -> Result<ArtifactMeta, ArtifactError> {
        let draft = self.draft(req)?;
        let summer = Arc::new(std::sync::Mutex::new(Summer::new()));
        let tap = summer.clone();
        let body: ByteStream = Box::pin(body.inspect(move |item| {
            if let (Ok(bytes), Ok(mut s)) = (item, tap.lock()) {
                s.update(bytes);
            }
        }));
        let staged = self.store.stage(body).await?;
        let sums = Arc::try_unwrap(summer)
            .ok()
            .and_then(|m| m.into_inner().ok())
            .ok_or_else(|| ArtifactError::Internal("chunk checksums still shared".into()))?
            .finish();
        let (digest, size) = (staged.digest().clone(), staged.size());
        // Known digest: reference the stored bytes, drop ours.
        if let Some(meta) = self.commit_known(&draft, &digest, size).await? {
            if let Err(e) = staged.discard().await {
                tracing::warn!(error = %e, "cannot discard a deduplicated upload");
            }
            return Ok(meta);
        }
        let mut blob = staged.finalize().await?;
        blob.chunks = Some(sums);
        let outcome = loop_busy(|| self.index.commit(&draft, &digest, size, Some(&blob))).await;
        match outcome {
            Ok(Commit::Committed { meta, deduplicated }) => {
                if deduplicated {
                    // Someone committed the same bytes meanwhile; ours are referenced by no row.
                    self.delete_quietly(&blob.location).await;
                }
                Ok(*meta)
            }
            Ok(Commit::NeedBytes | Commit::Busy) => {
                self.delete_quietly(&blob.location).await;
                Err(ArtifactError::Unavailable("the index did not accept the upload; retry".into()))
            }
            Err(e) => {
                // Rolled back for certain only for the caller's own mistakes; otherwise the row
                // may exist, so the bytes stay (unreferenced bytes cost space, not correctness).
                if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::InvalidInput) {
                    self.delete_quietly(&blob.location).await;
                }
                Err(e.into())
            }
        }
    }

    /// Commits against already-stored bytes with this digest, if there are any.
    async fn commit_known(
        &self,
        draft: &NewArtifact,
        digest: &ContentDigest,
        size: u64,
    ) -> Result<Option<ArtifactMeta>, ArtifactError> {
        match loop_busy(|| self.index.commit(draft, digest, size, None)).await? {
            Commit::Committed { meta, .. } => Ok(Some(*meta)),
            Commit::NeedBytes => Ok(None),
            Commit::Busy => Err(ArtifactError::Unavailable("a collector is deleting these bytes; retry".into())),
        }
    }

    async fn delete_quietly(&self, location: &str) {
        if let Err(e) = self.store.delete(location).await {
            tracing::warn!(%location, error = %e, "cannot delete unreferenced artifact bytes");
        }
    }

    /// One artifact's metadata; `tenant: Some(t)` sees only that tenant's artifacts.
    pub async fn get(&self, tenant: Option<&TenantId>, id: ArtifactId) -> Result<ArtifactMeta, ArtifactError> {
        self.index.get(tenant, id).await?.ok_or(ArtifactError::NotFound)
    }

    /// Opens an artifact for reading, whole or a range, with verification (see [`verified`]);
    /// the bytes are counted as they stream out.
    pub async fn open(
        &self,
        tenant: Option<&TenantId>,
        id: ArtifactId,
        range: Option<RangeSpec>,
    ) -> Result<Download, ArtifactError> {
        let mut download = self.open_uncounted(tenant, id, range).await?;
        let traffic = self.traffic.clone();
        download.body = Box::pin(download.body.inspect(move |item| {
            if let Ok(bytes) = item {
                traffic.served.fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
        }));
        Ok(download)
    }

    async fn open_uncounted(
        &self,
        tenant: Option<&TenantId>,
        id: ArtifactId,
        range: Option<RangeSpec>,
    ) -> Result<Download, ArtifactError> {
        let meta = self.get(tenant, id).await?;
        let blob = meta.blob();
        let range = range.map(|r| r.resolve(meta.size)).transpose()?;
        let whole = ByteRange { start: 0, end: meta.size.saturating_sub(1) };
        if let (Some(r), Some(sums)) = (range, meta.chunks.clone()) {
            let span = chunk_span(r, meta.size, sums.chunk_size);
            let opened = self.open_checked(&meta, Some(span)).await?;
            let body = verified_chunks(opened, blob, sums, span, r);
            return Ok(Download { body, meta, range });
        }
        let (fetch, check) = match range {
            Some(r) if meta.size > VERIFY_RANGES_UP_TO => (Some(r), Check::Length { len: r.len() }),
            Some(r) => (None, Check::Whole { window: r }),
            None if meta.size == 0 => (None, Check::Whole { window: ByteRange { start: 1, end: 0 } }),
            None => (None, Check::Whole { window: whole }),
        };
        let opened = self.open_checked(&meta, fetch).await?;
        Ok(Download { body: verified(opened, blob, check), meta, range })
    }

    /// Opens the stored object, checking that it exists and has the committed size.
    async fn open_checked(&self, meta: &ArtifactMeta, fetch: Option<ByteRange>) -> Result<ByteStream, ArtifactError> {
        let blob = meta.blob();
        let opened = self.store.open(&blob, fetch).await.map_err(|e| match e {
            ArtifactError::Missing(m) => crate::verify::corrupt(&blob, format!("object missing: {m}")),
            other => other,
        })?;
        if opened.total_size != meta.size {
            let detail = format!("stored object has {} bytes, expected {}", opened.total_size, meta.size);
            return Err(crate::verify::corrupt(&blob, detail));
        }
        Ok(opened.body)
    }

    /// A tenant's artifacts, newest first.
    pub async fn list(
        &self,
        tenant: &TenantId,
        invocation: Option<InvocationId>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<switchyard_contract::ArtifactPage, ArtifactError> {
        Ok(self.index.list(tenant, invocation, limit, cursor).await?)
    }

    /// One collector pass: expired rows, then unreferenced bytes, then staging leftovers. Safe
    /// to run on several replicas at once (see the protocol in `switchyard_contract::artifact`).
    pub async fn collect_garbage(&self) -> Result<GcReport, ArtifactError> {
        const BATCH: u32 = 500;
        let mut report = GcReport::default();
        loop {
            let n = self.index.delete_expired(BATCH).await?;
            report.expired_artifacts += n;
            if n < u64::from(BATCH) {
                break;
            }
        }
        loop {
            let claimed = self.index.claim_unreferenced(self.policy.gc_grace_ms, 100).await?;
            for blob in &claimed {
                self.store.delete(&blob.location).await?;
                self.index.forget_blob(&blob.digest).await?;
                report.deleted_blobs += 1;
                report.deleted_bytes += blob.size;
            }
            if claimed.len() < 100 {
                break;
            }
        }
        report.swept_staging = self.store.sweep_staging(self.policy.gc_grace_ms).await?;
        report.swept_orphans = self.sweep_orphans().await?;
        Ok(report)
    }

    /// Deletes finalized objects older than the grace period that no blob row names. A commit
    /// in flight is younger than the grace period, so its bytes are never touched.
    async fn sweep_orphans(&self) -> Result<u64, ArtifactError> {
        let mut swept = 0;
        for batch in self.store.list_finalized(self.policy.gc_grace_ms).await?.chunks(500) {
            let known: std::collections::HashSet<String> =
                self.index.known_locations(batch).await?.into_iter().collect();
            for location in batch.iter().filter(|l| !known.contains(*l)) {
                tracing::info!(%location, "deleting bytes that no artifact ever committed");
                self.store.delete(location).await?;
                swept += 1;
            }
        }
        Ok(swept)
    }

    /// The collector: [`Artifacts::collect_garbage`] every `every`, until dropped.
    pub fn collector(&self, every: Duration) -> impl std::future::Future<Output = ()> + Send + 'static {
        let this = self.clone();
        async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                match this.collect_garbage().await {
                    Ok(r) if r == GcReport::default() => {}
                    Ok(r) => tracing::info!(?r, "artifact collector pass"),
                    Err(e) => tracing::warn!(error = %e, "artifact collector pass failed"),
                }
            }
        }
    }
}

/// Repeats `f` while the index answers `Busy` (a collector is deleting the digest).
async fn loop_busy<F, Fut>(mut f: F) -> Result<Commit, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Commit, Error>>,
{
    for _ in 0..BUSY_RETRIES {
        match f().await? {
            Commit::Busy => tokio::time::sleep(BUSY_WAIT).await,
            other => return Ok(other),
        }
    }
    Ok(Commit::Busy)
}

#[async_trait::async_trait]
impl switchyard_contract::ArtifactKeeper for Artifacts {
    async fn keep(
        &self,
        tenant: &TenantId,
        invocation: InvocationId,
        name: &str,
        media_type: &str,
        chunk_seq: u32,
        bytes: Vec<u8>,
    ) -> Result<ArtifactMeta, ArtifactError> {
        let req = PutRequest {
            tenant: tenant.clone(),
            invocation,
            name: name.to_string(),
            media_type: media_type.to_string(),
            chunk_seq,
            retention_class: None,
        };
        let body: ByteStream = Box::pin(futures::stream::once(async move { Ok(bytes::Bytes::from(bytes)) }));
        self.put(req, body).await
    }

    async fn read(&self, tenant: Option<&TenantId>, id: ArtifactId) -> Result<Vec<u8>, ArtifactError> {
        let download = self.open(tenant, id, None).await?;
        let mut out = Vec::with_capacity(usize::try_from(download.meta.size).unwrap_or(0));
        let mut body = download.body;
        while let Some(chunk) = body.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::RangeSpec;

    #[test]
    fn ranges_resolve_like_http() {
        let r = |s: RangeSpec, size| s.resolve(size).ok().map(|r| (r.start, r.end));
        assert_eq!(r(RangeSpec::FromTo(0, 9), 100), Some((0, 9)));
        assert_eq!(r(RangeSpec::FromTo(90, 200), 100), Some((90, 99)));
        assert_eq!(r(RangeSpec::From(95), 100), Some((95, 99)));
        assert_eq!(r(RangeSpec::Suffix(10), 100), Some((90, 99)));
        assert_eq!(r(RangeSpec::Suffix(1000), 100), Some((0, 99)));
        assert_eq!(r(RangeSpec::From(100), 100), None);
        assert_eq!(r(RangeSpec::FromTo(5, 4), 100), None);
        assert_eq!(r(RangeSpec::From(0), 0), None);
    }
}
