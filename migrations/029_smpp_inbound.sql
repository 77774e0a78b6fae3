-- Messages texted to an account's number owed to its SMPP clients: an account with an enabled
-- SMPP credential gets each one delivered as deliver_sm too, through the same outbox as its
-- delivery receipts (one order per account, claimed and retried the same way).
ALTER TABLE smpp_receipts ADD COLUMN kind text NOT NULL DEFAULT 'receipt' CHECK (kind IN ('receipt', 'inbound'));
ALTER TABLE smpp_receipts DROP CONSTRAINT smpp_receipts_status_check;
ALTER TABLE smpp_receipts ADD CONSTRAINT smpp_receipts_status_check CHECK (
    (kind = 'receipt' AND status IN ('delivered', 'failed')) OR (kind = 'inbound' AND status = 'received'));
-- For an inbound row: message_id is the inbound message's, recipient the account's number it
-- was sent to, sender the subscriber (E.164), text all of it, submitted_at and done_at when it
-- was received.

CREATE FUNCTION tuma_smpp_inbound() RETURNS trigger AS $$
BEGIN
    INSERT INTO smpp_receipts (kind, account_id, message_id, status, recipient, sender, text, submitted_at, done_at)
    SELECT 'inbound', NEW.account_id, NEW.id, 'received', NEW.to_number, '+254' || NEW.from_nsn, NEW.text,
           NEW.received_at, NEW.received_at
    WHERE EXISTS (SELECT 1 FROM smpp_credentials c WHERE c.account_id = NEW.account_id AND c.enabled);
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER inbound_messages_smpp AFTER INSERT ON inbound_messages FOR EACH ROW
    WHEN (NEW.account_id IS NOT NULL)
    EXECUTE FUNCTION tuma_smpp_inbound();
