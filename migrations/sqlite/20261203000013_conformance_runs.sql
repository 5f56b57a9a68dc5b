-- Runs of the protocol test kits (`switchyard conformance`): the verdict and the whole report
-- (JSON), listed newest first by `switchyard conformance list`.
CREATE TABLE conformance_runs (
    id          TEXT    PRIMARY KEY NOT NULL,
    suite       TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    started_ms  INTEGER NOT NULL,
    finished_ms INTEGER NOT NULL,
    passed      INTEGER NOT NULL,
    summary     TEXT    NOT NULL
) STRICT;
CREATE INDEX conformance_runs_newest ON conformance_runs (started_ms DESC);
