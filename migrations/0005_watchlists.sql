-- Watchlists of the fleet: a journal of every change (watchlists, watched
-- VPAs with their last screened state, events and their deliveries), which
-- every follower replays and follows. journal_head is locked by each writer
-- until it commits, so positions become visible in order.
CREATE TABLE watch_journal (
  position   bigserial PRIMARY KEY,
  line       jsonb NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE watch_journal_head (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
);
INSERT INTO watch_journal_head DEFAULT VALUES;
