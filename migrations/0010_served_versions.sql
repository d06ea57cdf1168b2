-- The data versions the fleet served (docs/api.md, "Data versions"): each
-- follower records a state before it serves it, and a state first served by
-- several followers keeps the earliest time. A version names one state for
-- ever: a snapshot id never repeats, and a position is the evidence log's.
CREATE TABLE served_versions (
  -- Byte order, as the service compares ids: a state's successor is the next (snapshot, position).
  snapshot      text COLLATE "C" NOT NULL CHECK (snapshot ~ '^[!-~]{1,64}$'),
  -- The log position the delta over the snapshot was served to; 0 for the snapshot alone.
  position      bigint NOT NULL CHECK (position >= 0),
  -- When a follower first served it, epoch ms.
  served_at_ms  bigint NOT NULL CHECK (served_at_ms >= 0),
  PRIMARY KEY (snapshot, position)
);
