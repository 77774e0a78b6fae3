-- Leases of background work one node at a time should do (asking the payment provider about
-- open checkouts, asking the networks about stale messages): a node runs a round only while
-- it holds the worker's lease, renewed by each round; another takes it once lease_until has
-- passed. epoch counts the holders. Their writes are safe twice (each moves a row from one
-- state to the next once): the lease saves the duplicate calls to providers and networks.
CREATE TABLE worker_leases (
    name        text        PRIMARY KEY,
    node        text        NOT NULL,
    epoch       bigint      NOT NULL,
    lease_until timestamptz NOT NULL
);
