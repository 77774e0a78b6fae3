-- The delivery receipts an SMPP client asked for (submit_sm's and data_sm's registered_delivery,
-- SMPP 3.4 §5.2.17): none, on the final outcome, or on failure only. messages.smpp now says a
-- message owes its client a receipt at all (the server writes it only when one was asked for),
-- and smpp_failed_only that it owes one only if it fails. A column added with a constant
-- default is a change to the catalog alone: no rewrite and no scan of messages, and the rows
-- written before (and by nodes not yet upgraded) keep the receipt on either outcome they had.
ALTER TABLE messages ADD COLUMN smpp_failed_only boolean NOT NULL DEFAULT false;

-- The same triggers (and function), their WHEN now leaving out a delivered message that owes
-- a receipt only on failure: still evaluated on the row, no call for any other message.
DROP TRIGGER messages_smpp_receipt_update ON messages;
DROP TRIGGER messages_smpp_receipt_insert ON messages;
CREATE TRIGGER messages_smpp_receipt_update AFTER UPDATE OF status ON messages FOR EACH ROW
    WHEN (NEW.smpp AND (NEW.status = 'failed' OR (NEW.status = 'delivered' AND NOT NEW.smpp_failed_only))
          AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION tuma_smpp_receipt();
CREATE TRIGGER messages_smpp_receipt_insert AFTER INSERT ON messages FOR EACH ROW
    WHEN (NEW.smpp AND (NEW.status = 'failed' OR (NEW.status = 'delivered' AND NOT NEW.smpp_failed_only)))
    EXECUTE FUNCTION tuma_smpp_receipt();
