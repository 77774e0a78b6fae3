-- Sender ID applications: the documents of each round (a re-application adds a round and
-- keeps the earlier ones), when the application was submitted and reviewed, and the indexes
-- the account's list and the operators' review queue read.

CREATE TABLE sender_documents (
    id           uuid        PRIMARY KEY,
    sender_id    uuid        NOT NULL REFERENCES sender_ids (id),
    account_id   uuid        NOT NULL REFERENCES accounts (id),
    round        integer     NOT NULL CHECK (round > 0),
    kind         text        NOT NULL CHECK (kind IN ('business_cert', 'kra_pin', 'auth_letter', 'request_letter')),
    storage_key  text        NOT NULL UNIQUE,
    content_type text        NOT NULL CHECK (content_type IN ('application/pdf', 'image/png', 'image/jpeg')),
    size_bytes   bigint      NOT NULL CHECK (size_bytes > 0),
    sha256       bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (sender_id, round, kind)
);

ALTER TABLE sender_ids
    ADD COLUMN documents_round integer NOT NULL DEFAULT 0 CHECK (documents_round >= 0),
    ADD COLUMN submitted_at    timestamptz,
    ADD COLUMN reviewed_at     timestamptz;

-- The account's list (newest first) and the review queue (oldest submission first).
CREATE INDEX sender_ids_account_idx ON sender_ids (account_id, id DESC);
CREATE INDEX sender_ids_review_idx ON sender_ids (status, submitted_at, id)
    WHERE status IN ('documents_submitted', 'payment_pending');
-- An approved sender is always paid for and active until cancelled.
ALTER TABLE sender_ids ADD CONSTRAINT sender_ids_approved_paid CHECK (status <> 'approved' OR fee_paid);
