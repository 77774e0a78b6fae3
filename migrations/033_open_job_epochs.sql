-- The tenant incarnation that accepted an open job: its fence epoch (migration 027), 0 for jobs
-- opened outside a tenant (a scheduled campaign falling due) and for rows opened before this.
-- A tenant resumes the open jobs of earlier incarnations. It told them from its own by id
-- alone (accepted before it started), but another node's incarnation can commit a job whose
-- id is later than that start until this one takes the fence (and a node's clock may run
-- ahead): such a job was never resumed, its messages queued for good (the cluster-kill
-- drill, 47 messages). A job under an older epoch is now always an earlier incarnation's.
ALTER TABLE open_jobs ADD COLUMN epoch bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN open_jobs.epoch IS
	'the fence epoch of the tenant incarnation that accepted the job; 0 when opened outside one';
