-- Campaigns: one send to a contact group's active contacts, personalised with merge tags. A
-- campaign owns one job (jobs.campaign_id), which carries its messages, counters and refunds;
-- the campaign row adds what a customer named and scheduled, and its own status.
CREATE TABLE campaigns (
    id               uuid        PRIMARY KEY,
    account_id       uuid        NOT NULL REFERENCES accounts (id),
    job_id           uuid        NOT NULL UNIQUE,
    name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    message          text        NOT NULL,
    group_id         uuid        NOT NULL,
    group_name       text        NOT NULL, -- as it was at creation: a group may be deleted later
    sender_id        uuid,
    status           text        NOT NULL
        CHECK (status IN ('queued', 'scheduled', 'sending', 'completed', 'failed', 'cancelled')),
    scheduled_at     timestamptz,
    total_recipients integer     NOT NULL CHECK (total_recipients > 0),
    cost_cents       bigint      NOT NULL CHECK (cost_cents >= 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    completed_at     timestamptz
);
CREATE INDEX campaigns_account_idx ON campaigns (account_id, id DESC);
-- The scheduler's question, "which scheduled campaigns are due?", reads only those.
CREATE INDEX campaigns_due_idx ON campaigns (scheduled_at) WHERE status = 'scheduled';

-- A scheduled campaign's job is accepted (and paid) at creation but joins open_jobs only when
-- the scheduler finds it due. Campaign messages say where they came from.
ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('api', 'browser', 'campaign'));

-- Daily figures per account, kept in the transactions that move money, so reports read a
-- row per day instead of scanning messages: spend is debits less refunds, sms the parts.
CREATE TABLE account_days (
    account_id  uuid   NOT NULL REFERENCES accounts (id),
    day         date   NOT NULL,
    spend_cents bigint NOT NULL DEFAULT 0,
    sms_count   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day)
);
