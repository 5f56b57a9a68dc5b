-- Pinned upstream definitions (SQLite). One row per (upstream, kind, name), e.g. an MCP tool;
-- the digest is RFC 8785 + SHA-256 of its schemas. A row is usable while observed_digest equals
-- approved_digest; discovery updates observed_digest only, approval copies it over.

CREATE TABLE upstream_bindings (
    upstream        TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    approved_digest TEXT,
    observed_digest TEXT    NOT NULL,
    approved_by     TEXT,
    updated_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (upstream, kind, name)
) STRICT;
