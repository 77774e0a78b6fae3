-- A job sent by a submit_sm over the SMPP server (transport/smppserver) is of source smpp.
ALTER TABLE jobs DROP CONSTRAINT jobs_source_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_source_check CHECK (source IN ('api', 'browser', 'campaign', 'keyword', 'smpp'));

-- The delivery receipts owed to SMPP clients: a message of an smpp job that becomes delivered
-- or failed gets a row in the transaction that makes it so (whichever path does), and the
-- SMPP server delivers it as deliver_sm to a receiver of the account, oldest first, once
-- bound; the row is done only when the ESME answered ESME_ROK. A claim leases a row
-- (lease_until) so nodes never send one at once; a lease that ends returns it.
CREATE TABLE smpp_receipts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- the order per account
    account_id   uuid        NOT NULL,
    message_id   uuid        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('delivered', 'failed')),
    recipient    text        NOT NULL, -- E.164
    sender       text        NOT NULL,
    text         text        NOT NULL, -- the message's first 20 characters
    submitted_at timestamptz NOT NULL,
    done_at      timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    lease_until  timestamptz NOT NULL DEFAULT '-infinity',
    delivered_at timestamptz
);
CREATE INDEX smpp_receipts_due_idx ON smpp_receipts (account_id, id) WHERE delivered_at IS NULL;

-- smpp marks the messages of smpp jobs, so that the triggers below cost the other messages
-- nothing: their WHEN is evaluated on the row, without a call or a lookup.
ALTER TABLE messages ADD COLUMN smpp boolean NOT NULL DEFAULT false;

CREATE FUNCTION tuma_smpp_receipt() RETURNS trigger AS $$
BEGIN
    INSERT INTO smpp_receipts (account_id, message_id, status, recipient, sender, text, submitted_at, done_at)
    SELECT NEW.account_id, NEW.id, NEW.status, NEW.recipient, NEW.sender, left(coalesce(NEW.body, j.message), 20),
           NEW.created_at, coalesce(NEW.delivered_at, NEW.failed_at, now())
    FROM jobs j WHERE j.id = NEW.job_id;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

-- Row triggers with a WHEN: the function runs only for an smpp message's final transition, so
-- every other message, and the updates that mark messages sent, pay nothing.
CREATE TRIGGER messages_smpp_receipt_update AFTER UPDATE OF status ON messages FOR EACH ROW
    WHEN (NEW.smpp AND NEW.status IN ('delivered', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION tuma_smpp_receipt();
CREATE TRIGGER messages_smpp_receipt_insert AFTER INSERT ON messages FOR EACH ROW
    WHEN (NEW.smpp AND NEW.status IN ('delivered', 'failed'))
    EXECUTE FUNCTION tuma_smpp_receipt();
