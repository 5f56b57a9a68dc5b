//! Per-chunk checksums: a write computes the CRC-32C of every [`CHUNK_SIZE`] slice
//! ([`Summer`]); a range read fetches the chunks covering the range ([`chunk_span`]) and releases
//! each only after its checksum matches ([`verified_chunks`]), so a range of a large artifact is
//! verified without reading the whole object.

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use switchyard_contract::{ArtifactError, BlobRef, ByteRange, ByteStream, ChunkSums};

use crate::verify::corrupt;

/// Chunk size for the per-chunk CRC-32C that range reads verify.
pub const CHUNK_SIZE: u32 = 1024 * 1024;

/// Computes [`ChunkSums`] of the bytes flowing through a write.
#[derive(Debug)]
pub(crate) struct Summer {
    cur: crc_fast::Digest,
    filled: usize,
    sums: Vec<u32>,
}

impl Summer {
    pub(crate) fn new() -> Self {
        Self { cur: crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi), filled: 0, sums: Vec::new() }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        let cs = CHUNK_SIZE as usize;
        while !data.is_empty() {
            let take = (cs - self.filled).min(data.len());
            self.cur.update(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled == cs {
                self.sums.push(self.cur.finalize() as u32);
                self.cur = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
                self.filled = 0;
            }
        }
    }

    pub(crate) fn finish(mut self) -> ChunkSums {
        if self.filled > 0 {
            self.sums.push(self.cur.finalize() as u32);
        }
        ChunkSums { chunk_size: CHUNK_SIZE, crc32c: self.sums }
    }
}

/// The chunk-aligned span to fetch for `window`, in input coordinates of a whole object.
pub(crate) fn chunk_span(window: ByteRange, size: u64, chunk_size: u32) -> ByteRange {
    let cs = u64::from(chunk_size);
    let start = window.start / cs * cs;
    let end = ((window.end / cs + 1) * cs).min(size) - 1;
    ByteRange { start, end }
}

/// Verifies `inner` (exactly the bytes of `span`, chunk-aligned) chunk by chunk against `sums`
/// and emits the part of each verified chunk that lies in `window`.
pub(crate) fn verified_chunks(
    inner: ByteStream,
    blob: BlobRef,
    sums: ChunkSums,
    span: ByteRange,
    window: ByteRange,
) -> ByteStream {
    struct S {
        inner: ByteStream,
        blob: BlobRef,
        sums: ChunkSums,
        span: ByteRange,
        window: ByteRange,
        /// Input offset of `buf`'s first byte.
        at: u64,
        buf: BytesMut,
        done: bool,
    }
    impl S {
        /// Length of the chunk starting at `at`.
        fn chunk_len(&self) -> usize {
            let cs = u64::from(self.sums.chunk_size);
            (cs.min(self.span.end + 1 - self.at)) as usize
        }
        /// Verifies the full chunk at the front of `buf`; returns its part inside the window.
        fn release(&mut self) -> Result<Option<Bytes>, ArtifactError> {
            let len = self.chunk_len();
            let chunk = self.buf.split_to(len).freeze();
            let index = (self.at / u64::from(self.sums.chunk_size)) as usize;
            let want = self.sums.crc32c.get(index).copied();
            let got = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &chunk) as u32;
            if want != Some(got) {
                return Err(corrupt(&self.blob, format!("chunk {index} fails its CRC-32C")));
            }
            let at = self.at;
            self.at += len as u64;
            let (lo, hi) = (self.window.start.max(at), (self.window.end + 1).min(self.at));
            Ok((lo < hi).then(|| chunk.slice((lo - at) as usize..(hi - at) as usize)))
        }
    }
    let state = S { at: span.start, inner, blob, sums, span, window, buf: BytesMut::new(), done: false };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        loop {
            if s.done {
                return None;
            }
            if s.at > s.span.end {
                s.done = true;
                if !s.buf.is_empty() || s.inner.next().await.is_some() {
                    let e = corrupt(&s.blob, "object is longer than its committed size".into());
                    return Some((Err(e), s));
                }
                return None;
            }
            if s.buf.len() >= s.chunk_len() {
                match s.release() {
                    Ok(Some(part)) => return Some((Ok(part), s)),
                    Ok(None) => continue,
                    Err(e) => {
                        s.done = true;
                        return Some((Err(e), s));
                    }
                }
            }
            match s.inner.next().await {
                Some(Ok(bytes)) => s.buf.extend_from_slice(&bytes),
                Some(Err(e)) => {
                    s.done = true;
                    return Some((Err(e), s));
                }
                None => {
                    s.done = true;
                    let e = corrupt(&s.blob, format!("object ends before byte {}", s.span.end + 1));
                    return Some((Err(e), s));
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};
    use switchyard_contract::ContentDigest;

    use super::*;

    const DATA: &[u8] = b"the quick brown fox jumps over the lazy dog";

    fn blob(data: &[u8]) -> BlobRef {
        let digest = ContentDigest::from_bytes(&Sha256::digest(data)).unwrap();
        BlobRef { digest, size: data.len() as u64, location: "x".into(), chunks: None }
    }

    fn input(data: &[u8], chunk: usize) -> ByteStream {
        let parts: Vec<Result<Bytes, ArtifactError>> =
            data.chunks(chunk).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        Box::pin(futures::stream::iter(parts))
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

    fn sums(data: &[u8], cs: usize) -> ChunkSums {
        let crc32c =
            data.chunks(cs).map(|c| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, c) as u32).collect();
        ChunkSums { chunk_size: cs as u32, crc32c }
    }

    #[tokio::test]
    async fn ranges_verify_only_their_chunks() {
        let (b, cs) = (blob(DATA), 8usize);
        let size = DATA.len() as u64;
        let good = sums(DATA, cs);
        let mut bad = good.clone();
        bad.crc32c[4] ^= 1; // bytes 32..40
        for (window, sums, ok) in [((9, 20), &good, true), ((9, 20), &bad, true), ((30, 42), &bad, false)] {
            let window = ByteRange { start: window.0, end: window.1 };
            let span = chunk_span(window, size, cs as u32);
            let input = input(&DATA[span.start as usize..=span.end as usize], 3);
            let (out, err) = collect(verified_chunks(input, b.clone(), sums.clone(), span, window)).await;
            if ok {
                assert_eq!((out.as_slice(), err), (&DATA[window.start as usize..=window.end as usize], None));
            } else {
                assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "{err:?}");
                assert_eq!(out.as_slice(), &DATA[30..32], "only verified chunks were released");
            }
        }
        let short = ByteRange { start: 0, end: 9 };
        let span = chunk_span(short, size, cs as u32);
        let (_, err) = collect(verified_chunks(input(&DATA[..12], 5), b, good, span, short)).await;
        assert!(matches!(err, Some(ArtifactError::Corrupt(_))), "a short object is corrupt: {err:?}");
    }

    #[test]
    fn the_summer_matches_one_shot_checksums() {
        let data: Vec<u8> = (0..(CHUNK_SIZE as usize * 2 + 5)).map(|i| i as u8).collect();
        let mut s = Summer::new();
        for piece in data.chunks(77_777) {
            s.update(piece);
        }
        assert_eq!(s.finish(), sums(&data, CHUNK_SIZE as usize));
    }
}
