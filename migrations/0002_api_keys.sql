-- API keys of the fleet: one row per key, the record as JSON (the key's
-- SHA-256, never the key). keys_version changes with every change, and
-- servers reload when it does.
CREATE TABLE api_keys (
  id     text PRIMARY KEY,
  record jsonb NOT NULL
);

CREATE TABLE keys_version (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version   text NOT NULL
);
INSERT INTO keys_version (version) VALUES (gen_random_uuid()::text);
