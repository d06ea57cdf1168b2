import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { syncDirectory, tempFileName, writeAllAt } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { isSnapshotId, snapshotPath } from '../engine/snapshot-files.js';
import { ErrorCode, SnapshotError, StoreError } from '../common/errors.js';
import { BinaryCopyColumn } from './binary-copy.js';
import { readCopyOut, withPoolClient } from './copy-out.js';
import { storeError, type StoreLocation } from './postgres.js';

/**
 * Snapshots published in the store (fleet mode): the active builder
 * publishes each snapshot it builds, followers download the newest.
 *
 * A publication is one transaction: the row (checksum, the log position
 * the snapshot covers, the cluster id state it was built with), then its
 * bytes in chunks. Nobody sees it before it commits, and the cluster id
 * state published is always the one of the snapshot beside it. The three
 * newest are kept; older ones go in the same transaction.
 */
export interface Publication {
  /** Order of publication: the newest has the highest. */
  readonly seq: number;
  /** The snapshot's own id (its meta.id). */
  readonly id: string;
  /** The log position the snapshot covers: it holds every evidence item up to it. */
  readonly position: number;
  readonly size: number;
  readonly chunks: number;
  /** Hex SHA-256 of the snapshot file. */
  readonly sha256: string;
  readonly vpas: number;
  readonly createdAt: Date;
}

/** Publications kept; older ones are deleted by the next publication. */
export const KEPT_PUBLICATIONS = 3;
/** Bytes per chunk row: far below PostgreSQL's 1 GB per value, small enough to hold one at a time. */
export const PUBLICATION_CHUNK_BYTES = 8 * 1024 * 1024;

export interface NewPublication {
  readonly id: string;
  readonly position: number;
  readonly vpas: number;
  /** The snapshot file. */
  readonly path: string;
  /** The cluster id state file's bytes the build left. */
  readonly clusterIds: Uint8Array;
}

/**
 * Publish a snapshot file. `stillActive` runs inside the transaction before
 * it commits: a builder that lost its lease meanwhile throws there, and
 * nothing is published.
 */
export async function publishSnapshot(
  client: pg.ClientBase,
  location: StoreLocation,
  snapshot: NewPublication,
  stillActive: (client: pg.ClientBase) => Promise<void> = async () => {},
): Promise<Publication> {
  const file = await open(snapshot.path, 'r');
  try {
    const size = (await file.stat()).size;
    const chunks = Math.max(1, Math.ceil(size / PUBLICATION_CHUNK_BYTES));
    await client.query('BEGIN');
    const hash = createHash('sha256');
    const inserted = await client.query<PublicationRow>(
      `INSERT INTO snapshots (id, position, size, chunks, sha256, vpas, cluster_ids) VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${COLUMNS}`,
      // The checksum is set once every chunk is written.
      [snapshot.id, snapshot.position, size, chunks, '0'.repeat(64), snapshot.vpas, Buffer.from(snapshot.clusterIds)],
    );
    const seq = Number(inserted.rows[0]!.seq);
    const buffer = Buffer.allocUnsafe(Math.min(size, PUBLICATION_CHUNK_BYTES));
    for (let part = 0; part < chunks; part++) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, size - part * PUBLICATION_CHUNK_BYTES), part * PUBLICATION_CHUNK_BYTES);
      const bytes = buffer.subarray(0, bytesRead);
      hash.update(bytes);
      await client.query('INSERT INTO snapshot_chunks (seq, part, bytes) VALUES ($1, $2, $3)', [seq, part, bytes]);
    }
    const sha256 = hash.digest('hex');
    await client.query('UPDATE snapshots SET sha256 = $2 WHERE seq = $1', [seq, sha256]);
    await client.query('DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT $1)', [KEPT_PUBLICATIONS]);
    await stillActive(client);
    await client.query('SELECT pg_notify($1, $2)', [snapshotsChannel(location), String(seq)]);
    await client.query('COMMIT');
    return { ...publicationOf(inserted.rows[0]!, location), sha256 };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw storeError(location, error);
  } finally {
    await file.close();
  }
}

/** The publications kept (at most KEPT_PUBLICATIONS), newest first. */
export async function listPublications(client: pg.ClientBase | pg.Pool, location: StoreLocation): Promise<Publication[]> {
  let result: pg.QueryResult<PublicationRow>;
  try {
    result = await client.query<PublicationRow>(`SELECT ${COLUMNS} FROM snapshots ORDER BY seq DESC`);
  } catch (error) {
    throw storeError(location, error);
  }
  return result.rows.map((row) => publicationOf(row, location));
}

/** The newest publication, or null when none was made yet. */
export async function newestPublication(client: pg.ClientBase | pg.Pool, location: StoreLocation): Promise<Publication | null> {
  return (await listPublications(client, location))[0] ?? null;
}

/** The cluster id state published with `publication`, or null when it was deleted meanwhile. */
export async function publishedClusterIds(client: pg.ClientBase | pg.Pool, location: StoreLocation, publication: Publication): Promise<Buffer | null> {
  try {
    const result = await client.query<{ cluster_ids: Buffer }>('SELECT cluster_ids FROM snapshots WHERE seq = $1', [publication.seq]);
    return result.rows[0]?.cluster_ids ?? null;
  } catch (error) {
    throw storeError(location, error);
  }
}

/**
 * Download a publication into the data directory's snapshots and check its
 * size and SHA-256 before it gets its name: a mismatch is
 * ERR_SNAPSHOT_CHECKSUM and leaves no file. Returns the path.
 *
 * The chunks come in one binary COPY, in order, and are hashed as they
 * arrive while earlier ones are written: the bytes cross the connection
 * once as they are, where a query's result would carry them as hex text
 * (see bench/MEASUREMENTS.md, "Fleet start: the download and the mirror").
 * One statement reads them all, so a publication deleted meanwhile (three
 * newer were published) comes as no rows, never as part of its bytes.
 */
export async function downloadSnapshot(client: pg.ClientBase | pg.Pool, location: StoreLocation, publication: Publication, dir: DataDir): Promise<string> {
  const path = snapshotPath(dir, publication.id);
  await mkdir(dir.snapshots, { recursive: true });
  const temp = join(dir.snapshots, tempFileName('download'));
  const file = await open(temp, 'w', 0o644);
  let renamed = false;
  try {
    const { rows, size, sha256 } = await copyChunks(client, location, publication, new ChunkWriter(file));
    // Deleted meanwhile: the caller looks for the newest again.
    if (rows === 0) throw new StoreError(ErrorCode.STORE, `snapshot ${publication.id} was removed from the store while it was downloaded`);
    if (size !== publication.size || sha256 !== publication.sha256) {
      throw new SnapshotError(
        ErrorCode.SNAPSHOT_CHECKSUM,
        `published snapshot ${publication.id} does not match its checksum (${size} bytes, sha256 ${sha256}; published ${publication.size} bytes, ${publication.sha256})`,
      );
    }
    await file.sync();
    await file.close();
    await rename(temp, path);
    renamed = true;
    await syncDirectory(dir.snapshots);
    return path;
  } finally {
    if (!renamed) {
      await file.close().catch(() => {});
      await rm(temp, { force: true });
    }
  }
}

/** A publication's chunks, in order, through `writer`: how many rows came, their bytes and SHA-256. */
async function copyChunks(
  client: pg.ClientBase | pg.Pool,
  location: StoreLocation,
  publication: Publication,
  writer: ChunkWriter,
): Promise<{ rows: number; size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  const column = new BinaryCopyColumn((piece) => {
    hash.update(piece);
    size += piece.length;
    writer.add(piece);
  });
  // seq is a checked whole number (publicationOf); COPY takes no parameters.
  const sql = `COPY (SELECT bytes FROM snapshot_chunks WHERE seq = ${publication.seq} ORDER BY part) TO STDOUT (FORMAT binary)`;
  const read = (connection: pg.ClientBase) =>
    readCopyOut(connection, location, sql, (piece) => {
      column.push(piece);
      return writer.drained();
    });
  try {
    await (client instanceof pg.Pool ? withPoolClient(client, location, read) : read(client));
    if (!column.complete) throw new StoreError(ErrorCode.STORE, `the download of snapshot ${publication.id} ended before its last chunk`);
    await writer.end();
    return { rows: column.rows, size, sha256: hash.digest('hex') };
  } finally {
    await writer.settled();
  }
}

/**
 * Writes a download's pieces in order, in batches, one batch at a time while
 * the next is gathered, and has what is written flushed to disk every
 * SYNC_BYTES: the kernel would start writing back only at its dirty
 * threshold (a tenth of memory), leaving the whole file to the final fsync.
 * The first failure of a write or a flush is kept and thrown by the next
 * call (after a failed fsync the kernel may report the next one clean).
 */
class ChunkWriter {
  readonly #file: FileHandle;
  #batch: Buffer[] = [];
  #batchBytes = 0;
  #position = 0;
  #unsynced = 0;
  /** The batch being written and the flush under way; neither rejects: a failure goes to #failure. */
  #writing: Promise<void> = Promise.resolve();
  #syncing: Promise<void> | null = null;
  #failure: { readonly error: unknown } | null = null;

  constructor(file: FileHandle) {
    this.#file = file;
  }

  /** Add a piece; it is written as it is, not copied. */
  add(piece: Buffer): void {
    this.#batch.push(piece);
    this.#batchBytes += piece.length;
  }

  /** Once a batch is gathered: wait for the one before it, and start writing it. */
  async drained(): Promise<void> {
    if (this.#batchBytes < WRITE_BATCH_BYTES) return;
    await this.#writing;
    this.#check();
    this.#write();
  }

  /** Write what is left and wait for every write and flush. */
  async end(): Promise<void> {
    await this.#writing;
    this.#check();
    if (this.#batchBytes > 0) this.#write();
    await this.settled();
    this.#check();
  }

  /** Wait for what is under way, whatever its outcome. */
  async settled(): Promise<void> {
    await this.#writing;
    await this.#syncing;
  }

  #write(): void {
    const batch = this.#batch;
    const position = this.#position;
    this.#position += this.#batchBytes;
    this.#unsynced += this.#batchBytes;
    this.#batch = [];
    this.#batchBytes = 0;
    this.#writing = writeAllAt(this.#file, batch, position).then(
      () => this.#flushSometimes(),
      (error: unknown) => this.#fail(error),
    );
  }

  #flushSometimes(): void {
    if (this.#unsynced < SYNC_BYTES || this.#syncing !== null) return;
    this.#unsynced = 0;
    this.#syncing = this.#file
      .datasync()
      .catch((error: unknown) => this.#fail(error))
      .finally(() => (this.#syncing = null));
  }

  #fail(error: unknown): void {
    this.#failure ??= { error };
  }

  #check(): void {
    if (this.#failure !== null) throw this.#failure.error;
  }
}

/** Bytes of one write: large enough that a write's cost is the copy, not the call. */
const WRITE_BATCH_BYTES = 4 * 1024 * 1024;
/** Bytes written between two background flushes to disk. */
const SYNC_BYTES = 128 * 1024 * 1024;

/** The channel on which a publication announces its seq. */
export function snapshotsChannel(location: StoreLocation): string {
  return `${location.schema}_snapshots`;
}

const COLUMNS = 'seq, id, position, size, chunks, sha256, vpas, created_at';

interface PublicationRow {
  readonly seq: string;
  readonly id: string;
  readonly position: string;
  readonly size: string;
  readonly chunks: number;
  readonly sha256: string;
  readonly vpas: string;
  readonly created_at: Date;
}

/** A row as a publication, checked: a row that breaks its contract is ERR_STORE_DATA. */
function publicationOf(row: PublicationRow, location: StoreLocation): Publication {
  const publication: Publication = {
    seq: Number(row.seq),
    id: row.id,
    position: Number(row.position),
    size: Number(row.size),
    chunks: row.chunks,
    sha256: row.sha256,
    vpas: Number(row.vpas),
    createdAt: row.created_at,
  };
  const wholeNumbers = [publication.seq, publication.position, publication.size, publication.chunks, publication.vpas];
  if (!wholeNumbers.every((n) => Number.isSafeInteger(n) && n >= 0) || !isSnapshotId(publication.id) || !/^[0-9a-f]{64}$/.test(publication.sha256)) {
    throw new StoreError(ErrorCode.STORE_DATA, `store schema ${location.schema}: snapshot publication ${JSON.stringify(row.seq)} is malformed`);
  }
  return publication;
}
