import pg from 'pg';
import { ErrorCode, StoreError } from '../common/errors.js';
import { fullPath, type MirrorPublication } from '../mirror/mirror-publication.js';
import { BinaryCopyColumn } from './binary-copy.js';
import { readCopyOut, withPoolClient } from './copy-out.js';
import { PUBLICATION_CHUNK_BYTES } from './snapshot-publications.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * The local mirror's versions in the store (fleet mode; migration 0009):
 * the active builder records each version it signs, every follower serves
 * the newest (fleet/store-mirror.ts). A version's row holds its signed
 * manifest and the public key that signed it; its files are the diffs its
 * manifest names and, for a base, its full file. A follower builds any
 * later version's entries from the newest base and the one-step diffs after
 * it, so the full file, 90 MB at 10M VPAs, is stored once per base rather
 * than once a minute.
 */
export interface StoredMirrorVersion {
  readonly version: number;
  /** The manifest's text, as served. */
  readonly manifest: string;
  /** Base64 of the signing key's 32 public bytes. */
  readonly publicKey: string;
  /** Whether the store holds its full file. */
  readonly base: boolean;
}

/** The channel on which a recorded version announces its number. */
export function mirrorChannel(location: StoreLocation): string {
  return `${location.schema}_mirror`;
}

/**
 * Record a version with its diffs, and its full file when `base`, in one
 * transaction; a base deletes every version before it. `stillActive` runs
 * before the commit: a builder that lost its lease throws there and nothing
 * is recorded. A version number recorded already is refused (another
 * builder made it), as a store error.
 */
export async function recordMirrorVersion(
  pool: pg.Pool,
  location: StoreLocation,
  publication: MirrorPublication,
  base: boolean,
  stillActive: (client: pg.ClientBase) => Promise<void>,
): Promise<void> {
  await withPoolClient(pool, location, async (client) => {
    try {
      await client.query('BEGIN');
      const publicKey = (JSON.parse(publication.publicKey) as { public_key: string }).public_key;
      await client.query('INSERT INTO mirror_versions (version, manifest, public_key, base) VALUES ($1, $2, $3, $4)', [publication.version, publication.manifest, publicKey, base]);
      for (const [path, file] of publication.files) {
        if (path === fullPath(publication.version) && !base) continue;
        const bytes = file.identity;
        const parts = Math.max(1, Math.ceil(bytes.length / PUBLICATION_CHUNK_BYTES));
        for (let part = 0; part < parts; part++) {
          const piece = Buffer.from(bytes.buffer, bytes.byteOffset + part * PUBLICATION_CHUNK_BYTES, Math.min(PUBLICATION_CHUNK_BYTES, bytes.length - part * PUBLICATION_CHUNK_BYTES));
          await client.query('INSERT INTO mirror_files (version, path, part, bytes) VALUES ($1, $2, $3, $4)', [publication.version, path, part, piece]);
        }
      }
      if (base) await client.query('DELETE FROM mirror_versions WHERE version < $1', [publication.version]);
      // Only the newest version is served: of those before, followers need just the one-step diffs
      // that lead from the base to it. Kept, every version's offered diffs (up to half the full
      // file each) would pile up until the next base.
      else await client.query("DELETE FROM mirror_files WHERE version < $1 AND path LIKE 'diff/%' AND path <> 'diff/' || (version - 1) || '/' || version", [publication.version]);
      await stillActive(client);
      await client.query('SELECT pg_notify($1, $2)', [mirrorChannel(location), String(publication.version)]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw storeError(location, error);
    }
  });
}

/** The newest version recorded, or null before the first. */
export async function newestMirrorVersion(pool: pg.Pool, location: StoreLocation): Promise<StoredMirrorVersion | null> {
  return versionRow(pool, location, 'SELECT version, manifest, public_key, base FROM mirror_versions ORDER BY version DESC LIMIT 1', []);
}

/** Version `version`, or null when it is not kept. */
export async function mirrorVersion(pool: pg.Pool, location: StoreLocation, version: number): Promise<StoredMirrorVersion | null> {
  return versionRow(pool, location, 'SELECT version, manifest, public_key, base FROM mirror_versions WHERE version = $1', [version]);
}

/** The newest base at or before `version`, or null when none is kept. */
export async function mirrorBaseAtOrBefore(pool: pg.Pool, location: StoreLocation, version: number): Promise<StoredMirrorVersion | null> {
  return versionRow(pool, location, 'SELECT version, manifest, public_key, base FROM mirror_versions WHERE base AND version <= $1 ORDER BY version DESC LIMIT 1', [version]);
}

/**
 * A file of version `version` (a path below /v1/mirror/), or null when the
 * store does not hold it (never stored, or deleted by a newer base). Read
 * by binary COPY, as snapshots are (snapshot-publications.ts): the bytes
 * cross the connection once, as they are.
 */
export async function readMirrorFile(pool: pg.Pool, location: StoreLocation, version: number, path: string): Promise<Uint8Array | null> {
  // COPY takes no parameters: both are checked to be what this module writes.
  if (!Number.isSafeInteger(version) || version < 1 || !/^(full\/[0-9]+|diff\/[0-9]+\/[0-9]+)$/.test(path)) throw new RangeError(`not a mirror file: ${version} ${path}`);
  const pieces: Buffer[] = [];
  const column = new BinaryCopyColumn((piece) => pieces.push(Buffer.from(piece)));
  const sql = `COPY (SELECT bytes FROM mirror_files WHERE version = ${version} AND path = '${path}' ORDER BY part) TO STDOUT (FORMAT binary)`;
  await withPoolClient(pool, location, (client) =>
    readCopyOut(client, location, sql, (piece) => {
      column.push(piece);
      return undefined;
    }),
  );
  if (!column.complete) throw new StoreError(ErrorCode.STORE, `the read of mirror file ${path} ended before its last part`);
  return column.rows === 0 ? null : new Uint8Array(Buffer.concat(pieces));
}

interface VersionRow {
  readonly version: string;
  readonly manifest: string;
  readonly public_key: string;
  readonly base: boolean;
}

async function versionRow(pool: pg.Pool, location: StoreLocation, sql: string, values: unknown[]): Promise<StoredMirrorVersion | null> {
  let result: pg.QueryResult<VersionRow>;
  try {
    result = await pool.query<VersionRow>(sql, values);
  } catch (error) {
    throw storeError(location, error);
  }
  const row = result.rows[0];
  if (row === undefined) return null;
  const version = Number(row.version);
  if (!Number.isSafeInteger(version) || version < 1 || typeof row.manifest !== 'string' || typeof row.base !== 'boolean' || !/^[A-Za-z0-9+/]{43}=$/.test(row.public_key)) {
    throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: mirror version ${JSON.stringify(row.version)} is malformed`);
  }
  return { version, manifest: row.manifest, publicKey: row.public_key, base: row.base };
}
