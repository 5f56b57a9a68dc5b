-- Durable invocations and their journal (PostgreSQL). Times are milliseconds since the Unix
-- epoch on the database clock. JSON payloads carry `payload_version`.

CREATE TABLE invocations (
    id               TEXT     PRIMARY KEY,
    tenant           TEXT     NOT NULL,
    subject          TEXT     NOT NULL,
    upstream         TEXT     NOT NULL,
    operation        TEXT     NOT NULL,
    effect           TEXT     NOT NULL CHECK (effect IN ('read_only', 'write')),
    request          JSONB    NOT NULL,
    digest           TEXT     NOT NULL,
    ingress_key      TEXT,
    state            TEXT     NOT NULL,
    state_data       JSONB    NOT NULL,
    attempts         INTEGER  NOT NULL CHECK (attempts >= 0),
    cancel_data      JSONB,
    lease_owner      TEXT,
    fence            BIGINT   NOT NULL CHECK (fence >= 1),
    lease_expires_ms BIGINT,
    last_seq         BIGINT   NOT NULL,
    payload_version  SMALLINT NOT NULL DEFAULT 1,
    created_ms       BIGINT   NOT NULL,
    updated_ms       BIGINT   NOT NULL,
    -- G4: a write target is dispatched at most once automatically.
    CHECK (effect = 'read_only' OR attempts <= 1)
);

-- G2: one invocation per tenant and ingress key.
CREATE UNIQUE INDEX invocations_ingress_key ON invocations (tenant, ingress_key)
    WHERE ingress_key IS NOT NULL;
CREATE INDEX invocations_by_tenant ON invocations (tenant, created_ms DESC, id DESC);
-- Recovery scans only active invocations by lease expiry.
CREATE INDEX invocations_active_leases ON invocations (lease_expires_ms)
    WHERE state IN ('admitted', 'dispatching', 'retrying');

CREATE TABLE invocation_events (
    invocation_id   TEXT     NOT NULL REFERENCES invocations (id),
    seq             BIGINT   NOT NULL CHECK (seq >= 1),
    event_id        TEXT     NOT NULL UNIQUE,
    kind            TEXT     NOT NULL,
    data            JSONB    NOT NULL,
    payload_version SMALLINT NOT NULL DEFAULT 1,
    at_ms           BIGINT   NOT NULL,
    PRIMARY KEY (invocation_id, seq)
);

-- G10: a terminal result is immutable, whatever code runs against the database.
CREATE FUNCTION switchyard_terminal_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.state IN ('succeeded', 'failed', 'canceled')
       AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.state_data IS DISTINCT FROM OLD.state_data) THEN
        RAISE EXCEPTION 'invocation % is terminal and immutable', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER invocations_terminal_is_immutable BEFORE UPDATE ON invocations
    FOR EACH ROW EXECUTE FUNCTION switchyard_terminal_is_immutable();

-- G9: the journal is append-only.
CREATE FUNCTION switchyard_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'invocation events are append-only' USING ERRCODE = 'check_violation';
END
$$;

CREATE TRIGGER invocation_events_append_only BEFORE UPDATE OR DELETE ON invocation_events
    FOR EACH ROW EXECUTE FUNCTION switchyard_events_append_only();
