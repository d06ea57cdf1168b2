-- A report sent with an Idempotency-Key (docs/api.md, Reports) is stored
-- once per key and Idempotency-Key, whichever follower a retry reaches: a
-- retry finds the first report instead of adding a second.
ALTER TABLE reports ADD COLUMN idempotency_key text CHECK (idempotency_key ~ '^[!-~]{1,255}$');
CREATE UNIQUE INDEX reports_idempotent ON reports (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
