-- The local mirror's versions (docs/api.md, "The mirror"), made and signed
-- by the active builder and served by every follower. A version is one
-- transaction: its row and every file it stores appear together or not at
-- all. Each row stores the diffs its manifest names; a base row stores its
-- full file too, and a follower builds any later version from the newest
-- base and the diffs after it. A base deletes the versions before it.
CREATE TABLE mirror_versions (
  version     bigint PRIMARY KEY CHECK (version > 0),
  -- The signed manifest, as GET /v1/mirror/manifest serves it.
  manifest    text NOT NULL,
  -- Base64 of the 32 raw bytes of the public key that signed it.
  public_key  text NOT NULL CHECK (public_key ~ '^[A-Za-z0-9+/]{43}=$'),
  -- Whether mirror_files holds this version's full file.
  base        boolean NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE mirror_files (
  version  bigint NOT NULL REFERENCES mirror_versions (version) ON DELETE CASCADE,
  -- The file's path below /v1/mirror/: full/<version>, diff/<from>/<version>.
  path     text NOT NULL,
  part     integer NOT NULL CHECK (part >= 0),
  bytes    bytea NOT NULL,
  PRIMARY KEY (version, path, part)
);
-- Mirror files are hash bits: stored as they are, without a compression try.
ALTER TABLE mirror_files ALTER COLUMN bytes SET STORAGE EXTERNAL;
