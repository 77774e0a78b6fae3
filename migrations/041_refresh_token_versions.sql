-- A refresh token carries the account's token version when it was issued: one issued by a
-- sign-in whose password check overlapped a password change or reset (the change revokes the
-- tokens that exist when it commits, not one inserted just after) is refused when used, as
-- an access token of an old version is. Tokens issued before this migration have none and
-- were revoked by any change since.
ALTER TABLE refresh_tokens ADD COLUMN token_version bigint;
