-- Promotional sends (CONTRACT §15): the opt-out instruction the regulations require in every
-- marketing message, and the quiet hours in which an account's promotional messages wait.
-- Quiet hours are minutes after midnight in Africa/Nairobi (UTC+3 all year); both null: off.
ALTER TABLE accounts
    ADD COLUMN opt_out_text text NOT NULL DEFAULT 'STOP*456*9*5#'
        CHECK (char_length(opt_out_text) BETWEEN 1 AND 60),
    ADD COLUMN quiet_start smallint DEFAULT 1200 CHECK (quiet_start BETWEEN 0 AND 1439),
    ADD COLUMN quiet_end smallint DEFAULT 480 CHECK (quiet_end BETWEEN 0 AND 1439),
    ADD CONSTRAINT accounts_quiet_hours_check
        CHECK ((quiet_start IS NULL) = (quiet_end IS NULL) AND quiet_start <> quiet_end);

-- A promotional job's text carries opt_out, the suffix appended at acceptance (' STOP*456*9*5#',
-- or '' when the text already said it), so a job read back renders what was priced.
ALTER TABLE jobs
    ADD COLUMN promotional boolean NOT NULL DEFAULT false,
    ADD COLUMN opt_out text NOT NULL DEFAULT '';
-- A tenant resuming its work inside quiet hours leaves its promotional jobs where they are.
ALTER TABLE open_jobs ADD COLUMN promotional boolean NOT NULL DEFAULT false;

-- in_quiet_hours reports whether at falls in the window [qstart, qend) of Nairobi's clock; a
-- window whose start is after its end runs over midnight.
CREATE FUNCTION in_quiet_hours(qstart smallint, qend smallint, at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN qstart IS NULL OR qend IS NULL THEN false
        WHEN qstart < qend THEN m >= qstart AND m < qend
        ELSE m >= qstart OR m < qend
    END
    FROM (SELECT (extract(hour FROM (at AT TIME ZONE 'UTC') + interval '3 hours') * 60
        + extract(minute FROM (at AT TIME ZONE 'UTC') + interval '3 hours'))::int AS m) t
$$;
