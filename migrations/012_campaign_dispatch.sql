-- Contacts that opted out, by when: a campaign checks each page of its recipients against
-- only the contacts that opted out since it was created (almost always none), instead of
-- looking up every recipient's phone (21 ms a page of 2,000, on the dispatch path).
CREATE INDEX contacts_opted_out_idx ON contacts (account_id, opted_out_at) WHERE opted_out_at IS NOT NULL;

-- A campaign's job writes its message rows a chunk at a time as it dispatches (its first
-- submits start after the first chunk, and memory holds one chunk, not the whole audience):
-- expanded counts the pending recipients written so far, in the audience's order, so a
-- resumed job goes on from there. pending_recipients is cleared with the last chunk.
ALTER TABLE jobs ADD COLUMN expanded integer NOT NULL DEFAULT 0 CHECK (expanded >= 0);
