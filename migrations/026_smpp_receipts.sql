-- A job sent by a submit_sm over the SMPP server (transport/smppserver) is of source smpp.
ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('api', 'browser', 'campaign', 'keyword', 'smpp'));
