-- +goose Up
-- Alert rules, their history, the outbox of their notifications and the leases of their
-- evaluators. Every table is per project, its primary key led by project_id, so that on Citus
-- each is distributed by project_id and co-located with logs: a rule's evaluation (its count,
-- its new status, its history and its notifications, in one transaction) is one shard's work.
-- History, outbox and lease rows go with their rule by its delete (Citus distributes a table only
-- when no local table holds a foreign key to it, so they hold none to alert_rules), and with their
-- project by a foreign key to projects. search_id has no foreign key: saved searches may be
-- deleted; a rule naming one that is gone fails its evaluations until it is patched. Targets are
-- JSON text, secrets included: they are never returned by the API. Times of the status are Unix
-- ms.
CREATE TABLE alert_rules (
    project_id       uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id               uuid        NOT NULL,
    name             text        COLLATE "C" NOT NULL,
    search_id        uuid,
    query            text        NOT NULL,
    window_seconds   integer     NOT NULL,
    interval_seconds integer     NOT NULL,
    for_seconds      integer     NOT NULL,
    op               text        NOT NULL,
    threshold        bigint      NOT NULL,
    targets          text        NOT NULL,
    silenced_until   bigint      NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    state            text        NOT NULL,
    pending_since    bigint      NOT NULL,
    firing_since     bigint      NOT NULL,
    notified         boolean     NOT NULL,
    last_eval_at     bigint      NOT NULL,
    last_count       bigint      NOT NULL,
    next_eval_at     bigint      NOT NULL,
    transitions      bigint      NOT NULL,
    version          bigint      NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX alert_rules_due ON alert_rules (next_eval_at);
-- An admin key reads a rule by its id alone (GET /alerts/{id}); on Citus that read asks every
-- shard, each by this index.
CREATE INDEX alert_rules_id ON alert_rules (id);

CREATE TABLE alert_history (
    project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    rule_id      uuid   NOT NULL,
    seq          bigint NOT NULL,
    time         bigint NOT NULL,
    from_state   text   NOT NULL,
    to_state     text   NOT NULL,
    count        bigint NOT NULL,
    window_start bigint NOT NULL,
    window_end   bigint NOT NULL,
    PRIMARY KEY (project_id, rule_id, seq)
);

CREATE TABLE alert_outbox (
    project_id      uuid    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id              uuid    NOT NULL,
    rule_id         uuid    NOT NULL,
    seq             bigint  NOT NULL,
    target          integer NOT NULL,
    target_json     text    NOT NULL,
    notification    text    NOT NULL,
    attempts        integer NOT NULL,
    next_attempt_at bigint  NOT NULL,
    delivered_at    bigint,
    last_error      text    NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX alert_outbox_pending ON alert_outbox (project_id, rule_id, target, seq) WHERE delivered_at IS NULL;

CREATE TABLE alert_leases (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    rule_id    uuid   NOT NULL,
    holder     text   NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (project_id, rule_id)
);

-- +goose Down
DROP TABLE alert_leases;
DROP TABLE alert_outbox;
DROP TABLE alert_history;
DROP TABLE alert_rules;
