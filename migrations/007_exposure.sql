-- Exposure: bounds on what outside input can make the service do or keep.

-- Access tokens carry the account's token version. Changing or resetting the password bumps it
-- in the same transaction, so every access token issued before stops working at once.
ALTER TABLE accounts ADD COLUMN token_version bigint NOT NULL DEFAULT 0;

-- Wrong verification codes per account, across codes: a new code restarts the five tries of a
-- code, but not the account's daily cap, so requesting codes cannot buy unlimited guesses.
-- Rows older than a day are deleted as new ones arrive.
CREATE TABLE verification_code_failures (
    account_id uuid        NOT NULL REFERENCES accounts (id),
    failed_at  timestamptz NOT NULL
);
CREATE INDEX verification_code_failures_account_idx ON verification_code_failures (account_id, failed_at);

-- Mail the outbox gave up on (TUMA_MAIL_GIVE_UP) is kept, marked, and no longer claimed.
ALTER TABLE email_outbox ADD COLUMN failed_at timestamptz;
DROP INDEX email_outbox_due_idx;
CREATE INDEX email_outbox_due_idx ON email_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;
