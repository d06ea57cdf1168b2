-- Corrections of the fleet: retractions of evidence items and clearances of
-- VPAs (docs/api.md, "Corrections"). Each takes the next position of the
-- evidence log under log_head's row lock, as an ingest does, so followers
-- apply corrections and evidence in one order, the order they committed,
-- and X-Data-Version covers both.
CREATE TABLE corrections (
  position     bigint PRIMARY KEY,
  kind         text NOT NULL CHECK (kind IN ('retraction', 'clearance', 'clearance_ended')),
  -- The VPAs whose answers it changes.
  upis         text[] NOT NULL,
  clearance_id text,
  actor        text NOT NULL,
  reason       text,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);

-- Every retracted evidence item, with the position of its retraction.
CREATE TABLE retracted_evidence (
  evidence_id text PRIMARY KEY,
  position    bigint NOT NULL
);

CREATE TABLE clearances (
  id             text PRIMARY KEY,
  upi            text NOT NULL,
  reason         text NOT NULL,
  reference      text,
  created_at_ms  bigint NOT NULL,
  created_by     text NOT NULL,
  -- The VPA's source urls when it was made: their evidence does not count while it is in force.
  urls           text[] NOT NULL,
  position       bigint NOT NULL,
  ended_at_ms    bigint,
  ended_by       text,
  ended_position bigint
);
-- One clearance in force per VPA.
CREATE UNIQUE INDEX clearances_in_force ON clearances (upi) WHERE ended_position IS NULL;
CREATE INDEX clearances_by_upi ON clearances (upi, created_at_ms);

-- A correction reads a VPA's evidence to answer it afresh.
CREATE INDEX evidence_by_upi ON evidence (upi);
