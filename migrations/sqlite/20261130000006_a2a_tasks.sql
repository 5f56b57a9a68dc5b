-- A2A tasks: one row per task (the ProtoJSON Task in `body`), its ordered events, push
-- configurations, and the push delivery outbox. `scope` is the tenant key every query uses.
CREATE TABLE a2a_tasks (
    id          TEXT PRIMARY KEY,
    scope       TEXT NOT NULL,
    agent       TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    state       TEXT NOT NULL,
    status_ms   BIGINT NOT NULL,
    version     BIGINT NOT NULL,
    run_cursor  TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    created_ms  BIGINT NOT NULL
);
CREATE INDEX a2a_tasks_list ON a2a_tasks (scope, agent, status_ms DESC, id DESC);
CREATE INDEX a2a_tasks_active ON a2a_tasks (agent, state, status_ms);

CREATE TABLE a2a_task_events (
    task_id     TEXT NOT NULL REFERENCES a2a_tasks (id),
    seq         BIGINT NOT NULL,
    event       TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE a2a_push_configs (
    task_id     TEXT NOT NULL REFERENCES a2a_tasks (id),
    id          TEXT NOT NULL,
    config      TEXT NOT NULL,
    created_ms  BIGINT NOT NULL,
    PRIMARY KEY (task_id, id)
);

CREATE TABLE a2a_push_outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      TEXT NOT NULL,
    config_id    TEXT NOT NULL,
    config       TEXT NOT NULL,
    payload      TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    due_ms       BIGINT NOT NULL,
    delivered_ms BIGINT,
    last_error   TEXT
);
CREATE INDEX a2a_push_outbox_due ON a2a_push_outbox (due_ms) WHERE delivered_ms IS NULL;
