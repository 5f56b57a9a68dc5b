//! The filesystem store (the embedded default). A write streams into `tmp/<uuid>.part`, hashing
//! on the way, and is fsynced; finalizing renames it to `sha256/<ab>/<digest>.<uuid>` (atomic,
//! unique per upload). Interrupted writes remove their temp file (on error, or when dropped);
//! after a crash, [`FsStore::sweep_staging`](ArtifactStore::sweep_staging) removes leftovers.

use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use switchyard_contract::{
    ArtifactError, ArtifactStore, BlobRef, ByteRange, ByteStream, ContentDigest, OpenedBlob, StagedBlob,
};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

const READ_CHUNK: usize = 256 * 1024;

/// Artifact bytes under one directory.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> ArtifactError {
    ArtifactError::Unavailable(format!("{what} {}: {e}", path.display()))
}

impl FsStore {
    /// Uses (creating) `root`, with `tmp/` and `sha256/` inside.
    pub async fn open(root: impl Into<PathBuf>) -> Result<Self, ArtifactError> {
        let root = root.into();
        for dir in [root.join("tmp"), root.join("sha256")] {
            tokio::fs::create_dir_all(&dir).await.map_err(|e| io("cannot create", &dir, e))?;
        }
        Ok(Self { root })
    }

    /// The directory holding everything.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file behind a location, refusing anything that is not one of ours.
    pub fn path_of(&self, location: &str) -> Result<PathBuf, ArtifactError> {
        let ok = location.starts_with("sha256/")
            && !location.contains("..")
            && location.bytes().all(|b| b.is_ascii_alphanumeric() || b"/.".contains(&b));
        if !ok {
            return Err(ArtifactError::Internal(format!("`{location}` is not a filesystem artifact location")));
        }
        Ok(self.root.join(location))
    }
}

/// Removes the temp file unless disarmed (covers errors and dropped futures).
#[derive(Debug)]
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[derive(Debug)]
struct FsStaged {
    temp: TempGuard,
    root: PathBuf,
    digest: ContentDigest,
    size: u64,
    upload: String,
}

#[async_trait]
impl StagedBlob for FsStaged {
    fn digest(&self) -> &ContentDigest {
        &self.digest
    }

    fn size(&self) -> u64 {
        self.size
    }

    async fn finalize(mut self: Box<Self>) -> Result<BlobRef, ArtifactError> {
        let hex = self.digest.as_hex();
        let location = format!("sha256/{}/{hex}.{}", &hex[..2], self.upload);
        let dest = self.root.join(&location);
        if let Some(dir) = dest.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(|e| io("cannot create", dir, e))?;
        }
        let temp = self.temp.0.clone().ok_or_else(|| ArtifactError::Internal("staged file already used".into()))?;
        tokio::fs::rename(&temp, &dest).await.map_err(|e| io("cannot rename into", &dest, e))?;
        self.temp.0 = None;
        if let Some(dir) = dest.parent() {
            // Make the rename durable before the index points at it.
            if let Ok(d) = tokio::fs::File::open(dir).await {
                let _ = d.sync_all().await;
            }
        }
        Ok(BlobRef { digest: self.digest.clone(), size: self.size, location, chunks: None })
    }

    async fn discard(mut self: Box<Self>) -> Result<(), ArtifactError> {
        if let Some(p) = self.temp.0.take() {
            match tokio::fs::remove_file(&p).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("cannot remove", &p, e)),
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ArtifactStore for FsStore {
    async fn stage(&self, mut body: ByteStream) -> Result<Box<dyn StagedBlob>, ArtifactError> {
        let upload = uuid::Uuid::now_v7().simple().to_string();
        let path = self.root.join("tmp").join(format!("{upload}.part"));
        let file = tokio::fs::OpenOptions::new().write(true).create_new(true).open(&path).await;
        let mut file = file.map_err(|e| io("cannot create", &path, e))?;
        let guard = TempGuard(Some(path.clone()));
        let (mut hasher, mut size) = (Sha256::new(), 0u64);
        // Coalesce small chunks into fewer writes; memory: READ_CHUNK plus one incoming chunk.
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            buf.extend_from_slice(&chunk);
            if buf.len() >= READ_CHUNK {
                file.write_all(&buf).await.map_err(|e| io("cannot write", &path, e))?;
                buf.clear();
            }
        }
        file.write_all(&buf).await.map_err(|e| io("cannot write", &path, e))?;
        file.sync_all().await.map_err(|e| io("cannot sync", &path, e))?;
        let digest = ContentDigest::from_bytes(&hasher.finalize())?;
        Ok(Box::new(FsStaged { temp: guard, root: self.root.clone(), digest, size, upload }))
    }

    async fn open(&self, blob: &BlobRef, range: Option<ByteRange>) -> Result<OpenedBlob, ArtifactError> {
        let path = self.path_of(&blob.location)?;
        let mut file = match tokio::fs::File::open(&path).await {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ArtifactError::Missing(blob.location.clone()));
            }
            Err(e) => return Err(io("cannot open", &path, e)),
        };
        let total_size = file.metadata().await.map_err(|e| io("cannot stat", &path, e))?.len();
        let (start, len) = range.map_or((0, total_size), |r| (r.start, r.len()));
        if start > 0 {
            file.seek(SeekFrom::Start(start)).await.map_err(|e| io("cannot seek", &path, e))?;
        }
        Ok(OpenedBlob { total_size, body: read_stream(file.take(len), path) })
    }

    async fn delete(&self, location: &str) -> Result<(), ArtifactError> {
        let path = self.path_of(location)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io("cannot remove", &path, e)),
        }
    }

    async fn sweep_staging(&self, older_than_ms: u64) -> Result<u64, ArtifactError> {
        let dir = self.root.join("tmp");
        let cutoff =
            SystemTime::now().checked_sub(Duration::from_millis(older_than_ms)).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut entries = tokio::fs::read_dir(&dir).await.map_err(|e| io("cannot list", &dir, e))?;
        let mut removed = 0;
        while let Some(entry) = entries.next_entry().await.map_err(|e| io("cannot list", &dir, e))? {
            let old = entry.metadata().await.and_then(|m| m.modified()).is_ok_and(|t| t < cutoff);
            if old && tokio::fs::remove_file(entry.path()).await.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    async fn list_finalized(&self, older_than_ms: u64) -> Result<Vec<String>, ArtifactError> {
        let cutoff =
            SystemTime::now().checked_sub(Duration::from_millis(older_than_ms)).unwrap_or(SystemTime::UNIX_EPOCH);
        finalized_in(&self.root.join("sha256"), cutoff).await
    }
}

/// Files under `dir` modified before `cutoff`, as locations `sha256/<ab>/<name>`.
async fn finalized_in(dir: &Path, cutoff: SystemTime) -> Result<Vec<String>, ArtifactError> {
    let mut out = Vec::new();
    let mut shards = tokio::fs::read_dir(dir).await.map_err(|e| io("cannot list", dir, e))?;
    while let Some(shard) = shards.next_entry().await.map_err(|e| io("cannot list", dir, e))? {
        let Ok(mut files) = tokio::fs::read_dir(shard.path()).await else { continue };
        while let Ok(Some(file)) = files.next_entry().await {
            let old = file.metadata().await.and_then(|m| m.modified()).is_ok_and(|t| t < cutoff);
            if let (true, Some(shard), Some(name)) = (old, shard.file_name().to_str(), file.file_name().to_str()) {
                out.push(format!("sha256/{shard}/{name}"));
            }
        }
    }
    Ok(out)
}

fn read_stream(reader: impl tokio::io::AsyncRead + Send + Unpin + 'static, path: PathBuf) -> ByteStream {
    Box::pin(futures::stream::unfold(Some((reader, path)), |state| async move {
        let (mut reader, path) = state?;
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        match reader.read_buf(&mut buf).await {
            Ok(0) => None,
            Ok(_) => Some((Ok::<Bytes, ArtifactError>(buf.freeze()), Some((reader, path)))),
            Err(e) => Some((Err(io("cannot read", &path, e)), None)),
        }
    }))
}
