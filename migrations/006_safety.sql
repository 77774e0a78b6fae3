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
