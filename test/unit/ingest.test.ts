import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ingestFile, listEvidenceFiles } from '../../src/evidence/store.js';
import { tempDataDir, ndjson, evidence, ingest, buildAndLoad } from '../helpers.js';

test('a valid file is stored whole, durably named in ingestion order, with no temporary files left', async () => {
  const t = await tempDataDir();
  try {
    const first = await ingest(t.dir, t.root, [evidence('a@ybl', 'https://u.example'), evidence('b@ybl', 'https://u.example')]);
    const second = await ingest(t.dir, t.root, [evidence('c@ybl', 'https://v.example')]);
    assert.equal(first.validLines, 2);
    const names = await listEvidenceFiles(t.dir);
    assert.deepEqual(names, [first.storedAs, second.storedAs]);
    assert.deepEqual((await readdir(t.dir.evidence)).sort(), [...names].sort(), 'nothing but the stored files');
    const stored = await readFile(join(t.dir.evidence, first.storedAs!), 'utf8');
    assert.equal(stored.trim().split('\n').length, 2);
  } finally {
    await t.cleanup();
  }
});

test('files stored within one millisecond, or with the clock set back, still sort in ingestion order', async () => {
  const t = await tempDataDir();
  try {
    const path = join(t.root, 'one.ndjson');
    await writeFile(path, ndjson([evidence('a@ybl', 'https://u.example')]));
    const clock = [5_000, 5_000, 5_000, 4_000];
    const stored: string[] = [];
    for (const now of clock) stored.push((await ingestFile(t.dir, path, () => now)).storedAs!);
    assert.deepEqual(await listEvidenceFiles(t.dir), stored);
    assert.equal(new Set(stored.map((name) => name.slice(0, 13))).size, clock.length, 'each its own millisecond');
  } finally {
    await t.cleanup();
  }
});

test('a file with bad lines is refused whole and every bad line is reported with its number and reason', async () => {
  const t = await tempDataDir();
  try {
    const good = JSON.stringify(evidence('ok@ybl', 'https://u.example'));
    const lines = [
      good,
      '{not json',
      JSON.stringify({ ...evidence('x@ybl', 'https://u.example'), upi: 'no-at-sign' }),
      '',
      JSON.stringify({ ...evidence('y@ybl', 'https://u.example'), source_category: 'forum' }),
      JSON.stringify({ ...evidence('z@ybl', 'https://u.example'), captured_at: '2026-01-01T00:00:00' }),
      JSON.stringify({ ...evidence('w@ybl', 'https://u.example'), risk_category: 'fraud' }),
      JSON.stringify({ ...evidence('v@ybl', 'https://u.example'), screenshot_available: 'yes' }),
      JSON.stringify({ ...evidence('u@ybl', 'https://u.example'), evidence_id: 7 }),
      '[1,2,3]',
      JSON.stringify({ ...evidence('t@ybl', 'https://u.example'), captured_at: '2026-02-30T00:00:00Z' }),
    ];
    const path = join(t.root, 'bad.ndjson');
    await writeFile(path, lines.join('\n'));
    const result = await ingestFile(t.dir, path);
    assert.equal(result.accepted, false);
    assert.equal(result.storedAs, null);
    assert.equal(result.validLines, 1);
    assert.deepEqual(
      result.errors.map((e) => e.line),
      [2, 3, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.ok(result.errors.every((e) => e.file === path && e.reason.length > 0));
    assert.match(result.errors[0]!.reason, /JSON/);
    assert.match(result.errors[1]!.reason, /upi/);
    assert.match(result.errors[2]!.reason, /source_category/);
    assert.match(result.errors[3]!.reason, /zone/);
    assert.match(result.errors[4]!.reason, /risk_category/);
    assert.match(result.errors[5]!.reason, /screenshot_available/);
    assert.match(result.errors[6]!.reason, /evidence_id/);
    assert.deepEqual(await listEvidenceFiles(t.dir), [], 'nothing half-applied');
    assert.deepEqual(await readdir(t.dir.evidence), [], 'no temporary file left behind');
  } finally {
    await t.cleanup();
  }
});

test('an unreadable file is an error with a stable code, and an empty file stores nothing', async () => {
  const t = await tempDataDir();
  try {
    await assert.rejects(ingestFile(t.dir, join(t.root, 'missing.ndjson')), { code: 'ERR_EVIDENCE_FILE' });
    const empty = join(t.root, 'empty.ndjson');
    await writeFile(empty, '\n\n');
    const result = await ingestFile(t.dir, empty);
    assert.equal(result.storedAs, null);
    assert.equal(result.invalidLines, 0);
    assert.deepEqual(await listEvidenceFiles(t.dir), []);
  } finally {
    await t.cleanup();
  }
});

test('ingesting the same evidence ids again changes nothing, even when a reused id names another VPA', async () => {
  const t = await tempDataDir();
  try {
    const items = [
      evidence('a@ybl', 'https://u.example', { evidence_id: 'same-1' }),
      evidence('b@ybl', 'https://u.example', { evidence_id: 'same-2' }),
    ];
    await ingest(t.dir, t.root, items);
    const once = await buildAndLoad(t.dir);
    await ingest(t.dir, t.root, items);
    await ingest(t.dir, t.root, [evidence('intruder@ybl', 'https://other.example', { evidence_id: 'same-1' })]);
    const again = await buildAndLoad(t.dir);
    for (const upi of ['a@ybl', 'b@ybl']) assert.deepEqual(again.verdict(upi), once.verdict(upi));
    assert.equal(again.verdict('intruder@ybl').status, 'CLEARED');
    assert.equal(again.meta.evidenceCount, 2);
    assert.equal(again.meta.skippedLines, 3);
  } finally {
    await t.cleanup();
  }
});

test('stored lines are exactly the accepted input lines (CRLF and blank lines tolerated)', async () => {
  const t = await tempDataDir();
  try {
    const path = join(t.root, 'crlf.ndjson');
    await writeFile(path, ndjson([evidence('a@ybl', 'https://u.example')]).replace('\n', '\r\n') + '\r\n\r\n');
    const result = await ingestFile(t.dir, path);
    assert.equal(result.accepted, true);
    assert.equal(result.validLines, 1);
  } finally {
    await t.cleanup();
  }
});
