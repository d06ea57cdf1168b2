-- Each prune of the fleet's history of answers (fleet/history-recorder.ts):
-- a follower taking the history lease over prunes once the last prune,
-- whoever ran it, is a day old, rather than a while after every take-over.
CREATE TABLE answer_prunes (
  at_ms      bigint PRIMARY KEY CHECK (at_ms > 0),
  -- The changes replaced before this instant were dropped.
  cutoff_ms  bigint NOT NULL CHECK (cutoff_ms >= 0),
  dropped    bigint NOT NULL CHECK (dropped >= 0)
);

-- The changes by time: a prune reads only those since the last prune's
-- cutoff (each VPA has at most one record before it), not the whole table.
CREATE INDEX answer_changes_by_time ON answer_changes (at_ms);
