-- A campaign's messages have the source of the call that created it, api (an API key) or
-- browser (a bearer token, the dashboard), as a send's do (CONTRACT §1), no longer one of
-- their own ("campaign"). Which call created an existing campaign was not recorded: its job
-- becomes api (found through the campaigns, by their job's primary key).
UPDATE jobs j SET source = 'api' FROM campaigns c WHERE c.job_id = j.id AND j.source = 'campaign';
ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('api', 'browser', 'keyword', 'smpp'));
