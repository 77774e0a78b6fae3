-- The dispatch engine: pricing state, sender IDs, jobs, messages, delivery correlation,
-- per-account message counts and notifications.

-- UUIDv7 for rows made inside SQL (PostgreSQL 15 has no built-in): 48 bits of Unix
-- milliseconds over a random UUID, with the version nibble set to 7.
CREATE FUNCTION tuma_uuidv7() RETURNS uuid AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$ LANGUAGE sql VOLATILE;

-- Pricing. lifetime_sms only grows (it counts SMS units accepted), so the volume tier and its
-- price can only improve. An operator may pin a tier (pricing_tier) or make the account
-- internal (free).
ALTER TABLE wallets
    ADD COLUMN lifetime_sms bigint  NOT NULL DEFAULT 0 CHECK (lifetime_sms >= 0),
    ADD COLUMN pricing_tier text,
    ADD COLUMN is_internal  boolean NOT NULL DEFAULT false;

ALTER TABLE wallet_transactions ADD COLUMN job_id uuid;

-- A completed key can point at what its first request created (a send's job), which a replay
-- renders again, instead of storing the body.
ALTER TABLE idempotency_keys ADD COLUMN resource_id uuid;

-- Sender IDs (the sender-ID workflow fills in documents and review; the engine only needs
-- to know which approved, active sender covers which network, and the account's default).
CREATE TABLE sender_ids (
    id                     uuid PRIMARY KEY,
    account_id             uuid        NOT NULL REFERENCES accounts (id),
    name                   text        NOT NULL CHECK (name ~ '^[A-Z0-9]{2,11}$'),
    network                text        NOT NULL CHECK (network IN ('safaricom', 'airtel', 'telkom', 'all')),
    purpose                text        NOT NULL DEFAULT '',
    status                 text        NOT NULL DEFAULT 'applied'
        CHECK (status IN ('applied', 'documents_submitted', 'payment_pending', 'approved', 'rejected', 'cancelled')),
    is_active              boolean     NOT NULL DEFAULT false,
    is_default             boolean     NOT NULL DEFAULT false,
    registration_fee_cents bigint      NOT NULL DEFAULT 0 CHECK (registration_fee_cents >= 0),
    fee_paid               boolean     NOT NULL DEFAULT false,
    rejection_reason       text,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX sender_ids_one_default ON sender_ids (account_id) WHERE is_default;
CREATE UNIQUE INDEX sender_ids_live_name ON sender_ids (account_id, name, network) WHERE status <> 'cancelled';

-- A job is one accepted send (or a campaign's batch). Small jobs have their message rows
-- written in the accepting transaction; large ones keep their recipients compactly in
-- pending_recipients (one durable row answers the 202 fast) and are expanded into message
-- rows right after, then pending_recipients is cleared.
CREATE TABLE jobs (
    id                 uuid PRIMARY KEY,
    account_id         uuid        NOT NULL REFERENCES accounts (id),
    campaign_id        uuid,
    source             text        NOT NULL CHECK (source IN ('api', 'browser')),
    message            text        NOT NULL,          -- as the customer wrote it
    shared_prefix      text        NOT NULL DEFAULT '', -- "<company>: " where the shared sender is used
    senders            text[]      NOT NULL,          -- sender name per network (safaricom, airtel, telkom)
    prefixed           boolean[]   NOT NULL,          -- whether that network's text carries shared_prefix
    price_cents        integer     NOT NULL CHECK (price_cents >= 0),
    recipients_count   integer     NOT NULL CHECK (recipients_count > 0),
    sms_units          bigint      NOT NULL,          -- parts summed over recipients
    cost_cents         bigint      NOT NULL CHECK (cost_cents >= 0),
    pending_recipients bytea,
    status             text        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sending', 'completed')),
    sent_count         integer     NOT NULL DEFAULT 0,  -- messages now in 'sent' (awaiting a receipt)
    delivered_count    integer     NOT NULL DEFAULT 0,
    failed_count       integer     NOT NULL DEFAULT 0,
    refunded_cents     bigint      NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    completed_at       timestamptz
);
CREATE INDEX jobs_account_idx ON jobs (account_id, id DESC);
-- Recovery looks for unfinished jobs; the partial index stays tiny.
CREATE INDEX jobs_unfinished_idx ON jobs (id) WHERE status <> 'completed';

-- One row per recipient. status is deliberately unindexed and the table leaves room on each
-- page, so the queued → sent → delivered updates can be HOT. No foreign keys: rows arrive by
-- COPY in tens of thousands, and only the engine writes them.
CREATE TABLE messages (
    id                  uuid PRIMARY KEY,
    job_id              uuid        NOT NULL,
    account_id          uuid        NOT NULL,
    campaign_id         uuid,
    recipient           text        NOT NULL,  -- E.164
    network             smallint    NOT NULL CHECK (network BETWEEN 1 AND 3), -- carriers.Network
    sender              text        NOT NULL,
    body                text,                  -- personalised text; NULL means the job's text
    prefixed            boolean     NOT NULL,
    parts               smallint    NOT NULL CHECK (parts > 0),
    encoding            smallint    NOT NULL CHECK (encoding IN (1, 2)), -- carriers.Encoding
    cost_cents          integer     NOT NULL CHECK (cost_cents >= 0),
    status              text        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'delivered', 'failed')),
    provider_status     text        NOT NULL DEFAULT '',
    provider_message_id text,
    error               text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz,
    delivered_at        timestamptz,
    failed_at           timestamptz
) WITH (fillfactor = 80);
CREATE INDEX messages_account_idx ON messages (account_id, id DESC);
CREATE INDEX messages_job_idx ON messages (job_id, id);

-- Carrier message id → our message, for receipts and the live delivery check. A separate
-- table keeps messages.provider_message_id unindexed, so recording it stays a HOT update.
CREATE TABLE provider_refs (
    provider_message_id text     NOT NULL,
    network             smallint NOT NULL,
    message_id          uuid     NOT NULL,
    PRIMARY KEY (provider_message_id, network)
);

-- Live message counts per account, for /sms/stats without scanning messages.
CREATE TABLE message_counts (
    account_id uuid PRIMARY KEY REFERENCES accounts (id),
    queued     bigint NOT NULL DEFAULT 0,
    sent       bigint NOT NULL DEFAULT 0,
    delivered  bigint NOT NULL DEFAULT 0,
    failed     bigint NOT NULL DEFAULT 0
);
INSERT INTO message_counts (account_id) SELECT id FROM accounts;

CREATE TABLE notifications (
    id         uuid PRIMARY KEY,
    account_id uuid        NOT NULL REFERENCES accounts (id),
    type       text        NOT NULL,
    title      text        NOT NULL,
    message    text        NOT NULL,
    is_read    boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_account_idx ON notifications (account_id, id DESC);
CREATE INDEX notifications_unread_idx ON notifications (account_id) WHERE NOT is_read;
