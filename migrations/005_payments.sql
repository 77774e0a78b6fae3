-- Payments through a hosted checkout (Paystack, or the built-in sandbox that speaks its wire
-- format): wallet top-ups and sender ID fees, credited at most once per reference.

-- One row per checkout we start. The row (and its reference) exists before the provider is
-- called; it ends paid, failed or abandoned. A top-up is credited only by the statement that
-- moves it to paid, so repeated or concurrent confirmations credit once.
CREATE TABLE payments (
    id                uuid PRIMARY KEY,
    account_id        uuid        NOT NULL REFERENCES accounts (id),
    reference         text        NOT NULL UNIQUE CHECK (reference ~ '^TUMA-[A-Z0-9]+$'),
    purpose           text        NOT NULL CHECK (purpose IN ('wallet_topup', 'sender_id_fee')),
    sender_id         uuid REFERENCES sender_ids (id),
    amount_cents      bigint      NOT NULL CHECK (amount_cents > 0),
    currency          text        NOT NULL DEFAULT 'KES',
    email             text        NOT NULL,
    provider          text        NOT NULL,
    -- pending: waiting for the payer; abandoned: the payer gave up (still creditable if the
    -- provider later confirms); paid and failed are final.
    status            text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'abandoned', 'paid', 'failed')),
    access_code       text,
    authorization_url text,
    failure_reason    text,
    paid_at           timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((purpose = 'sender_id_fee') = (sender_id IS NOT NULL))
);
CREATE INDEX payments_account_idx ON payments (account_id, id DESC);
-- The reconciler asks the provider about checkouts nobody confirmed.
CREATE INDEX payments_open_idx ON payments (created_at) WHERE status IN ('pending', 'abandoned');

-- A belt to the status guard's braces: one ledger entry per payment reference.
CREATE UNIQUE INDEX wallet_transactions_one_per_payment ON wallet_transactions (reference)
    WHERE reference LIKE 'TUMA-%';

-- Every webhook whose signature checked out, as received, for audit and replay.
CREATE TABLE payment_webhooks (
    id          uuid PRIMARY KEY,
    provider    text        NOT NULL,
    event       text        NOT NULL,
    reference   text,
    body        bytea       NOT NULL,
    outcome     text        NOT NULL DEFAULT '',
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_webhooks_reference_idx ON payment_webhooks (reference);

-- The sandbox provider's own books (development only): what a real provider would keep, and
-- the webhooks it still owes us, delivered with retries across restarts.
CREATE TABLE sandbox_transactions (
    access_code     text PRIMARY KEY,
    reference       text        NOT NULL UNIQUE,
    amount          bigint      NOT NULL CHECK (amount > 0), -- subunits (cents)
    currency        text        NOT NULL,
    email           text        NOT NULL,
    callback_url    text        NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    status          text        NOT NULL DEFAULT 'ongoing' CHECK (status IN ('ongoing', 'success', 'abandoned')),
    paid_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    hook_due_at     timestamptz, -- set when a webhook is owed
    hook_attempts   integer     NOT NULL DEFAULT 0,
    hook_last_error text
);
CREATE INDEX sandbox_transactions_hooks_idx ON sandbox_transactions (hook_due_at) WHERE hook_due_at IS NOT NULL;

-- Low-balance notifications fire once per crossing: set when one is sent, cleared when the
-- balance is back above the threshold.
ALTER TABLE wallets ADD COLUMN low_balance_alerted boolean NOT NULL DEFAULT false;
