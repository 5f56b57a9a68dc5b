-- The audit log (issue 16): one hash chain per partition (a replica, or the command line), so
-- replicas never serialize on one chain head. Each row's hash covers the row before it; the
-- signed checkpoints bind every partition's head. Rows are append-only: triggers refuse any
-- change, and `switchyard audit verify` finds a row changed, removed or moved behind their back.
CREATE TABLE audit_log (
    part        TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    at_ms       INTEGER NOT NULL,
    kind        TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    invocation  TEXT,
    detail      TEXT    NOT NULL,
    prev        TEXT    NOT NULL,
    hash        TEXT    NOT NULL,
    PRIMARY KEY (part, seq)
) WITHOUT ROWID;
CREATE INDEX audit_log_by_time ON audit_log (at_ms, part, seq);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

-- Ed25519-signed statements (compact JWS) of every partition's head at one moment.
CREATE TABLE audit_checkpoints (
    id      TEXT    PRIMARY KEY,
    at_ms   INTEGER NOT NULL,
    token   TEXT    NOT NULL
);
CREATE INDEX audit_checkpoints_by_time ON audit_checkpoints (at_ms);
