-- When the reconciler last asked the provider about an open checkout: each round takes those
-- asked about longest ago (never first), so a hundred old abandoned carts cannot keep a newer
-- payment that was settled unseen from being asked about until its window nearly ends.
ALTER TABLE payments ADD COLUMN checked_at timestamptz;
CREATE INDEX payments_check_idx ON payments (checked_at NULLS FIRST, created_at) WHERE status IN ('pending', 'abandoned');
