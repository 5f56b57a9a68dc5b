-- Artifact metadata (PostgreSQL). The bytes live in the artifact store (filesystem or S3).
-- `artifact_blobs` has one row per distinct SHA-256 (identical bytes are stored once);
-- `artifacts` has one immutable row per artifact, referencing its blob. Times are milliseconds
-- since the Unix epoch on the database clock. No JSON columns, hence no payload_version.

CREATE TABLE artifact_blobs (
    sha256     TEXT   PRIMARY KEY CHECK (length(sha256) = 64),
    size       BIGINT NOT NULL CHECK (size >= 0),
    -- Unique per upload, never rewritten: deleting one location cannot remove newer bytes.
    location   TEXT   NOT NULL UNIQUE,
    -- `deleting`: a collector claimed it; commits wait until the row is gone.
    state      TEXT   NOT NULL CHECK (state IN ('live', 'deleting')),
    -- Last commit that referenced it (or the claim time while deleting).
    touched_ms BIGINT NOT NULL,
    created_ms BIGINT NOT NULL
);

CREATE INDEX artifact_blobs_by_touch ON artifact_blobs (touched_ms);

CREATE TABLE artifacts (
    id              TEXT    PRIMARY KEY,
    tenant          TEXT    NOT NULL,
    -- No foreign key: artifacts may outlive the invocation rows that produced them.
    invocation_id   TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    media_type      TEXT    NOT NULL,
    -- Order among the chunks of an A2A chunked artifact (0 for one chunk).
    chunk_seq       INTEGER NOT NULL CHECK (chunk_seq >= 0),
    size            BIGINT  NOT NULL CHECK (size >= 0),
    sha256          TEXT    NOT NULL REFERENCES artifact_blobs (sha256),
    retention_class TEXT    NOT NULL,
    created_ms      BIGINT  NOT NULL,
    expires_ms      BIGINT,
    UNIQUE (invocation_id, name, chunk_seq)
);

CREATE INDEX artifacts_by_tenant ON artifacts (tenant, created_ms DESC, id DESC);
CREATE INDEX artifacts_by_blob ON artifacts (sha256);
CREATE INDEX artifacts_expiring ON artifacts (expires_ms) WHERE expires_ms IS NOT NULL;

-- Committed artifact rows are immutable (the collector deletes them; nobody updates them).
CREATE FUNCTION switchyard_artifacts_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'artifact % is immutable', OLD.id USING ERRCODE = 'check_violation';
END
$$;

CREATE TRIGGER artifacts_immutable BEFORE UPDATE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION switchyard_artifacts_immutable();

-- A blob's identity (digest, size, location) never changes; only state and touched_ms do.
CREATE FUNCTION switchyard_artifact_blob_identity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.sha256 IS DISTINCT FROM OLD.sha256 OR NEW.size IS DISTINCT FROM OLD.size
       OR NEW.location IS DISTINCT FROM OLD.location THEN
        RAISE EXCEPTION 'artifact blob % is immutable', OLD.sha256 USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER artifact_blobs_identity BEFORE UPDATE ON artifact_blobs
    FOR EACH ROW EXECUTE FUNCTION switchyard_artifact_blob_identity();
