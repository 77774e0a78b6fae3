-- Messages are keyed by (account_id, id): one B-tree serves the per-account listing (newest
-- first) and the status updates, instead of two. job_id gets a BRIN index: a job's rows are
-- appended together, so block ranges select them well, and keeping it costs next to nothing
-- on every insert and non-HOT update. Measured: see README, Benchmarks.
ALTER TABLE messages DROP CONSTRAINT messages_pkey;
ALTER TABLE messages ADD PRIMARY KEY (account_id, id);
DROP INDEX messages_account_idx;
DROP INDEX messages_job_idx;
CREATE INDEX messages_job_brin ON messages USING brin (job_id) WITH (pages_per_range = 16);

-- Receipts and the live check find the message through its provider id.
ALTER TABLE provider_refs ADD COLUMN account_id uuid;
UPDATE provider_refs r SET account_id = m.account_id FROM messages m WHERE m.id = r.message_id;
ALTER TABLE provider_refs ALTER COLUMN account_id SET NOT NULL;

-- The compact recipient list is incompressible packed numbers: skip pglz (pure CPU on the
-- accept path) and store it out of line as is.
ALTER TABLE jobs ALTER COLUMN pending_recipients SET STORAGE EXTERNAL;

-- Unfinished jobs are listed in their own narrow table instead of a partial index on
-- jobs.status: with status in no index, the counter updates every flush makes to jobs can
-- be HOT, which the room left on each page (fillfactor) makes likely.
CREATE TABLE open_jobs (job_id uuid PRIMARY KEY);
INSERT INTO open_jobs SELECT id FROM jobs WHERE status <> 'completed';
DROP INDEX jobs_unfinished_idx;
ALTER TABLE jobs SET (fillfactor = 70);

-- Per-account counts are derived data written in batches (see persistence.ApplyProgress);
-- the accepted total moves onto the wallet row every accept already updates, so accepting a
-- send touches no counter row that status writes contend for. queued = accepted − the rest.
ALTER TABLE wallets ADD COLUMN messages_accepted bigint NOT NULL DEFAULT 0;
UPDATE wallets w SET messages_accepted = c.queued + c.sent + c.delivered + c.failed
    FROM message_counts c WHERE c.account_id = w.account_id;
ALTER TABLE message_counts DROP COLUMN queued;
