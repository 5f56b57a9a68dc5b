-- Per-chunk checksums of artifact blobs (PostgreSQL): CRC-32C of each `chunk_size` slice,
-- 8 hex digits each, in order. Range reads verify the chunks they touch; whole reads verify the
-- SHA-256. NULL for blobs written without them.

ALTER TABLE artifact_blobs ADD COLUMN chunk_size BIGINT CHECK (chunk_size > 0);
ALTER TABLE artifact_blobs ADD COLUMN chunk_crc32c TEXT;
ALTER TABLE artifact_blobs ADD CONSTRAINT artifact_blobs_chunks_paired
    CHECK ((chunk_size IS NULL) = (chunk_crc32c IS NULL));
