//! The S3-compatible store (aws-sdk-s3; AWS S3 or a self-hosted server). Every upload goes to
//! its own key `<prefix>blobs/<uuid>`, chosen before the digest is known, so a key is never
//! rewritten. Bodies up to one part are buffered and sent by one `PutObject` at finalize; larger
//! ones use a multipart upload with `part_size` parts and at most `concurrency` parts in flight
//! (memory ≈ (concurrency + 1) × part_size), completed at finalize, aborted on error, discard or
//! drop. An incomplete multipart upload is never readable.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream as SdkBody;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use sha2::{Digest, Sha256};
use switchyard_contract::{
    ArtifactError, ArtifactStore, BlobRef, ByteRange, ByteStream, ContentDigest, OpenedBlob, StagedBlob,
};
use tokio::task::JoinHandle;

/// Where and how to reach the bucket.
#[derive(Clone, Default)]
pub struct S3Settings {
    /// Empty: the AWS endpoint for `region`.
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    /// Key prefix, e.g. `switchyard/` (may be empty).
    pub prefix: String,
    /// Path-style URLs (`http://host/bucket/key`), needed by most self-hosted servers.
    pub path_style: bool,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// Multipart part size in bytes (S3 requires at least 5 MiB).
    pub part_size: usize,
    /// Parts uploaded at once.
    pub concurrency: usize,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("path_style", &self.path_style)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"***")
            .field("part_size", &self.part_size)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

impl S3Settings {
    /// An aws-sdk-s3 client for these settings (static credentials).
    pub fn client(&self) -> Client {
        let creds = Credentials::new(
            &self.access_key_id,
            &self.secret_access_key,
            self.session_token.clone(),
            None,
            "switchyard",
        );
        let mut b = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(self.region.clone()))
            .credentials_provider(creds)
            .force_path_style(self.path_style);
        if !self.endpoint.is_empty() {
            b = b.endpoint_url(&self.endpoint);
        }
        Client::from_conf(b.build())
    }
}

/// Artifact bytes in an S3 bucket.
#[derive(Debug, Clone)]
pub struct S3Store {
    client: Client,
    settings: Arc<S3Settings>,
}

fn sdk<E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static>(
    what: &str,
    e: SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> ArtifactError {
    let detail = match e.as_service_error() {
        Some(s) => format!("{}: {}", s.code().unwrap_or("error"), s.message().unwrap_or("")),
        None => format!("{}", aws_sdk_s3::error::DisplayErrorContext(&e)),
    };
    ArtifactError::Unavailable(format!("S3 {what}: {detail}"))
}

impl S3Store {
    pub fn new(settings: S3Settings) -> Result<Self, ArtifactError> {
        if settings.bucket.len() < 3 {
            return Err(ArtifactError::Invalid("artifacts.s3_bucket must be at least 3 characters".into()));
        }
        if settings.part_size < 5 * 1024 * 1024 || settings.concurrency == 0 {
            return Err(ArtifactError::Invalid(
                "S3 part size must be at least 5 MiB and concurrency at least 1".into(),
            ));
        }
        Ok(Self { client: settings.client(), settings: Arc::new(settings) })
    }

    /// The SDK client (tests and benchmarks use it to look at the bucket directly).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The object key behind a location.
    pub fn key_of(&self, location: &str) -> String {
        format!("{}{location}", self.settings.prefix)
    }

    /// Creates the bucket unless it exists.
    pub async fn create_bucket_if_missing(&self) -> Result<(), ArtifactError> {
        let bucket = &self.settings.bucket;
        if self.client.head_bucket().bucket(bucket).send().await.is_ok() {
            return Ok(());
        }
        match self.client.create_bucket().bucket(bucket).send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_bucket_already_owned_by_you()) => Ok(()),
            Err(e) => Err(sdk("create bucket", e)),
        }
    }

    async fn upload_part(
        &self,
        key: String,
        upload: String,
        n: i32,
        body: Bytes,
    ) -> Result<CompletedPart, ArtifactError> {
        let out = self
            .client
            .upload_part()
            .bucket(&self.settings.bucket)
            .key(key)
            .upload_id(upload)
            .part_number(n)
            .content_length(body.len() as i64)
            .body(SdkBody::from(body))
            .send()
            .await
            .map_err(|e| sdk("upload part", e))?;
        Ok(CompletedPart::builder().set_e_tag(out.e_tag).part_number(n).build())
    }
}

/// A multipart upload in progress; aborts itself (in the background) unless disarmed.
#[derive(Debug)]
struct Multipart {
    store: S3Store,
    key: String,
    upload_id: String,
    armed: bool,
}

impl Multipart {
    async fn abort(mut self) -> Result<(), ArtifactError> {
        self.armed = false;
        let s = &self.store.settings;
        let req =
            self.store.client.abort_multipart_upload().bucket(&s.bucket).key(&self.key).upload_id(&self.upload_id);
        req.send().await.map_err(|e| sdk("abort multipart upload", e))?;
        Ok(())
    }
}

impl Drop for Multipart {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (client, bucket) = (self.store.client.clone(), self.store.settings.bucket.clone());
        let (key, upload) = (self.key.clone(), self.upload_id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let r = client.abort_multipart_upload().bucket(bucket).key(&key).upload_id(upload).send().await;
                if let Err(e) = r {
                    let error = aws_sdk_s3::error::DisplayErrorContext(&e);
                    tracing::warn!(%key, %error, "cannot abort multipart upload");
                }
            });
        }
    }
}

#[derive(Debug)]
enum Pending {
    /// The whole body, at most one part.
    Small(Bytes),
    Multipart {
        upload: Multipart,
        parts: Vec<CompletedPart>,
    },
}

#[derive(Debug)]
struct S3Staged {
    store: S3Store,
    location: String,
    digest: ContentDigest,
    size: u64,
    pending: Pending,
}

#[async_trait]
impl StagedBlob for S3Staged {
    fn digest(&self) -> &ContentDigest {
        &self.digest
    }

    fn size(&self) -> u64 {
        self.size
    }

    async fn finalize(self: Box<Self>) -> Result<BlobRef, ArtifactError> {
        let S3Staged { store, location, digest, size, pending } = *self;
        let bucket = &store.settings.bucket;
        match pending {
            Pending::Small(body) => {
                let req = store.client.put_object().bucket(bucket).key(store.key_of(&location));
                req.content_length(body.len() as i64)
                    .body(SdkBody::from(body))
                    .send()
                    .await
                    .map_err(|e| sdk("put object", e))?;
            }
            Pending::Multipart { mut upload, parts } => {
                let done = CompletedMultipartUpload::builder().set_parts(Some(parts)).build();
                let req = store.client.complete_multipart_upload().bucket(bucket).key(&upload.key);
                req.upload_id(&upload.upload_id)
                    .multipart_upload(done)
                    .send()
                    .await
                    .map_err(|e| sdk("complete multipart upload", e))?;
                upload.armed = false;
            }
        }
        Ok(BlobRef { digest, size, location, chunks: None })
    }

    async fn discard(self: Box<Self>) -> Result<(), ArtifactError> {
        match self.pending {
            Pending::Small(_) => Ok(()),
            Pending::Multipart { upload, .. } => upload.abort().await,
        }
    }
}

/// Part uploads in flight.
type Inflight = FuturesUnordered<JoinHandle<Result<CompletedPart, ArtifactError>>>;

/// Waits for the next in-flight part to finish, recording it.
async fn reap(inflight: &mut Inflight, parts: &mut Vec<CompletedPart>) -> Result<(), ArtifactError> {
    if let Some(joined) = inflight.next().await {
        let part = joined.map_err(|e| ArtifactError::Internal(format!("part upload task: {e}")))??;
        parts.push(part);
    }
    Ok(())
}

/// Aborts every in-flight part task when dropped (error or cancellation).
struct AbortOnDrop<'a>(&'a mut Inflight);

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        for task in self.0.iter() {
            task.abort();
        }
    }
}

#[async_trait]
impl ArtifactStore for S3Store {
    async fn stage(&self, mut body: ByteStream) -> Result<Box<dyn StagedBlob>, ArtifactError> {
        let part_size = self.settings.part_size;
        let location = format!("blobs/{}", uuid::Uuid::now_v7().simple());
        let (mut hasher, mut size) = (Sha256::new(), 0u64);
        let mut buf = BytesMut::with_capacity(part_size);
        let mut upload: Option<Multipart> = None;
        let mut parts = Vec::new();
        let mut inflight = Inflight::new();
        let guard = AbortOnDrop(&mut inflight);
        let mut next_part = 1;
        while let Some(chunk) = body.next().await {
            let mut chunk = chunk?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            // Fill parts exactly: a part buffer never grows past `part_size`.
            while !chunk.is_empty() {
                let take = (part_size - buf.len()).min(chunk.len());
                buf.extend_from_slice(&chunk.split_to(take));
                if buf.len() == part_size {
                    let part = std::mem::replace(&mut buf, BytesMut::with_capacity(part_size)).freeze();
                    self.send_part(&location, &mut upload, guard.0, &mut parts, next_part, part).await?;
                    next_part += 1;
                }
            }
        }
        if upload.is_some() && !buf.is_empty() {
            let part = std::mem::take(&mut buf).freeze();
            self.send_part(&location, &mut upload, guard.0, &mut parts, next_part, part).await?;
        }
        while !guard.0.is_empty() {
            reap(guard.0, &mut parts).await?;
        }
        drop(guard);
        parts.sort_by_key(|p| p.part_number);
        let digest = ContentDigest::from_bytes(&hasher.finalize())?;
        let pending = match upload {
            None => Pending::Small(buf.freeze()),
            Some(upload) => Pending::Multipart { upload, parts },
        };
        Ok(Box::new(S3Staged { store: self.clone(), location, digest, size, pending }))
    }

    async fn open(&self, blob: &BlobRef, range: Option<ByteRange>) -> Result<OpenedBlob, ArtifactError> {
        let mut req = self.client.get_object().bucket(&self.settings.bucket).key(self.key_of(&blob.location));
        if let Some(r) = range {
            req = req.range(format!("bytes={}-{}", r.start, r.end));
        }
        let out = match req.send().await {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                return Err(ArtifactError::Missing(blob.location.clone()));
            }
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 416) => {
                // The object is shorter than the committed size.
                return Err(ArtifactError::Corrupt(format!("{} is shorter than {} bytes", blob.location, blob.size)));
            }
            Err(e) => return Err(sdk("get object", e)),
        };
        let total_size = match (range, out.content_range()) {
            (Some(_), Some(cr)) => cr.rsplit('/').next().and_then(|t| t.parse().ok()),
            (None, _) => out.content_length().and_then(|n| u64::try_from(n).ok()),
            (Some(_), None) => None,
        };
        let total_size = total_size
            .ok_or_else(|| ArtifactError::Unavailable("S3 get object: no object size in the response".into()))?;
        let body = futures::stream::unfold(Some(out.body), |state| async move {
            let mut b = state?;
            match b.next().await {
                None => None,
                Some(Ok(bytes)) => Some((Ok(bytes), Some(b))),
                Some(Err(e)) => Some((Err(ArtifactError::Unavailable(format!("S3 read: {e}"))), None)),
            }
        });
        Ok(OpenedBlob { total_size, body: Box::pin(body) })
    }

    async fn delete(&self, location: &str) -> Result<(), ArtifactError> {
        let req = self.client.delete_object().bucket(&self.settings.bucket).key(self.key_of(location));
        req.send().await.map_err(|e| sdk("delete object", e))?;
        Ok(())
    }

    async fn list_finalized(&self, older_than_ms: u64) -> Result<Vec<String>, ArtifactError> {
        let s = &self.settings;
        let cutoff = std::time::SystemTime::now()
            .checked_sub(std::time::Duration::from_millis(older_than_ms))
            .unwrap_or(std::time::UNIX_EPOCH);
        let mut out = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&s.bucket)
            .prefix(format!("{}blobs/", s.prefix))
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| sdk("list objects", e))?;
            for obj in page.contents() {
                let old = obj
                    .last_modified()
                    .and_then(|t| std::time::SystemTime::try_from(*t).ok())
                    .is_some_and(|t| t < cutoff);
                if let (true, Some(location)) = (old, obj.key().and_then(|k| k.strip_prefix(s.prefix.as_str()))) {
                    out.push(location.to_string());
                }
            }
        }
        Ok(out)
    }

    async fn sweep_staging(&self, older_than_ms: u64) -> Result<u64, ArtifactError> {
        let s = &self.settings;
        let req = self.client.list_multipart_uploads().bucket(&s.bucket).prefix(format!("{}blobs/", s.prefix));
        let out = match req.send().await {
            Ok(out) => out,
            Err(e) => {
                // Not every server lists uploads (s3s-fs does not); on AWS add a lifecycle rule
                // `AbortIncompleteMultipartUpload` as well.
                tracing::debug!(error = %aws_sdk_s3::error::DisplayErrorContext(&e), "cannot list multipart uploads");
                return Ok(0);
            }
        };
        let now = std::time::SystemTime::now();
        let cutoff = now.checked_sub(std::time::Duration::from_millis(older_than_ms)).unwrap_or(std::time::UNIX_EPOCH);
        let mut aborted = 0;
        for u in out.uploads() {
            let old = u.initiated().and_then(|t| std::time::SystemTime::try_from(*t).ok()).is_some_and(|t| t < cutoff);
            if let (true, Some(key), Some(id)) = (old, u.key(), u.upload_id()) {
                let req = self.client.abort_multipart_upload().bucket(&s.bucket).key(key).upload_id(id);
                if req.send().await.is_ok() {
                    aborted += 1;
                }
            }
        }
        Ok(aborted)
    }
}

impl S3Store {
    /// Starts the multipart upload on the first part, waits for room, then uploads in the background.
    async fn send_part(
        &self,
        location: &str,
        upload: &mut Option<Multipart>,
        inflight: &mut Inflight,
        parts: &mut Vec<CompletedPart>,
        n: i32,
        part: Bytes,
    ) -> Result<(), ArtifactError> {
        if upload.is_none() {
            *upload = Some(self.create_multipart(location).await?);
        }
        while inflight.len() >= self.settings.concurrency {
            reap(inflight, parts).await?;
        }
        let (store, key) = (self.clone(), self.key_of(location));
        let id = upload.as_ref().map(|u| u.upload_id.clone()).unwrap_or_default();
        inflight.push(tokio::spawn(async move { store.upload_part(key, id, n, part).await }));
        Ok(())
    }

    async fn create_multipart(&self, location: &str) -> Result<Multipart, ArtifactError> {
        let key = self.key_of(location);
        let req = self.client.create_multipart_upload().bucket(&self.settings.bucket).key(&key);
        let out = req.send().await.map_err(|e| sdk("create multipart upload", e))?;
        let upload_id = out
            .upload_id
            .ok_or_else(|| ArtifactError::Unavailable("S3 create multipart upload: no upload id".into()))?;
        Ok(Multipart { store: self.clone(), key, upload_id, armed: true })
    }
}
