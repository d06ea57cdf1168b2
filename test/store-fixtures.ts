import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectStore, type StoreLocation } from '../src/store/postgres.js';
import { appendEvidenceBytes } from '../src/store/evidence-log.js';
import { BuilderRole, type PublishPolicy } from '../src/roles/builder-role.js';
import { migrate } from '../src/store/migrations.js';
import { downloadSnapshot, type Publication } from '../src/store/snapshot-publications.js';
import type { HistoryLease } from '../src/store/answer-history-store.js';
import { readSnapshotFile } from '../src/engine/snapshot-files.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { ndjson, tempDataDir, until, type EvidenceInput } from './helpers.js';

/** The PostgreSQL the tests use (trust authentication, database `test`); each test works in a schema of its own. */
export const TEST_STORE_URL = process.env.UPI_RISK_TEST_STORE ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Run `work` with a fresh schema name in the test database, and drop that schema afterwards. */
export async function withTestSchema<T>(work: (location: StoreLocation) => Promise<T>): Promise<T> {
  const location = newTestLocation();
  try {
    return await work(location);
  } finally {
    await dropTestSchema(location);
  }
}

/** `work` with the history lease `lockName` held by a connection of its own, as a recording follower holds it. */
export async function withHistoryLease<T>(location: StoreLocation, lockName: string, work: (lease: HistoryLease) => Promise<T>): Promise<T> {
  const holder = await connectStore(location);
  try {
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_advisory_lock(hashtext($1))', [lockName])).rows[0]!.pid;
    return await work({ lockName, pid });
  } finally {
    await holder.end();
  }
}

/** A fresh schema name in the test database (nothing made yet). */
export function newTestLocation(): StoreLocation {
  return { url: TEST_STORE_URL, schema: `t_${randomBytes(6).toString('hex')}` };
}

/** Drop a test's schema with everything in it. */
export async function dropTestSchema(location: StoreLocation): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_STORE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${location.schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** What a test of followers works with: the store, its arguments for the CLI, and a folder for the followers' data directories. */
export interface PublishedStore {
  readonly location: StoreLocation;
  readonly storeArgs: readonly string[];
  readonly root: string;
}

/**
 * A migrated schema of the test's own whose log holds `items`, published
 * by a builder in this process, for `work` to start followers on; the
 * builder, its data directory and the schema are gone afterwards.
 */
export async function withPublishedStore(items: readonly EvidenceInput[], work: (store: PublishedStore) => Promise<void>): Promise<void> {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const builder = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED });
    try {
      await appendToLog(location, items);
      builder.requestBuild();
      await until('a publication', 30_000, () => builder.published !== null);
      await work({ location, storeArgs: ['--store', location.url, '--store-schema', location.schema], root: t.root });
    } finally {
      await builder.close();
      await t.cleanup();
    }
  });
}

/** A plain client in the location's schema, for a test to look at what the service stored. */
export async function testClient(location: StoreLocation): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: location.url });
  await client.connect();
  await client.query(`SET search_path TO "${location.schema}"`);
  return client;
}

/** Append items to the log as one ingest (failing the test if refused); resolves with the log's head after it. */
export async function appendToLog(location: StoreLocation, items: readonly EvidenceInput[]): Promise<number> {
  const client = await connectStore(location);
  try {
    const result = await appendEvidenceBytes(client, location, Buffer.from(ndjson(items)), 'test');
    assert.ok(result.accepted, JSON.stringify(result.errors));
    return result.position;
  } finally {
    await client.end();
  }
}

/** A builder policy that publishes only when nothing is published yet, or when asked (requestBuild). */
export const PUBLISH_WHEN_ASKED: PublishPolicy = { items: 1_000_000, afterMs: 60 * 60_000 };

/** A publication's snapshot, downloaded (its checksum checked) and read. */
export async function published(location: StoreLocation, publication: Publication): Promise<SnapshotView> {
  const t = await tempDataDir();
  const client = await connectStore(location);
  try {
    return new SnapshotView(await readSnapshotFile(await downloadSnapshot(client, location, publication, t.dir)));
  } finally {
    await client.end();
    await t.cleanup();
  }
}

/** Resolves once the schema of `location` holds a publication for followers to follow. */
export async function untilPublished(location: StoreLocation, timeoutMs = 60_000): Promise<void> {
  const db = new pg.Client({ connectionString: TEST_STORE_URL });
  await db.connect();
  try {
    await until('a publication to follow', timeoutMs, async () => (await db.query(`SELECT 1 FROM "${location.schema}".snapshots`)).rows.length > 0);
  } finally {
    await db.end();
  }
}
