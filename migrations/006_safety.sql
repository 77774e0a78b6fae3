-- Money and message safety.

-- Every claim of an Idempotency-Key gets its own token. The write that completes a key checks
-- the token still holds it, so a request whose claim lapsed (its lease ran out and a retry took
-- the key over) can never commit its effect as well: one key, one effect.
ALTER TABLE idempotency_keys ADD COLUMN claim uuid;

-- tuma_fence aborts the transaction it runs in when a batch statement matched fewer rows than
-- it must (a lost idempotency claim). The writer then retries the batch without that job.
CREATE FUNCTION tuma_fence(expected bigint, matched bigint) RETURNS bigint AS $$
BEGIN
    IF matched <> expected THEN
        RAISE EXCEPTION 'fence: % of % rows matched', matched, expected USING ERRCODE = 'TU001';
    END IF;
    RETURN matched;
END
$$ LANGUAGE plpgsql;

-- Job counters stay exact across crashes without a recount: every flush of status changes
-- records the counter deltas it implies in this log, in its own transaction, and the engine
-- folds the log into jobs and message_counts about once a second (deleting what it folded, in
-- the folding transaction). A crash leaves at most a second of log to fold at the next start.
CREATE TABLE progress_log (
    id        bigserial PRIMARY KEY,
    jobs      uuid[]   NOT NULL,
    accounts  uuid[]   NOT NULL,
    sent      integer[] NOT NULL, -- net change of messages in 'sent' (falls as they finish)
    delivered integer[] NOT NULL,
    failed    integer[] NOT NULL,
    refunded  bigint[] NOT NULL   -- cents refunded
);

-- Tenants resume their own unfinished jobs, a page at a time.
ALTER TABLE open_jobs ADD COLUMN account_id uuid;
UPDATE open_jobs o SET account_id = j.account_id FROM jobs j WHERE j.id = o.job_id;
ALTER TABLE open_jobs ALTER COLUMN account_id SET NOT NULL;
CREATE INDEX open_jobs_account_idx ON open_jobs (account_id, job_id);

-- Durable marks taken by a carrier link right before it submits: after a crash, a message
-- marked but still queued may have reached the network, so recovery asks the network (by our
-- message id) before submitting it again, instead of resending blindly. One row per batch of
-- submits; a link deletes its rows once every submit in them has a durable outcome.
CREATE TABLE submit_marks (
    id        uuid PRIMARY KEY,
    network   smallint    NOT NULL,
    accounts  uuid[]      NOT NULL,
    messages  uuid[]      NOT NULL,
    marked_at timestamptz NOT NULL DEFAULT now()
);

-- A carrier may reuse its message ids. Both messages keep their reference: the generation
-- tells them apart, and a receipt goes to the newest submission still waiting for one.
ALTER TABLE provider_refs ADD COLUMN generation smallint NOT NULL DEFAULT 0;
ALTER TABLE provider_refs DROP CONSTRAINT provider_refs_pkey;
ALTER TABLE provider_refs ADD PRIMARY KEY (provider_message_id, network, generation);

-- Backlog per network, exactly and cheaply: each job knows how many of its messages go to each
-- network and how many of those are final; the open jobs' sums are the backlog.
ALTER TABLE jobs ADD COLUMN network_counts integer[] NOT NULL DEFAULT '{0,0,0}',
                 ADD COLUMN finished       integer[] NOT NULL DEFAULT '{0,0,0}';
UPDATE jobs j SET network_counts = ARRAY[c.n1, c.n2, c.n3], finished = ARRAY[c.f1, c.f2, c.f3]
FROM (SELECT m.job_id,
        count(*) FILTER (WHERE m.network = 1) AS n1, count(*) FILTER (WHERE m.network = 2) AS n2,
        count(*) FILTER (WHERE m.network = 3) AS n3,
        count(*) FILTER (WHERE m.network = 1 AND m.status IN ('delivered', 'failed')) AS f1,
        count(*) FILTER (WHERE m.network = 2 AND m.status IN ('delivered', 'failed')) AS f2,
        count(*) FILTER (WHERE m.network = 3 AND m.status IN ('delivered', 'failed')) AS f3
      FROM open_jobs o JOIN messages m ON m.job_id = o.job_id GROUP BY m.job_id) c
WHERE j.id = c.job_id;
ALTER TABLE progress_log ADD COLUMN finished integer[] NOT NULL DEFAULT '{}'; -- three per job

-- Ids made in SQL (broadcast notifications) keep their order within a millisecond: the
-- twelve bits after the millisecond carry its fraction (RFC 9562, method 3), so two broadcasts
-- a few microseconds apart list in the order they were made.
CREATE OR REPLACE FUNCTION tuma_uuidv7() RETURNS uuid AS $$
DECLARE
    us bigint := floor(extract(epoch FROM clock_timestamp()) * 1000000);
    b  bytea  := uuid_send(gen_random_uuid()); -- random, with the RFC 4122 variant bits
BEGIN
    b := overlay(b PLACING substring(int8send(us / 1000) FROM 3) FROM 1 FOR 6);            -- 48 bits of Unix ms
    b := overlay(b PLACING int2send((28672 | ((us % 1000) * 4096 / 1000))::smallint) FROM 7 FOR 2); -- version 7, ms fraction
    RETURN encode(b, 'hex')::uuid;
END
$$ LANGUAGE plpgsql VOLATILE;
