-- A delivery no longer stores the messages whose message.sent it carries (holds): forming reads
-- them from its message_ids and event_types while it is pending (a few deliveries an endpoint),
-- and every delivery's insert was writing them out of line and every success deleting them
-- again (issue 33, bench/RESULTS.md 2026-11-28). Dropping a column changes the catalog only.
ALTER TABLE webhook_deliveries DROP COLUMN holds;
