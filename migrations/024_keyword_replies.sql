-- The confirmation SMS an opt-out or opt-in keyword is answered with (CONTRACT §15): free, from
-- the account's own sender, written as a job in the transaction that stores the keyword. A
-- number gets at most one of each kind a day (Africa/Nairobi): the row is claimed first, and
-- only the claim that inserts writes the job, so a repeated STOP is not answered again.
CREATE TABLE keyword_replies (
    account_id uuid        NOT NULL REFERENCES accounts (id),
    nsn        integer     NOT NULL CHECK (nsn BETWEEN 100000000 AND 999999999),
    kind       text        NOT NULL CHECK (kind IN ('stop', 'start')),
    day        date        NOT NULL, -- in Africa/Nairobi (UTC+3)
    job_id     uuid        NOT NULL, -- the reply's job, written with the claim
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, nsn, kind, day)
);

-- A reply's job is of source keyword: listed with the account's messages like any other.
ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('api', 'browser', 'campaign', 'keyword'));
