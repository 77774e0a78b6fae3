-- The caller's own correlation id of a send or campaign (CONTRACT §12, issue 32). It is stored
-- once per job, not on each message row, so accepting a send writes no more than it did; a
-- message shows its job's. The partial index finds an account's jobs by reference (only jobs
-- that have one are in it) for GET /sms/messages?reference=; their messages are then read
-- through each job's range of the messages' primary key (migration 009).
ALTER TABLE jobs ADD COLUMN reference text;
CREATE INDEX jobs_reference_idx ON jobs (account_id, reference) WHERE reference IS NOT NULL;
