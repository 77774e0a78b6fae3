-- The account's jobs whose message rows were written by expansion (a campaign's, a large
-- send's), by acceptance: a date range of the messages list bounds the primary key from
-- above for rows written at acceptance, and reads the rows of these jobs accepted in the
-- range through them, since an expansion (a scheduled campaign, when due) writes rows any
-- time later. Few rows per account: single sends are written at acceptance.
CREATE INDEX jobs_expanded_idx ON jobs (account_id, created_at) WHERE expanded > 0;
