-- Sealed secrets (SQLite): an upstream's OAuth tokens and client registration, encrypted by the
-- gateway (AES-256-GCM, key outside the database) before they reach this table.

CREATE TABLE sealed_secrets (
    name          TEXT    PRIMARY KEY NOT NULL,
    sealed        TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;
