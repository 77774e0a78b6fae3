-- Dashboard sessions (CONTRACT §13): one row per signed-in browser, the same on every node and
-- revocable. id is the SHA-256 of the cookie's random token, so the table never holds a usable
-- credential. token_version is the account's at sign-in: a password change or reset bumps the
-- account's, which ends the session on every node at once (the rows are also deleted then).
CREATE TABLE web_sessions (
    id            bytea       PRIMARY KEY,
    account_id    uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf          bytea       NOT NULL,
    token_version bigint      NOT NULL,
    created_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    user_agent    text        NOT NULL DEFAULT '',
    ip            text        NOT NULL DEFAULT ''
);
CREATE INDEX web_sessions_account_idx ON web_sessions (account_id);
