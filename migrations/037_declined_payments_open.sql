-- A checkout whose last attempt failed at Paystack (status failed: a card declined, an M-Pesa
-- prompt not answered) is not closed: the payer may try again on the same page and pay, and
-- must then be credited. Such payments are now kept abandoned (reason declined), still open;
-- those marked failed for it within the reconciler's two days are opened again, so that it
-- asks about them once more. Failures of our own making (amount or currency mismatch,
-- reversed) stay final.
UPDATE payments SET status = 'abandoned', updated_at = now()
    WHERE status = 'failed' AND failure_reason = 'declined' AND created_at > now() - interval '48 hours';
