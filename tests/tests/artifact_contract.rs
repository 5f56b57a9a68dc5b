//! The artifact contract suite: every test runs through `Artifacts` (the byte store and the
//! metadata index together) on the filesystem store and on a real S3-compatible server
//! (s3s-fs on 127.0.0.1), each with the index on SQLite and on a throw-away PostgreSQL.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use switchyard_artifacts::{Artifacts, FsStore, Policy, PutRequest, RangeSpec, S3Store};
use switchyard_contract::{
    ArtifactError, ArtifactMeta, ArtifactStore, ByteStream, ErrorKind, InvocationId, Keep, TenantId,
};
use switchyard_store::StoreOptions;
use switchyard_tests::s3::S3Server;

const MIB: usize = 1024 * 1024;

enum Bytestore {
    Fs(FsStore),
    S3 { store: S3Store, server: S3Server },
}

struct Backend {
    artifacts: Artifacts,
    bytes: Bytestore,
    store: Arc<dyn ArtifactStore>,
    url: String,
    _dirs: Vec<tempfile::TempDir>,
}

fn policy() -> Policy {
    Policy {
        retention: BTreeMap::from([("default".into(), Keep::Forever), ("short".into(), Keep::ForMs(1))]),
        default_class: "default".into(),
        gc_grace_ms: 0,
    }
}

async fn index(url: &str) -> Arc<dyn switchyard_contract::ArtifactIndex> {
    switchyard_store::connect(url, &StoreOptions::default()).await.unwrap_or_else(|e| panic!("{e}")).artifacts
}

async fn backend(s3: bool, postgres: bool) -> Backend {
    let mut dirs = Vec::new();
    let url = if postgres {
        switchyard_tests::pg::database().await
    } else {
        let (dir, url) = switchyard_tests::sqlite_url();
        dirs.push(dir);
        url
    };
    let bytes = if s3 {
        let server = S3Server::start();
        let store = S3Store::new(server.settings("artifacts")).unwrap_or_else(|e| panic!("{e}"));
        store.create_bucket_if_missing().await.unwrap_or_else(|e| panic!("{e}"));
        Bytestore::S3 { store, server }
    } else {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = FsStore::open(dir.path().join("artifacts")).await.unwrap_or_else(|e| panic!("{e}"));
        dirs.push(dir);
        Bytestore::Fs(store)
    };
    let store: Arc<dyn ArtifactStore> = match &bytes {
        Bytestore::Fs(s) => Arc::new(s.clone()),
        Bytestore::S3 { store, .. } => Arc::new(store.clone()),
    };
    let artifacts = Artifacts::new(store.clone(), index(&url).await, policy());
    Backend { artifacts, bytes, store, url, _dirs: dirs }
}

/// Generates `mod name { fs_sqlite, fs_postgres, s3_sqlite, s3_postgres }`.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fs_sqlite() {
                super::$name(&super::backend(false, false).await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fs_postgres() {
                super::$name(&super::backend(false, true).await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn s3_sqlite() {
                super::$name(&super::backend(true, false).await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn s3_postgres() {
                super::$name(&super::backend(true, true).await).await;
            }
        }
    )*};
}

contract!(
    identical_bytes_are_stored_once,
    large_bodies_stream_in_parts_and_read_back_verified,
    a_failed_upload_leaves_nothing,
    an_upload_dropped_halfway_leaves_nothing,
    a_crashed_upload_is_never_readable_and_its_leftovers_are_swept,
    corrupt_bytes_are_detected_on_read,
    range_reads_return_exact_slices,
    collector_removes_expired_data_and_keeps_shared_bytes,
    rows_are_unique_and_tenants_are_isolated,
    bytes_finalized_but_never_committed_are_swept,
);

// ---------------------------------------------------------------- helpers

impl Backend {
    /// Finalized objects in the store.
    async fn objects(&self) -> usize {
        match &self.bytes {
            Bytestore::Fs(s) => files_under(&s.root().join("sha256")),
            Bytestore::S3 { store, .. } => {
                let out = store.client().list_objects_v2().bucket("artifacts").send().await;
                out.unwrap_or_else(|e| panic!("list objects: {e:?}")).key_count().unwrap_or(0) as usize
            }
        }
    }

    /// Staged leftovers: temp files, or multipart parts on the server's disk.
    fn staging(&self) -> usize {
        match &self.bytes {
            Bytestore::Fs(s) => files_under(&s.root().join("tmp")),
            Bytestore::S3 { server, .. } => std::fs::read_dir(server.root())
                .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().contains(".part-")).count())
                .unwrap_or(0),
        }
    }

    /// Replaces the stored bytes of `meta` behind the store's back.
    async fn tamper(&self, meta: &ArtifactMeta, bytes: Vec<u8>) {
        match &self.bytes {
            Bytestore::Fs(s) => {
                let path = s.path_of(&meta.location).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
            }
            Bytestore::S3 { store, .. } => {
                let req = store.client().put_object().bucket("artifacts").key(store.key_of(&meta.location));
                req.body(bytes.into()).send().await.unwrap_or_else(|e| panic!("put object: {e:?}"));
            }
        }
    }

    /// Another gateway replica: its own index connection, the same bytes.
    async fn replica(&self) -> Artifacts {
        Artifacts::new(self.store.clone(), index(&self.url).await, policy())
    }

    async fn put(&self, tenant: &str, name: &str, class: &str, data: &[u8]) -> ArtifactMeta {
        let r =
            self.artifacts.put(request(tenant, InvocationId::new(), name, class), body(data.to_vec(), 64 * 1024)).await;
        r.unwrap_or_else(|e| panic!("put {name}: {e}"))
    }

    async fn read(&self, meta: &ArtifactMeta, range: Option<RangeSpec>) -> (Vec<u8>, Option<ArtifactError>) {
        match self.artifacts.open(Some(&meta.tenant), meta.id, range).await {
            Ok(d) => collect(d.body).await,
            Err(e) => (Vec::new(), Some(e)),
        }
    }
}

fn files_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum()
}

fn tenant(t: &str) -> TenantId {
    TenantId::new(t).unwrap_or_else(|e| panic!("{e}"))
}

fn request(t: &str, invocation: InvocationId, name: &str, class: &str) -> PutRequest {
    PutRequest {
        tenant: tenant(t),
        invocation,
        name: name.into(),
        media_type: "application/octet-stream".into(),
        chunk_seq: 0,
        retention_class: Some(class.into()),
    }
}

/// Deterministic, incompressible-looking bytes.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn body(data: Vec<u8>, chunk: usize) -> ByteStream {
    let data = Bytes::from(data);
    let chunks: Vec<Result<Bytes, ArtifactError>> =
        (0..data.len()).step_by(chunk).map(|i| Ok(data.slice(i..(i + chunk).min(data.len())))).collect();
    Box::pin(futures::stream::iter(chunks))
}

async fn collect(mut s: ByteStream) -> (Vec<u8>, Option<ArtifactError>) {
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        match item {
            Ok(b) => out.extend_from_slice(&b),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

async fn assert_empty(b: &Backend, tenants: &[&str]) {
    for t in tenants {
        let page = b.artifacts.list(&tenant(t), None, 100, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(page.items.is_empty(), "no artifact row: {:?}", page.items);
    }
    assert_eq!(b.artifacts.index().blob_count().await.ok(), Some(0), "no blob row");
    assert_eq!(b.objects().await, 0, "no readable object");
    assert_eq!(b.staging(), 0, "no staging leftovers");
}

// ---------------------------------------------------------------- the suite

async fn identical_bytes_are_stored_once(b: &Backend) {
    let (x, y) = (data(300_000, 1), data(300_000, 2));
    let first = b.put("t1", "a.bin", "default", &x).await;
    let again = b.put("t2", "b.bin", "default", &x).await;
    let other = b.put("t1", "c.bin", "default", &y).await;
    assert_eq!(first.sha256.as_hex(), sha(&x));
    assert_eq!((first.size, again.size), (x.len() as u64, x.len() as u64));
    assert_eq!(first.sha256, again.sha256);
    assert_eq!(first.location, again.location, "the second upload references the first bytes");
    assert_ne!(first.id, again.id);
    assert_eq!(b.artifacts.index().blob_count().await.ok(), Some(2));
    assert_eq!(b.objects().await, 2, "identical bytes are stored once");
    assert_eq!(b.staging(), 0);
    for (meta, expected) in [(&first, &x), (&again, &x), (&other, &y)] {
        let (got, err) = b.read(meta, None).await;
        assert!(err.is_none(), "{err:?}");
        assert!(&got == expected);
    }
    // The service counts what came in (deduplicated uploads too) and what went out.
    assert_eq!(b.artifacts.traffic(), (900_000, 900_000), "bytes in and out (the metrics' source)");
}

async fn large_bodies_stream_in_parts_and_read_back_verified(b: &Backend) {
    // 12 MiB + 5 bytes: three 5 MiB-or-less parts on S3 (part size 5 MiB in the harness).
    let big = data(12 * MIB + 5, 3);
    let inv = InvocationId::new();
    let meta = b.artifacts.put(request("t1", inv, "big.bin", "default"), body(big.clone(), 100_000)).await;
    let meta = meta.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((meta.size, meta.sha256.as_hex().to_string()), (big.len() as u64, sha(&big)));
    let (got, err) = b.read(&meta, None).await;
    assert!(err.is_none(), "{err:?}");
    assert!(got == big);
    let again = b.put("t1", "big-again.bin", "default", &big).await;
    assert_eq!(again.location, meta.location);
    assert_eq!(b.objects().await, 1);
    assert_eq!(b.staging(), 0, "the duplicate multipart upload was aborted");
}

/// A body that yields `good` bytes, then fails (the producer died) or hangs forever.
fn broken_body(good: usize, hang: bool) -> ByteStream {
    let head = futures::stream::iter(vec![Ok(Bytes::from(data(good, 9)))]);
    if hang {
        Box::pin(head.chain(futures::stream::pending()))
    } else {
        Box::pin(head.chain(futures::stream::iter(vec![Err(ArtifactError::Body("producer died".into()))])))
    }
}

async fn a_failed_upload_leaves_nothing(b: &Backend) {
    for good in [1000, 11 * MIB] {
        let r = b.artifacts.put(request("t1", InvocationId::new(), "x", "default"), broken_body(good, false)).await;
        assert!(matches!(r, Err(ArtifactError::Body(_))), "{r:?}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_empty(b, &["t1"]).await;
}

async fn an_upload_dropped_halfway_leaves_nothing(b: &Backend) {
    let put = b.artifacts.put(request("t1", InvocationId::new(), "x", "default"), broken_body(11 * MIB, true));
    let r = tokio::time::timeout(Duration::from_secs(2), put).await;
    assert!(r.is_err(), "the upload was still running when it was killed");
    // Aborting the multipart upload runs in the background after the drop.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while b.staging() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_empty(b, &["t1"]).await;
}

/// What a process killed mid-upload (SIGKILL: no destructor runs) leaves behind.
async fn a_crashed_upload_is_never_readable_and_its_leftovers_are_swept(b: &Backend) {
    match &b.bytes {
        Bytestore::Fs(s) => {
            let leftover = s.root().join("tmp").join(format!("{}.part", uuid::Uuid::now_v7().simple()));
            std::fs::write(&leftover, data(100_000, 14)).unwrap_or_else(|e| panic!("{e}"));
        }
        Bytestore::S3 { store, .. } => {
            let c = store.client();
            let mpu = c.create_multipart_upload().bucket("artifacts").key("blobs/crashed").send().await;
            let id = mpu.unwrap_or_else(|e| panic!("{e:?}")).upload_id.unwrap_or_default();
            let part = c.upload_part().bucket("artifacts").key("blobs/crashed").upload_id(id).part_number(1);
            part.body(data(5 * MIB, 14).into()).send().await.unwrap_or_else(|e| panic!("{e:?}"));
        }
    }
    assert_eq!(b.objects().await, 0, "an unfinished upload is not an object");
    let report = b.artifacts.collect_garbage().await.unwrap_or_else(|e| panic!("{e}"));
    if let Bytestore::Fs(_) = &b.bytes {
        // S3: aborted by the server's lifecycle rule (s3s-fs cannot list uploads).
        assert_eq!((report.swept_staging, b.staging()), (1, 0), "{report:?}");
    }
    assert_eq!(b.objects().await, 0);
    assert!(b.artifacts.list(&tenant("t1"), None, 10, None).await.is_ok_and(|p| p.items.is_empty()));
}

async fn corrupt_bytes_are_detected_on_read(b: &Backend) {
    let before = switchyard_artifacts::corrupt_reads();
    let x = data(700_000, 4);
    // Same length, one bit flipped: caught by the digest, and the body never completes.
    let meta = b.put("t1", "flip.bin", "default", &x).await;
    let mut flipped = x.clone();
    flipped[350_000] ^= 1;
    b.tamper(&meta, flipped).await;
    let (got, err) = b.read(&meta, None).await;
    assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "{err:?}");
    assert!(got.len() < x.len(), "a corrupt body is never delivered in full");
    // A range is verified by the 1 MiB chunks it touches (CRC-32C): a range in a corrupt
    // chunk is refused, a range elsewhere in the same object is served.
    let (_, err) = b.read(&meta, Some(RangeSpec::FromTo(0, 9))).await;
    assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "{err:?}");
    let big = data(3 * MIB + 17, 8);
    let meta = b.put("t1", "chunks.bin", "default", &big).await;
    let mut bad = big.clone();
    bad[2 * MIB + MIB / 2] ^= 0x80;
    b.tamper(&meta, bad).await;
    let (got, err) = b.read(&meta, Some(RangeSpec::FromTo(100, 1_500_000))).await;
    assert!(err.is_none() && got == big[100..=1_500_000], "untouched chunks verify: {err:?}");
    let (got, err) = b.read(&meta, Some(RangeSpec::FromTo(2 * MIB as u64 - 10, 2 * MIB as u64 + 10))).await;
    assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "{err:?}");
    assert_eq!(got, big[2 * MIB - 10..2 * MIB], "only the verified chunk's bytes were released");
    let (_, err) = b.read(&meta, Some(RangeSpec::Suffix(5))).await;
    assert!(err.is_none(), "the last, short chunk verifies: {err:?}");
    // Truncated: caught before a byte is served.
    let meta = b.put("t1", "short.bin", "default", &data(500_000, 5)).await;
    b.tamper(&meta, data(1000, 5)).await;
    let (got, err) = b.read(&meta, None).await;
    assert!(matches!(err, Some(ArtifactError::Corrupt(_))) && got.is_empty(), "{err:?}");
    // Gone: reported as corruption of the committed artifact, not as "not found".
    let meta = b.put("t1", "gone.bin", "default", &data(1000, 6)).await;
    b.store.delete(&meta.location).await.unwrap_or_else(|e| panic!("{e}"));
    let (_, err) = b.read(&meta, None).await;
    assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "{err:?}");
    let e: switchyard_contract::Error = ArtifactError::Corrupt("x".into()).into();
    assert_eq!(e.kind(), ErrorKind::Internal);
    assert!(switchyard_artifacts::corrupt_reads() >= before + 5, "verification failures are counted");
}

async fn range_reads_return_exact_slices(b: &Backend) {
    let x = data(1_000_003, 7);
    let meta = b.put("t1", "r.bin", "default", &x).await;
    let n = x.len() as u64;
    let cases = [
        (RangeSpec::FromTo(10, 99), 10..100),
        (RangeSpec::FromTo(0, 0), 0..1),
        (RangeSpec::FromTo(999_990, 5_000_000), 999_990..x.len()),
        (RangeSpec::From(n - 5), x.len() - 5..x.len()),
        (RangeSpec::Suffix(7), x.len() - 7..x.len()),
        (RangeSpec::FromTo(300_000, 700_000), 300_000..700_001),
    ];
    for (spec, want) in cases {
        let d = b.artifacts.open(Some(&meta.tenant), meta.id, Some(spec)).await;
        let d = d.unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let r = d.range.unwrap_or_else(|| panic!("{spec:?}: no range"));
        assert_eq!((r.start as usize, r.end as usize + 1), (want.start, want.end));
        let (got, err) = collect(d.body).await;
        assert!(err.is_none(), "{spec:?}: {err:?}");
        assert!(got == x[want.clone()], "{spec:?}");
    }
    let r = b.artifacts.open(Some(&meta.tenant), meta.id, Some(RangeSpec::From(n))).await;
    assert!(matches!(r, Err(ArtifactError::RangeNotSatisfiable { size }) if size == n), "{r:?}");
}

async fn collector_removes_expired_data_and_keeps_shared_bytes(b: &Backend) {
    let (x, y) = (data(200_000, 10), data(6 * MIB, 11));
    let short_shared = b.put("t1", "a", "short", &x).await;
    let kept = b.put("t1", "b", "default", &x).await;
    let short_alone = b.put("t1", "c", "short", &y).await;
    assert_eq!(kept.expires_ms, None);
    assert!(short_shared.expires_ms.is_some_and(|e| e > short_shared.created_ms));
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Two replicas collect at once: each expired row and each blob is removed exactly once.
    let other = b.replica().await;
    let (r1, r2) = tokio::join!(b.artifacts.collect_garbage(), other.collect_garbage());
    let (r1, r2) = (r1.unwrap_or_else(|e| panic!("{e}")), r2.unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(r1.expired_artifacts + r2.expired_artifacts, 2, "{r1:?} {r2:?}");
    assert_eq!(r1.deleted_blobs + r2.deleted_blobs, 1, "{r1:?} {r2:?}");
    assert_eq!(r1.deleted_bytes + r2.deleted_bytes, y.len() as u64);
    for gone in [&short_shared, &short_alone] {
        let r = b.artifacts.get(Some(&gone.tenant), gone.id).await;
        assert!(matches!(r, Err(ArtifactError::NotFound)), "{r:?}");
    }
    let (got, err) = b.read(&kept, None).await;
    assert!(err.is_none() && got == x, "shared bytes still referenced are kept: {err:?}");
    assert_eq!(b.artifacts.index().blob_count().await.ok(), Some(1));
    assert_eq!(b.objects().await, 1);
    let again = b.artifacts.collect_garbage().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, switchyard_artifacts::GcReport::default());
    // Bytes collected earlier can be stored again.
    let back = b.put("t1", "d", "default", &y).await;
    let (got, err) = b.read(&back, None).await;
    assert!(err.is_none() && got == y, "{err:?}");
}

async fn rows_are_unique_and_tenants_are_isolated(b: &Backend) {
    let inv = InvocationId::new();
    let x = data(1000, 12);
    let meta = b.artifacts.put(request("t1", inv, "out", "default"), body(x.clone(), 100)).await;
    let meta = meta.unwrap_or_else(|e| panic!("{e}"));
    let dup = b.artifacts.put(request("t1", inv, "out", "default"), body(data(900, 13), 100)).await;
    let dup_kind = dup.map_err(switchyard_contract::Error::from).map_err(|e| e.kind());
    assert_eq!(dup_kind.err(), Some(ErrorKind::Conflict), "one row per (invocation, name, chunk)");
    let mut chunk = request("t1", inv, "out", "default");
    chunk.chunk_seq = 1;
    let second = b.artifacts.put(chunk, body(data(900, 13), 100)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.objects().await, 2, "the refused upload left no bytes");
    let r = b.artifacts.get(Some(&tenant("t2")), meta.id).await;
    assert!(matches!(r, Err(ArtifactError::NotFound)), "another tenant sees nothing: {r:?}");
    // The faces' read-back (A2A kept parts) is scoped the same way.
    use switchyard_contract::ArtifactKeeper as _;
    let r = b.artifacts.read(Some(&tenant("t2")), meta.id).await;
    assert!(matches!(r, Err(ArtifactError::NotFound)), "another tenant's kept part is not read back: {r:?}");
    assert_eq!(b.artifacts.read(Some(&tenant("t1")), meta.id).await.ok(), Some(x.clone()));
    let page = b.artifacts.list(&tenant("t1"), Some(inv), 1, None).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page.items.iter().map(|m| m.id).collect::<Vec<_>>(), vec![second.id]);
    let cursor = page.next_cursor.unwrap_or_else(|| panic!("a full page has a cursor"));
    let page = b.artifacts.list(&tenant("t1"), Some(inv), 1, Some(&cursor)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page.items.iter().map(|m| m.id).collect::<Vec<_>>(), vec![meta.id]);
    assert!(b.artifacts.list(&tenant("t2"), None, 10, None).await.is_ok_and(|p| p.items.is_empty()));
    let bad = b.artifacts.put(request("t1", inv, "z", "nope"), body(x, 100)).await;
    assert!(matches!(bad, Err(ArtifactError::Invalid(_))), "{bad:?}");
}

/// A crash between finalizing the bytes and committing the row leaves an object no blob row
/// names: unreadable through the index, and deleted by the collector once past the grace
/// period. Committed bytes are kept.
async fn bytes_finalized_but_never_committed_are_swept(b: &Backend) {
    let kept = b.put("t1", "kept.bin", "default", &data(300_000, 21)).await;
    let body: ByteStream = Box::pin(futures::stream::iter([Ok(bytes::Bytes::from(data(200_000, 22)))]));
    let staged = b.store.stage(body).await.unwrap_or_else(|e| panic!("{e}"));
    let orphan = staged.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(b.store.open(&orphan, None).await.is_ok(), "the finalized bytes exist");
    let report = b.artifacts.collect_garbage().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.swept_orphans, 1, "{report:?}");
    assert!(matches!(b.store.open(&orphan, None).await, Err(ArtifactError::Missing(_))), "the orphan is gone");
    let (got, err) = b.read(&kept, None).await;
    assert!(err.is_none() && got == data(300_000, 21), "committed bytes are kept");
    let again = b.artifacts.collect_garbage().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.swept_orphans, 0);
}
