-- Placeholder for 017, which the webhooks branch owns (017_webhooks.sql): the migration runner
-- (tern) refuses a gap in the numbering. Delete this file when merging that branch.
SELECT 1;
