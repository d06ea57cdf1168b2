-- The evidence log: one row per evidence item, in the order ingests
-- committed. Positions are given out under the row lock of log_head, so a
-- reader that has seen position P has seen every position below it.
CREATE TABLE evidence (
  position        bigint PRIMARY KEY,
  evidence_id     text NOT NULL UNIQUE,
  upi             text NOT NULL,
  url             text NOT NULL,
  source_category smallint NOT NULL CHECK (source_category BETWEEN 0 AND 3),
  risk_category   smallint NOT NULL CHECK (risk_category BETWEEN 0 AND 4),
  captured_at_ms  bigint NOT NULL,
  screenshot      boolean NOT NULL,
  ingested_at     timestamptz NOT NULL DEFAULT now()
);

-- One row: the last position given out. Each ingest locks it until it commits.
CREATE TABLE log_head (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  position  bigint NOT NULL
);
INSERT INTO log_head (position) VALUES (0);

-- One row per accepted ingest (a file, or an HTTP body).
CREATE TABLE ingests (
  id             bigserial PRIMARY KEY,
  source         text NOT NULL,
  items          integer NOT NULL,
  duplicates     integer NOT NULL,
  first_position bigint NOT NULL,
  last_position  bigint NOT NULL,
  ingested_at    timestamptz NOT NULL DEFAULT now()
);
