import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectStore, type StoreLocation } from '../src/store/postgres.js';
import { appendEvidenceBytes } from '../src/store/evidence-log.js';
import type { PublishPolicy } from '../src/roles/builder-role.js';
import { downloadSnapshot, type Publication } from '../src/store/snapshot-publications.js';
import { readSnapshotFile } from '../src/engine/snapshot-files.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { ndjson, tempDataDir, type EvidenceInput } from './helpers.js';

/** The PostgreSQL the tests use (trust authentication, database `test`); each test works in a schema of its own. */
export const TEST_STORE_URL = process.env.UPI_RISK_TEST_STORE ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Run `work` with a fresh schema name in the test database, and drop that schema afterwards. */
export async function withTestSchema<T>(work: (location: StoreLocation) => Promise<T>): Promise<T> {
  const location = { url: TEST_STORE_URL, schema: `t_${randomBytes(6).toString('hex')}` };
  try {
    return await work(location);
  } finally {
    const client = new pg.Client({ connectionString: TEST_STORE_URL });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${location.schema}" CASCADE`);
    } finally {
      await client.end();
    }
  }
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
