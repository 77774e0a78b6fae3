-- A network delivers a message again when we answered its deliver_sm with an error, even if
-- the message was stored before the error (its tenant could not be told of a STOP, or the
-- commit's answer was lost). settled says its handling finished; a redelivery that finds an
-- unsettled row of the same message reuses it, so the tenant gets one message.received and
-- one SMPP push, not two. Rows stored before this column were handled: true.
ALTER TABLE inbound_messages ADD COLUMN settled boolean NOT NULL DEFAULT true;
ALTER TABLE inbound_messages ALTER COLUMN settled SET DEFAULT false;
CREATE INDEX inbound_messages_unsettled_idx ON inbound_messages (to_number, from_nsn) WHERE NOT settled;
