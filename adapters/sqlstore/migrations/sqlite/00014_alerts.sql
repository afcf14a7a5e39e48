-- +goose Up
-- Alert rules, their history, the outbox of their notifications and the leases of their
-- evaluators (one instance on SQLite: the lease is kept for the same code path). History,
-- outbox and lease rows go with their rule by its delete, as on PostgreSQL (where Citus wants no
-- foreign key between them), and with their project by a foreign key to projects. search_id has
-- no foreign key: a rule naming a saved search that is gone fails its evaluations until it is
-- patched. Targets are JSON text, secrets included: they are never returned by the API.
-- created_at and updated_at are Unix microseconds, as projects'; the status's times Unix ms.
CREATE TABLE alert_rules (
    project_id       TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id               TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    search_id        TEXT,
    query            TEXT    NOT NULL,
    window_seconds   INTEGER NOT NULL,
    interval_seconds INTEGER NOT NULL,
    for_seconds      INTEGER NOT NULL,
    op               TEXT    NOT NULL,
    threshold        INTEGER NOT NULL,
    targets          TEXT    NOT NULL,
    silenced_until   INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    state            TEXT    NOT NULL,
    pending_since    INTEGER NOT NULL,
    firing_since     INTEGER NOT NULL,
    notified         INTEGER NOT NULL,
    last_eval_at     INTEGER NOT NULL,
    last_count       INTEGER NOT NULL,
    next_eval_at     INTEGER NOT NULL,
    transitions      INTEGER NOT NULL,
    version          INTEGER NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX alert_rules_due ON alert_rules (next_eval_at);
CREATE UNIQUE INDEX alert_rules_id ON alert_rules (id);

CREATE TABLE alert_history (
    project_id   TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    rule_id      TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    time         INTEGER NOT NULL,
    from_state   TEXT    NOT NULL,
    to_state     TEXT    NOT NULL,
    count        INTEGER NOT NULL,
    window_start INTEGER NOT NULL,
    window_end   INTEGER NOT NULL,
    PRIMARY KEY (project_id, rule_id, seq)
);

CREATE TABLE alert_outbox (
    project_id      TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id              TEXT    NOT NULL,
    rule_id         TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    target          INTEGER NOT NULL,
    target_json     TEXT    NOT NULL,
    notification    TEXT    NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    delivered_at    INTEGER,
    last_error      TEXT    NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX alert_outbox_pending ON alert_outbox (project_id, rule_id, target, seq) WHERE delivered_at IS NULL;

CREATE TABLE alert_leases (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    rule_id    TEXT    NOT NULL,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, rule_id)
);

-- +goose Down
DROP TABLE alert_leases;
DROP TABLE alert_outbox;
DROP TABLE alert_history;
DROP TABLE alert_rules;
