import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connectStore, storePool } from '../../src/store/postgres.js';
import { migrate } from '../../src/store/migrations.js';
import { downloadSnapshot, publishSnapshot, PUBLICATION_CHUNK_BYTES, type Publication } from '../../src/store/snapshot-publications.js';
import { ErrorCode, SnapshotError, StoreError } from '../../src/common/errors.js';
import { tempDataDir } from '../helpers.js';
import { testClient, withTestSchema } from '../store-fixtures.js';

/** Publish `bytes` as a snapshot file (the download does not read what it holds). */
async function publishBytes(location: Parameters<typeof publishSnapshot>[1], root: string, bytes: Buffer, id: string): Promise<Publication> {
  const path = join(root, `${id}.bin`);
  await writeFile(path, bytes);
  const client = await connectStore(location);
  try {
    return await publishSnapshot(client, location, { id, position: 1, vpas: 1, path, clusterIds: new Uint8Array(4) });
  } finally {
    await client.end();
  }
}

test('a download writes the published bytes, over a client or a pool, and leaves the connection usable', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const pool = storePool(location, 1);
    const client = await connectStore(location);
    try {
      // Three chunks, the last a partial one, and a file of one chunk.
      const large = randomBytes(2 * PUBLICATION_CHUNK_BYTES + 12_345);
      const small = randomBytes(10);
      const publications = [await publishBytes(location, t.root, large, '20260101T000000000Z-000001'), await publishBytes(location, t.root, small, '20260101T000000000Z-000002')];
      assert.equal(publications[0]!.chunks, 3);
      for (const [i, bytes] of [large, small].entries()) {
        for (const via of [client, pool]) {
          const path = await downloadSnapshot(via, location, publications[i]!, t.dir);
          assert.deepEqual(await readFile(path), bytes);
        }
      }
      assert.equal((await client.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1);
      assert.equal((await pool.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1);
      assert.equal((await readdir(t.dir.snapshots)).filter((name) => name.startsWith('.tmp-')).length, 0);
    } finally {
      await client.end();
      await pool.end();
      await t.cleanup();
    }
  });
});

test('a download whose bytes do not match the checksum is refused and leaves no file', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const client = await connectStore(location);
    const raw = await testClient(location);
    try {
      const publication = await publishBytes(location, t.root, randomBytes(PUBLICATION_CHUNK_BYTES + 100), '20260101T000000000Z-000003');
      // One bit of the second chunk changed.
      await raw.query('UPDATE snapshot_chunks SET bytes = set_byte(bytes, 50, get_byte(bytes, 50) # 1) WHERE seq = $1 AND part = 1', [publication.seq]);
      await assert.rejects(downloadSnapshot(client, location, publication, t.dir), (error) => error instanceof SnapshotError && error.code === ErrorCode.SNAPSHOT_CHECKSUM);
      // A chunk missing: the size does not match.
      await raw.query('DELETE FROM snapshot_chunks WHERE seq = $1 AND part = 1', [publication.seq]);
      await assert.rejects(downloadSnapshot(client, location, publication, t.dir), (error) => error instanceof SnapshotError && error.code === ErrorCode.SNAPSHOT_CHECKSUM);
      assert.deepEqual(await readdir(t.dir.snapshots), []);
      assert.equal((await client.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1);
    } finally {
      await raw.end();
      await client.end();
      await t.cleanup();
    }
  });
});

test('a publication removed before its download is a store error, to look for the newest again', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const client = await connectStore(location);
    try {
      const publication = await publishBytes(location, t.root, randomBytes(1000), '20260101T000000000Z-000004');
      await client.query('DELETE FROM snapshots WHERE seq = $1', [publication.seq]);
      await assert.rejects(
        downloadSnapshot(client, location, publication, t.dir),
        (error) => error instanceof StoreError && error.code === ErrorCode.STORE && /removed/.test(error.message),
      );
      assert.deepEqual(await readdir(t.dir.snapshots), []);
    } finally {
      await client.end();
      await t.cleanup();
    }
  });
});
