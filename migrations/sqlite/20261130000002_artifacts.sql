-- Artifact metadata (SQLite). The bytes live in the artifact store (filesystem or S3).
-- `artifact_blobs` has one row per distinct SHA-256 (identical bytes are stored once);
-- `artifacts` has one immutable row per artifact, referencing its blob. Times are milliseconds
-- since the Unix epoch. No JSON columns, hence no payload_version.

CREATE TABLE artifact_blobs (
    sha256     TEXT    PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),
    size       INTEGER NOT NULL CHECK (size >= 0),
    location   TEXT    NOT NULL UNIQUE,
    state      TEXT    NOT NULL CHECK (state IN ('live', 'deleting')),
    touched_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX artifact_blobs_by_touch ON artifact_blobs (touched_ms);

CREATE TABLE artifacts (
    id              TEXT    PRIMARY KEY NOT NULL,
    tenant          TEXT    NOT NULL,
    invocation_id   TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    media_type      TEXT    NOT NULL,
    chunk_seq       INTEGER NOT NULL CHECK (chunk_seq >= 0),
    size            INTEGER NOT NULL CHECK (size >= 0),
    sha256          TEXT    NOT NULL REFERENCES artifact_blobs (sha256),
    retention_class TEXT    NOT NULL,
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER,
    UNIQUE (invocation_id, name, chunk_seq)
) STRICT;

CREATE INDEX artifacts_by_tenant ON artifacts (tenant, created_ms DESC, id DESC);
CREATE INDEX artifacts_by_blob ON artifacts (sha256);
CREATE INDEX artifacts_expiring ON artifacts (expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TRIGGER artifacts_immutable BEFORE UPDATE ON artifacts
BEGIN
    SELECT RAISE(ABORT, 'artifact is immutable');
END;

CREATE TRIGGER artifact_blobs_identity BEFORE UPDATE OF sha256, size, location ON artifact_blobs
    WHEN NEW.sha256 IS NOT OLD.sha256 OR NEW.size IS NOT OLD.size OR NEW.location IS NOT OLD.location
BEGIN
    SELECT RAISE(ABORT, 'artifact blob is immutable');
END;
