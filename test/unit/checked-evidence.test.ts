import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EvidenceBatch, ingestBytes, listEvidenceFiles, storeCheckedEvidence } from '../../src/evidence/store.js';
import { evidenceItem, validateEvidence, type EvidenceRecord } from '../../src/evidence/record.js';
import { evidence, tempDataDir } from '../helpers.js';

function checked(items: readonly object[]): EvidenceRecord[] {
  return items.map((item) => {
    const result = validateEvidence(item);
    assert.ok(result.ok);
    return result.record;
  });
}

/** Records of every shape a line takes: escapes, non-ASCII, a url far longer than a buffer's share. */
function records(): EvidenceRecord[] {
  return checked([
    evidence('a@ybl', 'https://u.example/"quoted"\\path'),
    evidence('B.Mixed@ybl', 'https://ü.example/€/😀', { risk_category: 'mule', screenshot_available: true }),
    ...Array.from({ length: 3000 }, (_, i) => evidence(`many${i}@ybl`, `https://long.example/${'x'.repeat(i % 2000)}`, { source_category: 'telegram' })),
  ]);
}

test('checked records are stored as the file an ingest of their lines stores, byte for byte', async () => {
  const a = await tempDataDir();
  const b = await tempDataDir();
  try {
    const all = records();
    const batch = new EvidenceBatch();
    for (const record of all) batch.add(record);
    assert.equal(batch.records, all.length);
    const name = await storeCheckedEvidence(a.dir, batch, () => 1_000);
    const ndjson = all.map((record) => `${JSON.stringify(evidenceItem(record))}\n`).join('');
    const ingested = await ingestBytes(b.dir, Buffer.from(ndjson), 'lines', () => 1_000);
    assert.equal(name, (await listEvidenceFiles(a.dir))[0]);
    assert.equal(name.slice(0, 14), ingested.storedAs!.slice(0, 14), 'named after the same clock');
    assert.deepEqual(await readFile(join(a.dir.evidence, name)), await readFile(join(b.dir.evidence, ingested.storedAs!)));
    assert.deepEqual(await readdir(a.dir.evidence), [name], 'no temporary file left');
  } finally {
    await a.cleanup();
    await b.cleanup();
  }
});

test('checked evidence files are named in the order they are stored, after any ingested before', async () => {
  const t = await tempDataDir();
  try {
    const one = checked([evidence('x@ybl', 'https://x.example')]);
    const batchOf = (records: readonly EvidenceRecord[]) => {
      const batch = new EvidenceBatch();
      for (const record of records) batch.add(record);
      return batch;
    };
    const ingested = await ingestBytes(t.dir, Buffer.from(`${JSON.stringify(evidenceItem(one[0]!))}\n`), 'first', () => 9_000);
    const later = [await storeCheckedEvidence(t.dir, batchOf(one), () => 9_000), await storeCheckedEvidence(t.dir, batchOf(one), () => 5_000)];
    assert.deepEqual(await listEvidenceFiles(t.dir), [ingested.storedAs, ...later]);
    await assert.rejects(storeCheckedEvidence(t.dir, new EvidenceBatch()), RangeError);
  } finally {
    await t.cleanup();
  }
});
