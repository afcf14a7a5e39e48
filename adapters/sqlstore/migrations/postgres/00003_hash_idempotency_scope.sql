-- +goose Up
-- An idempotency scope was stored as its text, "KEYID|PROJECT,PROJECT,...": a batch naming
-- hundreds of projects overflowed the primary-key index (a B-tree entry holds about 2,700
-- bytes). The domain now names a scope by the hex SHA-256 of that same text; hashing the rows
-- written before keeps their keys answering retries after an upgrade. Only texts hold '|', so
-- no hashed row is hashed again. (SQLite does the same in Go: sqlstore.hashIdempotencyScopes.)
UPDATE idempotency_keys
SET scope = encode(sha256(convert_to(scope, 'UTF8')), 'hex')
WHERE strpos(scope, '|') > 0;

-- +goose Down
-- A hash does not give back its text: the previous release could never match these records.
DELETE FROM idempotency_keys WHERE strpos(scope, '|') = 0;
