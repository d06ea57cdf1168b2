-- The console's records, shared by every replica: the audit log of key and
-- session changes, console sessions (token hashes only), and key usage per
-- hour, to which every replica adds its counts.
CREATE TABLE audit_records (
  position bigserial PRIMARY KEY,
  record   jsonb NOT NULL
);

CREATE TABLE console_sessions (
  token_hash text PRIMARY KEY,
  key_id     text NOT NULL,
  key_hash   text NOT NULL,
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

CREATE TABLE key_usage (
  key_id       text NOT NULL,
  hour         timestamptz NOT NULL,
  requests     bigint NOT NULL CHECK (requests >= 0),
  limited      bigint NOT NULL CHECK (limited >= 0),
  last_used_at timestamptz,
  PRIMARY KEY (key_id, hour)
);
CREATE INDEX key_usage_hour ON key_usage (hour);
