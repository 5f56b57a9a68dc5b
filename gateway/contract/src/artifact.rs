//! Artifacts: bytes an invocation produced, kept beyond the call, addressed by their SHA-256.
//!
//! Two driven ports split the job:
//! - [`ArtifactStore`] holds bytes (filesystem, S3). It streams a body into a *staged* object,
//!   computing digest and size on the way; staged bytes are readable by no one until the index
//!   has committed a row that points at them.
//! - [`ArtifactIndex`] holds metadata (PostgreSQL, SQLite): one immutable row per artifact and
//!   one row per distinct digest ("blob"), so identical bytes are stored once.
//!
//! The collector's protocol (safe with many replicas): delete expired artifact rows; then, per
//! unreferenced blob, lock its row, re-check that no artifact references it, mark it `deleting`,
//! delete the bytes, forget the row. A commit locks the same blob row, so it either sees a live
//! blob (and references it in the same transaction) or waits for the deletion to finish.

use std::fmt;
use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use serde::{Deserialize, Serialize};

use crate::Millis;
use crate::error::Error;
use crate::id::{ArtifactId, InvocationId};
use crate::principal::TenantId;

/// A stream of bytes in, or out of, an artifact store.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ArtifactError>> + Send + 'static>>;

/// A SHA-256 digest as 64 lowercase hex digits.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ContentDigest(String);

impl ContentDigest {
    /// Wraps the raw 32-byte output of SHA-256.
    pub fn from_bytes(raw: &[u8]) -> Result<Self, ArtifactError> {
        if raw.len() != 32 {
            return Err(ArtifactError::Internal(format!("a SHA-256 digest has 32 bytes, not {}", raw.len())));
        }
        Ok(Self(hex::encode(raw)))
    }

    /// 64 lowercase hex digits.
    pub fn as_hex(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ContentDigest {
    type Error = ArtifactError;
    fn try_from(s: String) -> Result<Self, ArtifactError> {
        if s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Self(s))
        } else {
            Err(ArtifactError::Internal(format!(
                "`{}` is not a SHA-256 hex digest",
                s.chars().take(80).collect::<String>()
            )))
        }
    }
}

impl From<ContentDigest> for String {
    fn from(d: ContentDigest) -> String {
        d.0
    }
}

impl fmt::Display for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.0)
    }
}

impl fmt::Debug for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Where a blob's bytes live, and what they must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobRef {
    pub digest: ContentDigest,
    pub size: u64,
    /// Opaque to everyone but the [`ArtifactStore`] that wrote it (a path or an object key).
    /// Unique per upload: a location is never rewritten, so deleting one cannot hit new bytes.
    pub location: String,
    /// Per-chunk checksums, so a range read can verify just the chunks it touches.
    #[serde(default)]
    pub chunks: Option<ChunkSums>,
}

/// CRC-32C of each `chunk_size` slice of a blob (the last one may be shorter). Range reads
/// verify the chunks they touch with these; whole reads verify the SHA-256. CRC-32C catches
/// accidental corruption (bit rot, truncation, a wrong object), not deliberate forgery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkSums {
    pub chunk_size: u32,
    pub crc32c: Vec<u32>,
}

impl ChunkSums {
    /// 8 hex digits per chunk, in order (the database form).
    pub fn to_hex(&self) -> String {
        self.crc32c.iter().map(|c| format!("{c:08x}")).collect()
    }

    /// Parses [`ChunkSums::to_hex`] output.
    pub fn from_hex(chunk_size: u32, text: &str) -> Result<Self, ArtifactError> {
        let bad = || ArtifactError::Internal("stored chunk checksums do not parse".into());
        if chunk_size == 0 || !text.len().is_multiple_of(8) || !text.is_ascii() {
            return Err(bad());
        }
        let crc32c = (0..text.len())
            .step_by(8)
            .map(|i| u32::from_str_radix(&text[i..i + 8], 16).map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        Ok(Self { chunk_size, crc32c })
    }
}

/// Inclusive byte range `start..=end`, already checked against the object's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub end: u64,
}

impl ByteRange {
    /// Bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }

    /// Never true: a range holds at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// An opened object: its size as the store reports it, and its bytes (the whole object or the
/// requested range). Unverified: `switchyard-artifacts` checks what it hands out.
pub struct OpenedBlob {
    pub total_size: u64,
    pub body: ByteStream,
}

impl fmt::Debug for OpenedBlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenedBlob").field("total_size", &self.total_size).finish_non_exhaustive()
    }
}

/// Bytes fully written but not yet visible: finalize them (then commit the index row) or
/// discard them. Dropping one without either discards it (cleanup runs in the background).
#[async_trait]
pub trait StagedBlob: Send + fmt::Debug {
    /// SHA-256 of everything streamed in.
    fn digest(&self) -> &ContentDigest;
    /// Bytes streamed in.
    fn size(&self) -> u64;
    /// Makes the bytes durable at their location (rename, complete the multipart upload).
    /// Still unreachable until an index row points at the location.
    async fn finalize(self: Box<Self>) -> Result<BlobRef, ArtifactError>;
    /// Removes the staged bytes (dedup hit, or the commit failed).
    async fn discard(self: Box<Self>) -> Result<(), ArtifactError>;
}

/// The bytes of artifacts: a filesystem directory or an S3 bucket.
#[async_trait]
pub trait ArtifactStore: Send + Sync + fmt::Debug {
    /// Streams `body` into a staged object in constant memory (bounded parts and concurrency),
    /// computing digest and size on the way. If `body` fails, or this future is dropped, nothing
    /// readable remains: temp files are removed and multipart uploads aborted (best effort on a
    /// crash: leftovers are unreferenced and swept by [`ArtifactStore::sweep_staging`]).
    async fn stage(&self, body: ByteStream) -> Result<Box<dyn StagedBlob>, ArtifactError>;

    /// Opens a finalized object, whole or a range (already checked against `blob.size`).
    /// Returns [`ArtifactError::Missing`] if the object is gone.
    async fn open(&self, blob: &BlobRef, range: Option<ByteRange>) -> Result<OpenedBlob, ArtifactError>;

    /// Deletes a finalized object. Deleting a missing object succeeds (idempotent).
    async fn delete(&self, location: &str) -> Result<(), ArtifactError>;

    /// Removes staging leftovers older than `older_than_ms` (crashed uploads). Returns how many.
    async fn sweep_staging(&self, older_than_ms: u64) -> Result<u64, ArtifactError>;

    /// Locations of finalized objects written more than `older_than_ms` ago. The collector
    /// compares them with the index: one no blob row names was finalized by an upload that
    /// never committed (a crash between the two steps) and is deleted.
    async fn list_finalized(&self, older_than_ms: u64) -> Result<Vec<String>, ArtifactError>;
}

/// Keeps bytes a protocol face received (A2A artifact parts) as artifacts, and reads them back
/// verified. The server implements it over its artifact store; faces use it through the
/// contract only.
#[async_trait]
pub trait ArtifactKeeper: Send + Sync + fmt::Debug {
    /// Stores `bytes` as chunk `chunk_seq` of artifact `name` produced by `invocation`.
    async fn keep(
        &self,
        tenant: &TenantId,
        invocation: InvocationId,
        name: &str,
        media_type: &str,
        chunk_seq: u32,
        bytes: Vec<u8>,
    ) -> Result<ArtifactMeta, ArtifactError>;
    /// The bytes of artifact `id`, verified against their SHA-256 — only if it is `tenant`'s
    /// (else not found). `None` is for the gateway's own deliveries of a record it wrote.
    async fn read(&self, tenant: Option<&TenantId>, id: ArtifactId) -> Result<Vec<u8>, ArtifactError>;
}

/// How long artifacts of a retention class are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    Forever,
    /// Milliseconds after creation (configured in days; tests use milliseconds).
    ForMs(u64),
}

/// What the caller supplies for a new artifact; the rest is computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewArtifact {
    pub id: ArtifactId,
    pub tenant: TenantId,
    /// The invocation that produced it.
    pub invocation: InvocationId,
    pub name: String,
    pub media_type: String,
    /// Order of this chunk among the chunks an invocation streamed under the same `name`
    /// (A2A chunked artifacts); 0 for a single-chunk artifact. Unique per (invocation, name).
    pub chunk_seq: u32,
    pub retention_class: String,
    pub keep: Keep,
}

/// A committed artifact. Immutable: the database refuses updates; only the collector deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactMeta {
    pub id: ArtifactId,
    pub tenant: TenantId,
    pub invocation: InvocationId,
    pub name: String,
    pub media_type: String,
    pub chunk_seq: u32,
    pub size: u64,
    pub sha256: ContentDigest,
    pub retention_class: String,
    pub created_ms: Millis,
    /// When the collector may delete it; `None` keeps it forever.
    pub expires_ms: Option<Millis>,
    /// Where the bytes live (internal; not shown to clients).
    #[serde(skip_serializing)]
    pub location: String,
    /// The blob's chunk checksums (internal).
    #[serde(skip)]
    pub chunks: Option<ChunkSums>,
}

impl ArtifactMeta {
    pub fn blob(&self) -> BlobRef {
        BlobRef {
            digest: self.sha256.clone(),
            size: self.size,
            location: self.location.clone(),
            chunks: self.chunks.clone(),
        }
    }
}

/// What [`ArtifactIndex::commit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commit {
    /// The row is committed. `deduplicated`: the digest was already stored (at another
    /// location), so the caller's bytes are not needed.
    Committed { meta: Box<ArtifactMeta>, deduplicated: bool },
    /// No live blob has this digest and the caller offered no bytes: finalize, then call again
    /// with `Some(blob)`.
    NeedBytes,
    /// A collector is deleting this digest's bytes right now: retry shortly.
    Busy,
}

/// One page of artifacts, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactPage {
    pub items: Vec<ArtifactMeta>,
    pub next_cursor: Option<String>,
}

/// Artifact metadata in the invocation store.
#[async_trait]
pub trait ArtifactIndex: Send + Sync + fmt::Debug {
    /// In one transaction: locks the blob row for `digest`; if it is live, touches it and inserts
    /// the artifact row referencing it; if it is missing and `offered` is `Some`, inserts the blob
    /// row for `offered` and the artifact row. Committed before it returns.
    async fn commit(
        &self,
        draft: &NewArtifact,
        digest: &ContentDigest,
        size: u64,
        offered: Option<&BlobRef>,
    ) -> Result<Commit, Error>;

    /// One artifact; `tenant: Some(t)` hides other tenants' artifacts (as if absent).
    async fn get(&self, tenant: Option<&TenantId>, id: ArtifactId) -> Result<Option<ArtifactMeta>, Error>;

    /// A tenant's artifacts, newest first, optionally of one invocation.
    async fn list(
        &self,
        tenant: &TenantId,
        invocation: Option<InvocationId>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<ArtifactPage, Error>;

    /// Deletes up to `limit` artifact rows whose `expires_ms` has passed (database clock).
    async fn delete_expired(&self, limit: u32) -> Result<u64, Error>;

    /// Claims up to `limit` blobs that no artifact references and that nobody touched for
    /// `grace_ms`, plus `deleting` blobs whose collector stalled for `grace_ms`: each is marked
    /// `deleting` after a re-check under its row lock. The caller deletes the bytes, then calls
    /// [`ArtifactIndex::forget_blob`].
    async fn claim_unreferenced(&self, grace_ms: u64, limit: u32) -> Result<Vec<BlobRef>, Error>;

    /// Removes a `deleting` blob row once its bytes are gone.
    async fn forget_blob(&self, digest: &ContentDigest) -> Result<(), Error>;

    /// The subset of `locations` that blob rows name (live or being deleted).
    async fn known_locations(&self, locations: &[String]) -> Result<Vec<String>, Error>;

    /// Number of blob rows (distinct digests stored), for tests and `gc` reports.
    async fn blob_count(&self) -> Result<u64, Error>;
}

/// Why an artifact operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("artifact not found")]
    NotFound,
    /// The bytes on storage are not the bytes that were committed. Never served.
    #[error("artifact bytes are corrupt: {0}")]
    Corrupt(String),
    /// The object is gone from storage although metadata references it.
    #[error("artifact bytes are missing from storage: {0}")]
    Missing(String),
    #[error("range not satisfiable (size {size})")]
    RangeNotSatisfiable { size: u64 },
    /// The upload's body failed; nothing was stored.
    #[error("upload body failed: {0}")]
    Body(String),
    #[error("artifact storage unavailable: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Invalid(String),
    #[error("internal artifact error: {0}")]
    Internal(String),
    #[error(transparent)]
    Index(Error),
}

impl From<Error> for ArtifactError {
    fn from(e: Error) -> Self {
        ArtifactError::Index(e)
    }
}

impl From<ArtifactError> for Error {
    fn from(e: ArtifactError) -> Self {
        match e {
            ArtifactError::NotFound => Error::not_found("artifact not found"),
            ArtifactError::RangeNotSatisfiable { size } => {
                Error::invalid_input(format!("range not satisfiable (artifact size {size})"))
            }
            ArtifactError::Body(m) => Error::invalid_input(format!("upload failed, nothing was stored: {m}")),
            ArtifactError::Invalid(m) => Error::invalid_input(m),
            ArtifactError::Unavailable(_) => Error::unavailable("artifact storage is unavailable; retry later"),
            ArtifactError::Corrupt(_) | ArtifactError::Missing(_) | ArtifactError::Internal(_) => {
                Error::internal("artifact bytes failed verification; they are not served")
            }
            ArtifactError::Index(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_64_lowercase_hex() {
        let ok = ContentDigest::try_from("ab".repeat(32));
        assert!(ok.is_ok_and(|d| d.to_string() == format!("sha256:{}", "ab".repeat(32))));
        assert!(ContentDigest::try_from("AB".repeat(32)).is_err());
        assert!(ContentDigest::try_from("ab".repeat(31)).is_err());
        assert!(ContentDigest::from_bytes(&[0u8; 31]).is_err());
    }

    #[test]
    fn chunk_sums_round_trip_through_hex() {
        let sums = ChunkSums { chunk_size: 1024, crc32c: vec![0, 0xdead_beef, 7] };
        assert_eq!(sums.to_hex(), "00000000deadbeef00000007");
        assert_eq!(ChunkSums::from_hex(1024, &sums.to_hex()).ok(), Some(sums));
        assert!(ChunkSums::from_hex(1024, "xyz").is_err());
        assert!(ChunkSums::from_hex(0, "").is_err());
    }

    #[test]
    fn corruption_is_internal_and_not_retry_safe() {
        let e: Error = ArtifactError::Corrupt("x".into()).into();
        assert_eq!(e.kind(), crate::ErrorKind::Internal);
        assert!(!e.retry_safe);
    }
}
