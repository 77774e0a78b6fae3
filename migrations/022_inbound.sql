-- Inbound numbers and the messages sent to them (CONTRACT §15). Operators give an account a
-- short code or a long number; what subscribers send to it is kept for that account, and a
-- STOP or START in it changes the account's suppression list.
CREATE TABLE inbound_numbers (
    -- A short code as its digits, or a long number in E.164: one account each.
    number     text        PRIMARY KEY CHECK (number ~ '^([0-9]{3,8}|\+[0-9]{8,15})$'),
    account_id uuid        NOT NULL REFERENCES accounts (id),
    network    smallint    NOT NULL CHECK (network BETWEEN 1 AND 3), -- carriers.Network
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbound_messages (
    id          uuid        PRIMARY KEY, -- UUIDv7: newest first is id order
    -- null: sent to a number no account has (unrouted), kept for operators, never listed to a
    -- tenant.
    account_id  uuid        REFERENCES accounts (id),
    from_nsn    integer     NOT NULL CHECK (from_nsn BETWEEN 100000000 AND 999999999),
    to_number   text        NOT NULL,
    network     smallint    NOT NULL CHECK (network BETWEEN 1 AND 3), -- the sender's
    text        text        NOT NULL, -- as received, invalid bytes replaced (U+FFFD)
    keyword     text,                 -- the opt-out or opt-in keyword it began with, upper-cased
    received_at timestamptz NOT NULL DEFAULT now()
);
-- A tenant's inbox newest first, and one sender's messages in it.
CREATE INDEX inbound_messages_account_idx ON inbound_messages (account_id, id DESC) WHERE account_id IS NOT NULL;
CREATE INDEX inbound_messages_from_idx ON inbound_messages (account_id, from_nsn, id DESC) WHERE account_id IS NOT NULL;
-- The unrouted ones, for operators.
CREATE INDEX inbound_messages_unrouted_idx ON inbound_messages (id DESC) WHERE account_id IS NULL;
