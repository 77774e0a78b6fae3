-- The messages list's total comes from the account's counters, which count a campaign's
-- recipients from its acceptance, before their rows are written (scheduled, or written a
-- chunk at a time), and, once it is cancelled, those never written as failed. The list takes
-- them off, reading the account's campaigns in those states only.
CREATE INDEX campaigns_unwritten_idx ON campaigns (account_id) WHERE status IN ('queued', 'scheduled', 'sending', 'cancelled');
