-- Durable invocations and their journal (SQLite). Times are milliseconds since the Unix epoch.
-- JSON payloads are TEXT and carry `payload_version`.

CREATE TABLE invocations (
    id               TEXT    PRIMARY KEY NOT NULL,
    tenant           TEXT    NOT NULL,
    subject          TEXT    NOT NULL,
    upstream         TEXT    NOT NULL,
    operation        TEXT    NOT NULL,
    effect           TEXT    NOT NULL CHECK (effect IN ('read_only', 'write')),
    request          TEXT    NOT NULL,
    digest           TEXT    NOT NULL,
    ingress_key      TEXT,
    state            TEXT    NOT NULL,
    state_data       TEXT    NOT NULL,
    attempts         INTEGER NOT NULL CHECK (attempts >= 0),
    cancel_data      TEXT,
    lease_owner      TEXT,
    fence            INTEGER NOT NULL CHECK (fence >= 1),
    lease_expires_ms INTEGER,
    last_seq         INTEGER NOT NULL,
    payload_version  INTEGER NOT NULL DEFAULT 1,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL,
    CHECK (effect = 'read_only' OR attempts <= 1)
) STRICT;

CREATE UNIQUE INDEX invocations_ingress_key ON invocations (tenant, ingress_key)
    WHERE ingress_key IS NOT NULL;
CREATE INDEX invocations_by_tenant ON invocations (tenant, created_ms DESC, id DESC);
CREATE INDEX invocations_active_leases ON invocations (lease_expires_ms)
    WHERE state IN ('admitted', 'dispatching', 'retrying');

CREATE TABLE invocation_events (
    invocation_id   TEXT    NOT NULL REFERENCES invocations (id),
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    event_id        TEXT    NOT NULL UNIQUE,
    kind            TEXT    NOT NULL,
    data            TEXT    NOT NULL,
    payload_version INTEGER NOT NULL DEFAULT 1,
    at_ms           INTEGER NOT NULL,
    PRIMARY KEY (invocation_id, seq)
) STRICT;

CREATE TRIGGER invocations_terminal_is_immutable BEFORE UPDATE OF state, state_data ON invocations
    WHEN OLD.state IN ('succeeded', 'failed', 'canceled')
     AND (NEW.state IS NOT OLD.state OR NEW.state_data IS NOT OLD.state_data)
BEGIN
    SELECT RAISE(ABORT, 'invocation is terminal and immutable');
END;

CREATE TRIGGER invocation_events_no_update BEFORE UPDATE ON invocation_events
BEGIN
    SELECT RAISE(ABORT, 'invocation events are append-only');
END;

CREATE TRIGGER invocation_events_no_delete BEFORE DELETE ON invocation_events
BEGIN
    SELECT RAISE(ABORT, 'invocation events are append-only');
END;
