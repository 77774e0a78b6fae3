-- An account's suppression list (CONTRACT §15): numbers it may never message. A number is its
-- national significant number (the 9 digits after +254), so the list of an account is a
-- sorted run of integers its tenant actor holds in memory (4 bytes a number) to leave them out
-- of a send at acceptance.
CREATE TABLE suppressions (
    account_id uuid        NOT NULL,
    nsn        integer     NOT NULL CHECK (nsn BETWEEN 100000000 AND 999999999),
    source     text        NOT NULL CHECK (source IN ('api', 'keyword', 'contact')),
    reason     text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, nsn)
);
-- The list newest first, and the numbers suppressed since a job was accepted (its dispatch
-- leaves them out just before submitting).
CREATE INDEX suppressions_created_idx ON suppressions (account_id, created_at, nsn);

-- How many of a send's recipients were left out as suppressed: its 202, replayed from the job.
ALTER TABLE jobs ADD COLUMN suppressed_count integer NOT NULL DEFAULT 0;
