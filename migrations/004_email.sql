-- Email: an outbox that survives restarts, verification by link or code, password resets,
-- and the welcome bonus, paid once per account by the ledger's own constraint.

CREATE TABLE email_outbox (
    id              uuid PRIMARY KEY,
    to_address      text        NOT NULL,
    subject         text        NOT NULL,
    text_body       text        NOT NULL,
    html_body       text        NOT NULL,
    purpose         text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX email_outbox_due_idx ON email_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- Single-use verification links. email is the address the link proves, so a link sent to an
-- address the account has since replaced verifies nothing.
CREATE TABLE verification_tokens (
    token_hash bytea PRIMARY KEY,
    account_id uuid        NOT NULL REFERENCES accounts (id),
    email      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verification_tokens_account_idx ON verification_tokens (account_id);

-- At most one live 6-digit code per account; a new request replaces it (and unlocks).
CREATE TABLE verification_codes (
    account_id uuid PRIMARY KEY REFERENCES accounts (id),
    code_hash  bytea       NOT NULL,
    email      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    attempts   integer     NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE password_resets (
    token_hash bytea PRIMARY KEY,
    account_id uuid        NOT NULL REFERENCES accounts (id),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX password_resets_account_idx ON password_resets (account_id);

-- The welcome bonus is paid at most once per account, whatever races: the ledger refuses a
-- second entry.
CREATE UNIQUE INDEX wallet_transactions_one_welcome_bonus ON wallet_transactions (account_id)
    WHERE reference = 'welcome-bonus';
