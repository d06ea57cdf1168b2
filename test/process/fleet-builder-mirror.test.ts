import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PUBLISH_WHEN_ASKED, appendToLog, published, testClient, withTestSchema } from '../store-fixtures.js';
import { buildAndLoad, evidence, ndjson, tempDataDir, until, type EvidenceInput } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { BuilderRole } from '../../src/roles/builder-role.js';
import { ingestBytes, listEvidenceFiles } from '../../src/evidence/store.js';
import { evidenceItem, validateEvidence } from '../../src/evidence/record.js';
import type { DataDir } from '../../src/common/data-dir.js';
import type { StoreLocation } from '../../src/store/postgres.js';

/** Items of every shape a line takes, some sharing urls so that clusters form. */
function items(count: number, tag: string): EvidenceInput[] {
  return Array.from({ length: count }, (_, i) =>
    evidence(`${tag}${i}@ybl`, i % 7 === 0 ? `https://ü.example/"${tag}"\\€/${i}` : `https://gang${i % 5}.example/${tag}`, {
      evidence_id: `${tag}-${i}`,
      ...(i % 3 === 0 ? { risk_category: 'mule', screenshot_available: true } : {}),
    }),
  );
}

/** The lines of a data directory's evidence files, in name order. */
async function mirroredLines(dir: DataDir): Promise<string[]> {
  const lines: string[] = [];
  for (const name of await listEvidenceFiles(dir)) lines.push(...(await readFile(join(dir.evidence, name), 'utf8')).split('\n').filter((line) => line !== ''));
  return lines;
}

/** The line the log's item would be as an ingest stores it. */
function storedLine(item: EvidenceInput): string {
  const checked = validateEvidence(item);
  assert.ok(checked.ok);
  return JSON.stringify(evidenceItem(checked.record));
}

async function mirrorState(dir: DataDir): Promise<{ schema: string; position: number; evidenceId: string }> {
  return JSON.parse(await readFile(join(dir.state, 'log-mirror.json'), 'utf8')) as { schema: string; position: number; evidenceId: string };
}

/** A builder with small batches (several COPYs of the log, several files each), until its first publication. */
async function mirrorOnce(location: StoreLocation, dir: DataDir): Promise<BuilderRole> {
  const role = await BuilderRole.start({ location, dataDir: dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED, mirrorBatch: 4 });
  await until('a publication', 30_000, () => role.published !== null);
  return role;
}

test('the mirror stores the log in order, in files a build reads as it reads the ingested items', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const logged = [...items(60, 'first'), ...items(35, 'second')];
    await appendToLog(location, logged.slice(0, 60));
    await appendToLog(location, [...logged.slice(60), logged[3]!]);
    const t = await tempDataDir();
    const ingested = await tempDataDir();
    const role = await mirrorOnce(location, t.dir);
    try {
      assert.deepEqual(await mirroredLines(t.dir), logged.map(storedLine));
      assert.equal((await listEvidenceFiles(t.dir)).length, Math.ceil(logged.length / 4));
      assert.deepEqual(await mirrorState(t.dir), { schema: location.schema, position: logged.length, evidenceId: logged.at(-1)!.evidence_id });
      assert.equal((await readdir(t.dir.evidence)).filter((name) => name.startsWith('.tmp-')).length, 0);
      await role.close();

      assert.ok((await ingestBytes(ingested.dir, Buffer.from(ndjson(logged)), 'items')).accepted);
      const [fromMirror, fromIngest] = [await buildAndLoad(t.dir), await buildAndLoad(ingested.dir)];
      for (const item of logged) assert.deepEqual(fromMirror.verdict(item.upi), fromIngest.verdict(item.upi), item.upi);
    } finally {
      await role.close();
      await t.cleanup();
      await ingested.cleanup();
    }
  });
});

test('a mirror stopped by a bad row keeps what it stored, and goes on from there once the row is fixed', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const logged = items(30, 'row');
    await appendToLog(location, logged);
    const client = await testClient(location);
    // Row 11 broken behind the service's back: batches 1-4 and 5-8 are stored, the rows after are not.
    await client.query("UPDATE evidence SET upi = 'NOT A VPA' WHERE position = 11");
    const t = await tempDataDir();
    const role = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED, mirrorBatch: 4 });
    try {
      await until('the first two batches stored', 30_000, async () => (await mirrorState(t.dir).catch(() => null))?.position === 8);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(role.published, null);
      assert.deepEqual(await mirroredLines(t.dir), logged.slice(0, 8).map(storedLine));
      assert.equal((await readdir(t.dir.evidence)).filter((name) => name.startsWith('.tmp-')).length, 0);

      await client.query('UPDATE evidence SET upi = $1 WHERE position = 11', [logged[10]!.upi]);
      await until('a publication', 30_000, () => role.published !== null);
      assert.deepEqual(await mirroredLines(t.dir), logged.map(storedLine));
      assert.equal((await published(location, role.published!)).verdict(logged[29]!.upi).status, 'FLAGGED');
    } finally {
      await client.end();
      await role.close();
      await t.cleanup();
    }
  });
});

test('after a crash between a stored file and the mirror state, rows mirrored again are counted once', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const logged = items(20, 'again');
    await appendToLog(location, logged);
    const t = await tempDataDir();
    const first = await mirrorOnce(location, t.dir);
    const before = await published(location, first.published!);
    await first.close();
    // The state as a crash after the files of rows 13-20 were stored, before the state said so.
    await writeFile(join(t.dir.state, 'log-mirror.json'), JSON.stringify({ schema: location.schema, position: 12, evidenceId: logged[11]!.evidence_id }));
    await appendToLog(location, items(1, 'later'));
    const second = await BuilderRole.start({ location, dataDir: t.dir, pollMs: 50, policy: PUBLISH_WHEN_ASKED, mirrorBatch: 4 });
    try {
      await until('the state at the head', 30_000, async () => (await mirrorState(t.dir)).position === 21);
      second.requestBuild();
      await until('a publication', 30_000, () => second.published !== null);
      const lines = await mirroredLines(t.dir);
      assert.equal(lines.length, 20 + 8 + 1, 'rows 13-20 stored twice');
      const after = await published(location, second.published!);
      for (const item of logged) assert.equal(after.verdict(item.upi).evidence_count, before.verdict(item.upi).evidence_count, item.upi);
      assert.equal(after.verdict('later0@ybl').status, 'FLAGGED');
    } finally {
      await second.close();
      await t.cleanup();
    }
  });
});
