-- Contacts and their groups. A contact's phone is E.164, unique per account; deleting one
-- opts it out (opted_out_at) and keeps it, so its history stays and campaigns skip it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE contact_groups (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description text        NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX contact_groups_account_idx ON contact_groups (account_id, id DESC);

CREATE TABLE contacts (
    account_id   uuid        NOT NULL REFERENCES accounts (id),
    id           uuid        NOT NULL,
    phone        text        NOT NULL CHECK (phone ~ '^\+254[17][0-9]{8}$'),
    first_name   text        NOT NULL DEFAULT '' CHECK (length(first_name) <= 100),
    last_name    text        NOT NULL DEFAULT '' CHECK (length(last_name) <= 100),
    group_id     uuid        REFERENCES contact_groups (id) ON DELETE SET NULL,
    opted_out_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id)
);
-- One contact per phone per account, opted out or not (re-creating an opted-out one is 409).
CREATE UNIQUE INDEX contacts_phone_key ON contacts (account_id, phone);
-- Active contacts of a group, newest first: group lists, counts and campaign recipients.
CREATE INDEX contacts_group_idx ON contacts (account_id, group_id, id) WHERE opted_out_at IS NULL;
-- Search by a part of the phone or of a name, case-insensitively: trigrams of one text that
-- holds both (see persistence/contacts.go, searchText).
CREATE INDEX contacts_search_idx ON contacts USING gin (
    (lower(first_name || ' ' || last_name) || ' ' || substr(phone, 2)) gin_trgm_ops) WHERE opted_out_at IS NULL;
