-- Snapshots published by the active builder. A publication is one
-- transaction: the row, its chunks and the cluster id state it was built
-- with appear together or not at all. Followers take the row with the
-- highest seq; the builder keeps the three newest.
CREATE TABLE snapshots (
  seq          bigserial PRIMARY KEY,
  id           text NOT NULL UNIQUE,
  -- The log position the snapshot covers: it holds every item up to it.
  position     bigint NOT NULL CHECK (position >= 0),
  size         bigint NOT NULL CHECK (size > 0),
  chunks       integer NOT NULL CHECK (chunks > 0),
  -- Hex SHA-256 of the snapshot file's bytes.
  sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  vpas         bigint NOT NULL,
  cluster_ids  bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE snapshot_chunks (
  seq    bigint NOT NULL REFERENCES snapshots (seq) ON DELETE CASCADE,
  part   integer NOT NULL CHECK (part >= 0),
  bytes  bytea NOT NULL,
  PRIMARY KEY (seq, part)
);
-- Snapshot bytes are compressed already where it pays (roaring bitmaps) and
-- random elsewhere (hashes): stored as they are, without a compression try.
ALTER TABLE snapshot_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
ALTER TABLE snapshots ALTER COLUMN cluster_ids SET STORAGE EXTERNAL;
