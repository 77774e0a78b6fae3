-- Fencing tokens (DESIGN §8): an account's tenant actor takes the next epoch of its account
-- when it starts, and the writes that spend money or send messages on its behalf (the debit
-- of a send, the submit mark written before a carrier submit) check it, holding the row
-- FOR SHARE until they commit. A later incarnation (on another node, or this one after the
-- cluster moved the account) bumps the epoch, which waits for those writes and then fences
-- every write the earlier one tries: zero rows match, and the earlier one stops.
CREATE TABLE tenant_fences (
    account_id uuid        PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    epoch      bigint      NOT NULL CHECK (epoch > 0),
    node       text        NOT NULL, -- the node whose incarnation holds the epoch
    taken_at   timestamptz NOT NULL DEFAULT now()
);

-- Each node reads back only its own marks when it restarts (a node's marks cover submits it
-- may have made); a tenant replacing another node's reads that node's marks of its account
-- (AccountMarks). '' is a single node's name.
ALTER TABLE submit_marks ADD COLUMN node text NOT NULL DEFAULT '';
