import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFile, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode } from '../../src/common/errors.js';
import type { Logger } from '../../src/common/logger.js';
import { CorrectionJournal } from '../../src/corrections/journal.js';
import { CorrectionLedger } from '../../src/corrections/ledger.js';
import type { CorrectionRecord } from '../../src/corrections/records.js';
import { MemoryAuditLog } from '../fixtures/fake-correction-engine.js';
import { tempDataDir } from '../helpers.js';

const AT = '2026-11-20T10:00:00.000Z';
const RETRACTION: CorrectionRecord = { type: 'retraction', id: 'ret_0123456789abcdef', evidence: [{ id: 'ev-1', upi: 'mule@ybl' }], reason: 'wrong VPA', by: 'key_0123456789ab', at: AT };
const CLEARANCE: CorrectionRecord = {
  type: 'clearance',
  id: 'clr_0123456789abcdef',
  upi: 'shop@ybl',
  reason: 'merchant verified',
  reference: 'CASE-7',
  urls: ['https://a.example/x'],
  by: 'cli',
  at: AT,
};
const END: CorrectionRecord = { type: 'clearance_end', id: 'clr_0123456789abcdef', reason: null, by: 'key_0123456789ab', at: '2026-11-21T10:00:00.000Z' };

/** Append `record` as it stands. */
const write = (journal: CorrectionJournal, record: CorrectionRecord) =>
  journal.append(
    () => {},
    () => ({ record, result: null }),
  );

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, error() {}, warn: (_fields, message) => warnings.push(message) };
}

test('what was appended is read back, record for record, after a reopen', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'state', 'corrections.ndjson');
    const { journal, entries } = await CorrectionJournal.open(path);
    assert.deepEqual(entries, [], 'no journal yet: nothing in force');
    for (const record of [RETRACTION, CLEARANCE, END]) await write(journal, record);
    const reopened = await CorrectionJournal.open(path);
    assert.deepEqual(
      reopened.entries.map((e) => [e.line, e.record]),
      [
        [1, RETRACTION],
        [2, CLEARANCE],
        [3, END],
      ],
    );
    assert.deepEqual(await reopened.journal.readNew(), [], 'nothing new');
    assert.equal((await readFile(path, 'utf8')).split('\n').length, 4, 'one line each, newline-terminated');
    assert.deepEqual(await readdir(join(root, 'state')), ['corrections.ndjson'], 'no lock or temporary file left behind');
  } finally {
    await cleanup();
  }
});

test('a last line cut short is skipped with a warning, then cut off by the next append', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'corrections.ndjson');
    await writeFile(path, `${JSON.stringify(RETRACTION)}\n{"type":"clearance","id":"clr_01`);
    const logger = recordingLogger();
    const { journal, entries } = await CorrectionJournal.open(path, logger);
    assert.deepEqual(
      entries.map((e) => e.record),
      [RETRACTION],
    );
    assert.equal(logger.warnings.length, 1);
    assert.match(logger.warnings[0]!, /incomplete/);
    await write(journal, CLEARANCE);
    assert.equal(await readFile(path, 'utf8'), `${JSON.stringify(RETRACTION)}\n${JSON.stringify(CLEARANCE)}\n`);
    assert.deepEqual(
      (await CorrectionJournal.open(path)).entries.map((e) => e.record),
      [RETRACTION, CLEARANCE],
    );
  } finally {
    await cleanup();
  }
});

test('a complete line that is not a correction is refused with ERR_CORRECTION_JOURNAL, naming the line', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'corrections.ndjson');
    const good = JSON.stringify(RETRACTION);
    const bad: readonly [string, RegExp][] = [
      ['not json', /line 2: not JSON/],
      ['{"type":"undo","id":"x"}', /line 2: unknown type "undo"/],
      [JSON.stringify({ ...RETRACTION, extra: 1 }), /line 2: unknown field "extra"/],
      [JSON.stringify({ ...RETRACTION, evidence: [{ id: 'ev-2', upi: 'Mule@YBL' }] }), /line 2: .*not a lower-cased VPA/],
      [JSON.stringify({ ...CLEARANCE, by: 'someone' }), /line 2: by must be a key id or "cli"/],
      [JSON.stringify({ ...CLEARANCE, at: '2026-11-20' }), /line 2: at must be an RFC 3339/],
      [JSON.stringify({ ...RETRACTION, reason: 'x'.repeat(501) }), /line 2: reason must be 1 to 500 characters/],
    ];
    for (const [line, message] of bad) {
      // Followed by a good line: only a last line may be torn, and this one is whole.
      await writeFile(path, `${good}\n${line}\n${good}\n`);
      await assert.rejects(CorrectionJournal.open(path), (error: NodeJS.ErrnoException) => {
        assert.equal(error.code, ErrorCode.CORRECTION_JOURNAL);
        assert.match(error.message, message);
        return true;
      });
    }
    // A byte of an evidence id damaged on disk (0xff is never UTF-8): refused, not read as another id.
    await writeFile(path, Buffer.concat([Buffer.from(`${good}\n`), Buffer.from(`${good.replace('"ev-', '"e\u00ff-')}\n`, 'latin1'), Buffer.from(`${good}\n`)]));
    await assert.rejects(CorrectionJournal.open(path), (error: NodeJS.ErrnoException) => error.code === ErrorCode.CORRECTION_JOURNAL && /line 2: not UTF-8/.test(error.message));
  } finally {
    await cleanup();
  }
});

test('a line appended after the last read is read whole, never in part', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'corrections.ndjson');
    const { journal } = await CorrectionJournal.open(path);
    const text = `${JSON.stringify(CLEARANCE)}\n`;
    await appendFile(path, text.slice(0, 20));
    assert.deepEqual(await journal.readNew(), [], 'a line being written is left for later');
    await appendFile(path, text.slice(20));
    assert.deepEqual(
      (await journal.readNew()).map((e) => e.record),
      [CLEARANCE],
    );
  } finally {
    await cleanup();
  }
});

test('two writers in one process: every append is a whole line of its own', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'corrections.ndjson');
    const a = (await CorrectionJournal.open(path)).journal;
    const b = (await CorrectionJournal.open(path)).journal;
    // What each was handed of the other's appends: the ids' numbers, even for a, odd for b.
    const handed = { a: [] as number[], b: [] as number[] };
    const appendFrom = (name: 'a' | 'b', i: number) =>
      (name === 'a' ? a : b).append(
        (newer) => handed[name].push(...newer.map((e) => parseInt((e.record as { id: string }).id.slice(4), 16))),
        () => ({ record: { ...RETRACTION, id: `ret_${i.toString(16).padStart(16, '0')}` }, result: null }),
      );
    await Promise.all(Array.from({ length: 40 }, (_, i) => appendFrom(i % 2 === 0 ? 'a' : 'b', i)));
    const { entries } = await CorrectionJournal.open(path);
    assert.equal(entries.length, 40);
    assert.equal(new Set(entries.map((e) => (e.record as { id: string }).id)).size, 40);
    assert.ok(handed.a.length > 0 && handed.a.every((i) => i % 2 === 1), 'a read only what b wrote');
    assert.ok(handed.b.length > 0 && handed.b.every((i) => i % 2 === 0), 'b read only what a wrote');
  } finally {
    await cleanup();
  }
});

test('two processes retracting overlapping ids at once: each id is retracted exactly once, and no line is torn', { timeout: 60_000 }, async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'state', 'corrections.ndjson');
    const ledgerModule = new URL('../../src/corrections/ledger.js', import.meta.url).href;
    const auditModule = new URL('../../src/access/audit-log.js', import.meta.url).href;
    // Each process retracts ids 0..59 in calls of four, from its own end, so that they meet in the middle.
    const script = (order: 'up' | 'down') => `
      import { CorrectionLedger } from ${JSON.stringify(ledgerModule)};
      import { CLI_ACTOR, FileAuditLog } from ${JSON.stringify(auditModule)};
      const ledger = await CorrectionLedger.open({ path: ${JSON.stringify(path)}, audit: new FileAuditLog(${JSON.stringify(join(root, `audit-${order}.ndjson`))}) });
      const ids = Array.from({ length: 60 }, (_, i) => 'ev-' + i);
      if (${JSON.stringify(order)} === 'down') ids.reverse();
      const located = new Map(ids.map((id) => [id, 'vpa' + id.slice(3) + '@ybl']));
      let retracted = 0, already = 0;
      for (let at = 0; at < ids.length; at += 4) {
        const tally = await ledger.retract(ids.slice(at, at + 4), located, 'duplicate report', CLI_ACTOR);
        retracted += tally.retracted;
        already += tally.already_retracted;
      }
      process.stdout.write(JSON.stringify({ retracted, already }));
    `;
    const run = (order: 'up' | 'down') =>
      new Promise<{ retracted: number; already: number }>((resolve, reject) => {
        execFile(process.execPath, ['--input-type=module', '-e', script(order)], (error, stdout, stderr) => {
          if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
          else resolve(JSON.parse(stdout) as { retracted: number; already: number });
        });
      });
    const [up, down] = await Promise.all([run('up'), run('down')]);
    assert.equal(up.retracted + down.retracted, 60, 'every id retracted once, by one of them');
    assert.equal(up.already + down.already, 60, 'and found retracted by the other');

    const ledger = await CorrectionLedger.open({ path, audit: new MemoryAuditLog() });
    assert.equal(ledger.book.retractedCount, 60);
    const lines = (await readFile(path, 'utf8')).split('\n');
    assert.equal(lines.pop(), '', 'ends with a newline');
    const ids = lines.flatMap((line) => (JSON.parse(line) as { evidence: { id: string }[] }).evidence.map((e) => e.id));
    assert.equal(ids.length, 60, 'no id written twice');
  } finally {
    await cleanup();
  }
});

test('a record the journal would refuse when read is refused before it is written', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    const path = join(root, 'corrections.ndjson');
    const { journal } = await CorrectionJournal.open(path);
    await write(journal, RETRACTION);
    const before = await readFile(path, 'utf8');
    for (const record of [
      { ...CLEARANCE, upi: 'not a vpa' },
      { ...CLEARANCE, reason: '' },
      { ...RETRACTION, evidence: Array.from({ length: 1001 }, (_, i) => ({ id: `ev-${i}`, upi: 'a@ybl' })) },
    ] as CorrectionRecord[]) {
      await assert.rejects(write(journal, record), RangeError);
    }
    assert.equal(await readFile(path, 'utf8'), before);
  } finally {
    await cleanup();
  }
});
