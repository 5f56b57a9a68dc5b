//! Verified reads: bytes are handed out only as far as they can be trusted, and a failure is
//! [`ArtifactError::Corrupt`] (logged and counted). Whole reads hash everything with SHA-256 and
//! hold the last chunk back until the digest and size match, so a reader of corrupt bytes never
//! receives a complete body. Range reads verify per chunk (see [`crate::chunks`]).

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use switchyard_contract::{ArtifactError, BlobRef, ByteRange, ByteStream};

static CORRUPT_READS: AtomicU64 = AtomicU64::new(0);

/// Reads that failed verification since the process started.
pub fn corrupt_reads() -> u64 {
    CORRUPT_READS.load(Ordering::Relaxed)
}

/// Records a verification failure and returns the typed error.
pub(crate) fn corrupt(blob: &BlobRef, detail: String) -> ArtifactError {
    CORRUPT_READS.fetch_add(1, Ordering::Relaxed);
    tracing::error!(digest = %blob.digest, location = %blob.location, %detail, "artifact bytes failed verification");
    ArtifactError::Corrupt(detail)
}

/// What the input stream is and what to emit from it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Check {
    /// The input is the whole object: check size and SHA-256; emit only `window` of it.
    Whole { window: ByteRange },
    /// The input is only `len` bytes of a range: check the length.
    Length { len: u64 },
}

struct State {
    inner: ByteStream,
    blob: BlobRef,
    check: Check,
    hasher: Sha256,
    pos: u64,
    held: Option<Bytes>,
}

impl State {
    /// The part of `chunk` (which starts at input offset `at`) that lies in the window.
    fn clip(&self, chunk: Bytes, at: u64) -> Option<Bytes> {
        let Check::Whole { window } = self.check else { return Some(chunk) };
        let end = at + chunk.len() as u64; // exclusive
        let (lo, hi) = (window.start.max(at), (window.end + 1).min(end));
        (lo < hi).then(|| chunk.slice((lo - at) as usize..(hi - at) as usize))
    }

    fn finish(&mut self) -> Result<(), ArtifactError> {
        let expected = match self.check {
            Check::Whole { .. } => self.blob.size,
            Check::Length { len } => len,
        };
        if self.pos != expected {
            return Err(corrupt(&self.blob, format!("read {} bytes, expected {expected}", self.pos)));
        }
        if let Check::Whole { .. } = self.check {
            let got = hex::encode(std::mem::take(&mut self.hasher).finalize());
            if got != self.blob.digest.as_hex() {
                return Err(corrupt(&self.blob, format!("bytes hash to sha256:{got}, expected {}", self.blob.digest)));
            }
        }
        Ok(())
    }
}

/// Wraps `inner` (see [`Check`]).
pub(crate) fn verified(inner: ByteStream, blob: BlobRef, check: Check) -> ByteStream {
    let state = State { inner, blob, check, hasher: Sha256::new(), pos: 0, held: None };
    Box::pin(futures::stream::unfold(Some(state), |state| async move {
        let mut s = state?;
        loop {
            match s.inner.next().await {
                Some(Ok(chunk)) => {
                    let at = s.pos;
                    s.pos += chunk.len() as u64;
                    let limit = match s.check {
                        Check::Whole { .. } => s.blob.size,
                        Check::Length { len } => len,
                    };
                    if s.pos > limit {
                        let e = corrupt(&s.blob, format!("object is longer than {limit} bytes"));
                        return Some((Err(e), None));
                    }
                    if let Check::Whole { .. } = s.check {
                        s.hasher.update(&chunk);
                    }
                    if let Some(part) = s.clip(chunk, at)
                        && let Some(prev) = s.held.replace(part)
                    {
                        return Some((Ok(prev), Some(s)));
                    }
                }
                Some(Err(e)) => return Some((Err(e), None)),
                None => {
                    return match s.finish() {
                        Ok(()) => s.held.take().map(|last| (Ok(last), None)),
                        Err(e) => Some((Err(e), None)),
                    };
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_contract::ContentDigest;

    fn blob(data: &[u8]) -> BlobRef {
        let digest = ContentDigest::from_bytes(&Sha256::digest(data)).unwrap();
        BlobRef { digest, size: data.len() as u64, location: "x".into(), chunks: None }
    }

    fn input(data: &'static [u8], chunk: usize) -> ByteStream {
        let parts: Vec<Result<Bytes, ArtifactError>> = data.chunks(chunk).map(|c| Ok(Bytes::from_static(c))).collect();
        Box::pin(futures::stream::iter(parts))
    }

    async fn collect(s: ByteStream) -> (Vec<u8>, Option<ArtifactError>) {
        let mut out = Vec::new();
        let mut s = s;
        while let Some(item) = s.next().await {
            match item {
                Ok(b) => out.extend_from_slice(&b),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    const DATA: &[u8] = b"the quick brown fox jumps over the lazy dog";

    #[tokio::test]
    async fn whole_reads_pass_and_windows_clip() {
        let b = blob(DATA);
        let all = ByteRange { start: 0, end: DATA.len() as u64 - 1 };
        let (out, err) = collect(verified(input(DATA, 5), b.clone(), Check::Whole { window: all })).await;
        assert_eq!((out.as_slice(), err), (DATA, None));
        let w = ByteRange { start: 4, end: 18 };
        let (out, err) = collect(verified(input(DATA, 5), b, Check::Whole { window: w })).await;
        assert_eq!((out.as_slice(), err), (&DATA[4..=18], None));
    }

    #[tokio::test]
    async fn corrupt_bytes_never_complete_the_body() {
        let b = blob(b"the quick brown fox jumps over the lazy cat");
        let all = ByteRange { start: 0, end: DATA.len() as u64 - 1 };
        let before = corrupt_reads();
        let (out, err) = collect(verified(input(DATA, 5), b, Check::Whole { window: all })).await;
        assert!(out.len() < DATA.len(), "the last chunk is withheld");
        assert!(matches!(err, Some(ArtifactError::Corrupt(_))));
        assert!(corrupt_reads() > before);
    }
}
