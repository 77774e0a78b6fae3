-- A 1-recipient send outside a campaign is a job whose progress is its one message (issue 37).
-- Folding its counters into the jobs row cost every such send an UPDATE of that row (25–38 µs
-- of PostgreSQL a send in bench/profile.sh), though nothing reads those counters: the API,
-- pages and reports read messages, and job counters only for campaigns. Such a job is marked
-- `single` in open_jobs; when its message is final the fold deletes its open_jobs row and
-- leaves the jobs row as accepted (status, delivered_count, failed_count, refunded_cents,
-- finished and completed_at are not maintained for it). Rows already open keep the old way.
ALTER TABLE open_jobs ADD COLUMN single boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN open_jobs.single IS
	'a 1-recipient job outside a campaign: its message is its progress, and its jobs row''s counters are not maintained';
COMMENT ON COLUMN jobs.delivered_count IS
	'messages delivered; not maintained for a 1-recipient job outside a campaign (migration 032): count its message';
