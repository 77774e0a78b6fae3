-- Webhooks (CONTRACT §14, issue 33): endpoints per account, an outbox of events written in the
-- transaction of the change each reports, and deliveries (batches of events, signed and
-- retried) with their attempts.

CREATE TABLE webhook_endpoints (
    id               uuid PRIMARY KEY,
    account_id       uuid        NOT NULL REFERENCES accounts (id),
    url              text        NOT NULL,
    events           text[]      NOT NULL,           -- as subscribed: types, or {*}
    event_mask       integer     NOT NULL,           -- the same as bits (persistence.EventType), what writers test
    description      text        NOT NULL DEFAULT '',
    batch_size       smallint    NOT NULL DEFAULT 1 CHECK (batch_size BETWEEN 1 AND 100),
    enabled          boolean     NOT NULL DEFAULT true,
    disabled_reason  text,
    secret           bytea       NOT NULL,           -- sealed with the node's webhook key (AES-GCM)
    old_secret       bytea,                          -- the secret before a roll, also signing until old_secret_until
    old_secret_until timestamptz,
    failing_since    timestamptz,                    -- first failed attempt since the last success
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, id);

-- The version of the set of enabled subscriptions. Whatever changes that set bumps it under an
-- exclusive advisory lock; writers of events hold the lock shared and compare the version with
-- their node's copy of the set (persistence/webhookview.go).
CREATE TABLE webhook_subscriptions (version bigint NOT NULL);
INSERT INTO webhook_subscriptions VALUES (0);

-- The outbox: events not yet taken into a delivery, in chunks (one row per endpoint and
-- writing transaction: a status flush writes one row for a thousand events). An event's id is
-- its chunk's id and its place in it. Message events carry only the message's id; the payload
-- is read from the message when delivered. taken counts the events already in deliveries; a
-- chunk goes once all are.
CREATE TABLE webhook_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id uuid        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    types       smallint[]  NOT NULL,
    message_ids uuid[],                              -- message events: one per type
    data        jsonb,                               -- any other event: its data (types has one)
    taken       integer     NOT NULL DEFAULT 0
);
CREATE INDEX webhook_events_endpoint_idx ON webhook_events (endpoint_id, id);

-- A delivery is one POST of 1 to batch_size events, the same on every attempt. The arrays run
-- in parallel, one element per event. holds lists, while the delivery is pending, the
-- messages whose message.sent it carries: their later events wait for it.
CREATE TABLE webhook_deliveries (
    id               uuid PRIMARY KEY,
    endpoint_id      uuid          NOT NULL,
    account_id       uuid          NOT NULL,
    status           text          NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    event_seqs       bigint[]      NOT NULL,
    event_types      smallint[]    NOT NULL,
    event_times      timestamptz[] NOT NULL,
    message_ids      uuid[]        NOT NULL,
    event_data       jsonb[]       NOT NULL,
    holds            uuid[],
    attempts         integer       NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    next_attempt_at  timestamptz,                    -- pending: due then; NULL: its endpoint is disabled
    lease_until      timestamptz,                    -- an attempt is under way until then (a node that dies lets it lapse)
    created_at       timestamptz   NOT NULL DEFAULT now(),
    succeeded_at     timestamptz,
    finished_at      timestamptz
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (endpoint_id) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
    delivery_id     uuid        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt         integer     NOT NULL,
    at              timestamptz NOT NULL,
    status_code     integer,
    error           text,
    duration_ms     integer     NOT NULL,
    next_attempt_at timestamptz,
    PRIMARY KEY (delivery_id, attempt)
);
