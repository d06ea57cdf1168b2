-- The fleet's history of answers (docs/api.md, "Answers as of a past
-- instant" and "Answer history"): written by the one follower holding the
-- history lease (fleet/history-recorder.ts), before it serves each state,
-- and read by every follower.

-- Each stretch of time one follower recorded: an instant outside every one
-- (the lease changing hands) was not recorded, and its answers are not told.
CREATE TABLE answer_recorders (
  term      bigserial PRIMARY KEY,
  began_ms  bigint NOT NULL CHECK (began_ms >= 0),
  -- The last time the recorder said it was recording, epoch ms.
  alive_ms  bigint NOT NULL CHECK (alive_ms >= began_ms),
  -- Stopped cleanly: it recorded nothing after alive_ms.
  ended     boolean NOT NULL DEFAULT false
);

-- The states recorded, by when the recorder began to serve each: the state
-- of an instant is the last one begun at or before it.
CREATE TABLE answer_states (
  at_ms         bigint PRIMARY KEY CHECK (at_ms > 0),
  term          bigint NOT NULL REFERENCES answer_recorders (term),
  snapshot      text COLLATE "C" NOT NULL CHECK (snapshot ~ '^[!-~]{1,64}$'),
  position      bigint NOT NULL CHECK (position >= 0),
  -- X-Data-As-Of of the state, epoch ms.
  data_as_of_ms bigint NOT NULL CHECK (data_as_of_ms >= 0),
  -- The size of the recorder's change log once the state was written: tells its own file from another's.
  log_bytes     bigint NOT NULL CHECK (log_bytes >= 0)
);

-- Every change of a VPA's answer: the change log's record (history/change-log.ts), as written.
CREATE TABLE answer_changes (
  vpa     text COLLATE "C" NOT NULL CHECK (vpa ~ '^[!-~]{1,255}$'),
  at_ms   bigint NOT NULL CHECK (at_ms > 0),
  -- The VPA's number: its place in each column of confidences.
  number  integer NOT NULL CHECK (number >= 0),
  record  bytea NOT NULL
);
CREATE UNIQUE INDEX answer_changes_by_vpa ON answer_changes (vpa, at_ms DESC);

-- The confidence of every VPA from a state of a new scoring day on (history/score-columns.ts), by number, in blocks.
CREATE TABLE answer_score_columns (
  at_ms         bigint PRIMARY KEY CHECK (at_ms > 0),
  scored_at_ms  bigint NOT NULL CHECK (scored_at_ms >= 0),
  vpas          integer NOT NULL CHECK (vpas >= 0)
);
CREATE TABLE answer_score_blocks (
  at_ms   bigint NOT NULL REFERENCES answer_score_columns ON DELETE CASCADE,
  block   integer NOT NULL CHECK (block >= 0),
  -- 32,768 values (fewer in the last block), u16 little endian each: confidence × 10,000, or 0xffff for none.
  scores  bytea NOT NULL,
  PRIMARY KEY (at_ms, block)
);
