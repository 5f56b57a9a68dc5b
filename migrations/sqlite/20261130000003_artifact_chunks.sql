-- Per-chunk checksums of artifact blobs (SQLite): CRC-32C of each `chunk_size` slice, 8 hex
-- digits each, in order. Range reads verify the chunks they touch; whole reads verify the
-- SHA-256. NULL for blobs written without them (both columns are written together).

ALTER TABLE artifact_blobs ADD COLUMN chunk_size INTEGER CHECK (chunk_size > 0);
ALTER TABLE artifact_blobs ADD COLUMN chunk_crc32c TEXT;
