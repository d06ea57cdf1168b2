import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIso } from '../../src/common/time.js';
import { appendFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ErrorCode } from '../../src/common/errors.js';
import { VersionJournal, openVersionJournal } from '../../src/history/version-journal.js';
import type { ServedVersions } from '../../src/history/served-versions.js';
import { silentLogger } from '../../src/common/logger.js';
import { servedVersionsCases } from '../served-versions-cases.js';
import { until } from '../helpers.js';

async function tempPath(): Promise<{ path: string; done: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'upi-risk-versions-'));
  return { path: join(root, 'history', 'versions.bin'), done: () => rm(root, { recursive: true, force: true }) };
}

servedVersionsCases('data directory journal', async () => {
  const t = await tempPath();
  const opened: ServedVersions[] = [];
  const openOne = async () => {
    const journal = await VersionJournal.open(t.path);
    opened.push(journal);
    return journal;
  };
  return {
    versions: await openOne(),
    reopen: openOne,
    close: async () => {
      for (const j of opened) await j.close();
      await t.done();
    },
  };
});

const S = '20261128T090000000Z-0000aa';
const T = Date.parse('2026-11-28T09:00:00Z');

/** A journal at `path` with three states served, closed at T + 30 s. */
async function writeThree(path: string): Promise<void> {
  const journal = await VersionJournal.open(path);
  await journal.record({ snapshot: S, position: 0 }, T);
  await journal.record({ snapshot: S, position: 3 }, T + 10_000);
  await journal.record({ snapshot: S, position: 4 }, T + 20_000);
  await journal.close(T + 30_000);
}

test('a server that stops ends its last version then; a restart serves past it and the stop stands between', async () => {
  const t = await tempPath();
  try {
    await writeThree(t.path);
    const journal = await VersionJournal.open(t.path);
    assert.equal((await journal.find({ snapshot: S, position: 4 }))?.until, formatIso(T + 30_000));
    assert.equal(journal.served({ snapshot: S, position: 0 }), true, 'the snapshot was served alone');
    assert.equal(journal.served({ snapshot: S, position: 4 }), true);
    assert.equal(journal.served({ snapshot: S, position: 5 }), false);
    assert.equal(journal.served({ snapshot: 'other', position: 0 }), false);
    await journal.record({ snapshot: S, position: 1000 }, T + 40_000);
    const restarted = await journal.find({ snapshot: S, position: 1000 });
    assert.deepEqual([restarted?.from, restarted?.until], [formatIso(T + 40_000), null]);
    assert.equal((await journal.find({ snapshot: S, position: 4 }))?.until, formatIso(T + 30_000));
    await journal.close();
  } finally {
    await t.done();
  }
});

test('a version is found among many by bisection, whatever the snapshots alone between them', async () => {
  const t = await tempPath();
  try {
    const journal = await VersionJournal.open(t.path);
    const served: { snapshot: string; position: number; at: number }[] = [];
    let position = 0;
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    for (let i = 0; i < 2000; i++) {
      const snapshot = `2026112${Math.floor(i / 100) % 10}T090000000Z-${String(Math.floor(i / 100)).padStart(6, '0')}`;
      const alone = i % 100 === 0;
      if (!alone) position += 1 + Math.floor(random() * 5);
      const state = { snapshot, position: alone ? 0 : position, at: T + i * 1000 };
      served.push(state);
      await journal.record(state, state.at);
    }
    const positions = new Set(served.map((s) => s.position));
    for (let k = 0; k < 300; k++) {
      const i = Math.floor(random() * served.length);
      const s = served[i]!;
      const found = await journal.find(s);
      assert.equal(found?.from, formatIso(s.at), `record ${i}`);
      assert.equal(found?.until, i + 1 < served.length ? formatIso(served[i + 1]!.at) : null);
      // A position skipped between two served ones (reserved, never served) is not found.
      if (s.position > 0 && !positions.has(s.position + 1) && s.position < position) assert.equal(await journal.find({ snapshot: s.snapshot, position: s.position + 1 }), null);
    }
    assert.equal(await journal.find({ snapshot: 'not-served', position: served[5]!.position }), null, 'the position, but another snapshot');
    await journal.close();
    assert.equal((await stat(t.path)).size, 32 + 104 * 2001);
  } finally {
    await t.done();
  }
});

test('a record cut short, with a flipped byte or of another kind is refused with ERR_HISTORY, and the server is told why', async () => {
  for (const [what, damage, message] of [
    ['cut short', (path: string) => appendFile(path, Buffer.alloc(10)), /cut short: 10 bytes/],
    ['flipped byte', async (path: string) => {
      const bytes = await readFile(path);
      bytes.writeUInt8(bytes.readUInt8(32 + 104 + 40) ^ 0x01, 32 + 104 + 40);
      await writeFile(path, bytes);
    }, /record 1 fails its CRC/],
    ['another file', (path: string) => writeFile(path, '{"not":"a journal"}\n'.repeat(4)), /not a record of served data versions/],
    ['another format', async (path: string) => {
      const bytes = await readFile(path);
      bytes.writeUInt32LE(9, 8);
      await writeFile(path, bytes);
    }, /format 9/],
  ] as const) {
    const t = await tempPath();
    try {
      await writeThree(t.path);
      await damage(t.path);
      await assert.rejects(VersionJournal.open(t.path), (error: Error & { code?: string }) => {
        assert.equal(error.code, ErrorCode.HISTORY, what);
        assert.match(error.message, message, what);
        return true;
      });
      const unavailable = await openVersionJournal(t.path, silentLogger);
      assert.match(unavailable.unavailable ?? '', message, what);
      await assert.rejects(unavailable.find({ snapshot: S, position: 3 }), { code: ErrorCode.HISTORY });
      // Serving goes on: recording into it is a no-op, never an error.
      await unavailable.record({ snapshot: S, position: 9 }, T);
      await unavailable.close();
    } finally {
      await t.done();
    }
  }
});

test('a retention drops the states that ended before it, keeps the one served then, and the rest resolves as before', async () => {
  const t = await tempPath();
  try {
    const DAY = 24 * 60 * 60 * 1000;
    const journal = await VersionJournal.open(t.path);
    const states = [
      { snapshot: 'S1', position: 0, at: T },
      { snapshot: 'S1', position: 4, at: T + DAY },
      { snapshot: 'S2', position: 0, at: T + 2 * DAY },
      { snapshot: 'S2', position: 9, at: T + 3 * DAY },
      { snapshot: 'S3', position: 0, at: T + 5 * DAY },
    ];
    for (const s of states) await journal.record(s, s.at);
    // Served from day 2 to day 3, S2 alone is what was served at day 2.5: it stays, and everything after it.
    assert.equal(await journal.prune(T + 2.5 * DAY), 2);
    assert.equal(await journal.find(states[0]!), null);
    assert.equal(await journal.find(states[1]!), null);
    for (const [i, s] of states.entries()) {
      if (i < 2) continue;
      const found = await journal.find(s);
      assert.deepEqual([found?.from, found?.until], [formatIso(s.at), i + 1 < states.length ? formatIso(states[i + 1]!.at) : null], `${s.snapshot}+${s.position}`);
    }
    assert.equal(await journal.prune(T + 2.5 * DAY), 0, 'nothing more to drop');
    await journal.record({ snapshot: 'S3', position: 12 }, T + 6 * DAY);
    assert.equal((await journal.find({ snapshot: 'S3', position: 0 }))?.until, formatIso(T + 6 * DAY));
    await journal.close(T + 7 * DAY);
    assert.equal((await stat(t.path)).size, 32 + 104 * 5);

    // Opened with a retention its oldest record is a month past, the record drops by itself what ended before it
    // (here every state: the last ended with the stop at day 7), but not the newest snapshot served alone, S3, and what
    // followed it: a restart on S3 must know S3 was served, or it would serve it again under the same version.
    const kept = await VersionJournal.open(t.path, silentLogger, Date.now() - (T + 40 * DAY));
    await until('the old records dropped', 5_000, () => kept.size === 3);
    assert.equal(await kept.find({ snapshot: 'S2', position: 9 }), null);
    assert.ok(kept.served({ snapshot: 'S3', position: 0 }));
    assert.equal((await kept.find({ snapshot: 'S3', position: 12 }))?.until, formatIso(T + 7 * DAY));
    await kept.record({ snapshot: 'S4', position: 20 }, Date.now());
    assert.equal((await kept.find({ snapshot: 'S4', position: 20 }))?.until, null);
    await kept.close();
  } finally {
    await t.done();
  }
});

test('a position served out of order is not recorded, and a file holding one is refused', async () => {
  const t = await tempPath();
  try {
    const journal = await VersionJournal.open(t.path);
    await journal.record({ snapshot: S, position: 3 }, T);
    await journal.record({ snapshot: S, position: 5 }, T + 1_000);
    assert.equal(journal.highestPosition, 5);
    await journal.record({ snapshot: S, position: 4 }, T + 2_000);
    assert.match(journal.unavailable ?? '', /position 4 was served after 5, out of order/);
    await assert.rejects(journal.find({ snapshot: S, position: 3 }), { code: ErrorCode.HISTORY });
    await journal.close();

    // Two whole records swapped: each passes its CRC, the order does not.
    const bytes = await readFile(t.path);
    const first = Buffer.from(bytes.subarray(32, 136));
    bytes.copy(bytes, 32, 136, 240);
    first.copy(bytes, 136);
    await writeFile(t.path, bytes);
    await assert.rejects(VersionJournal.open(t.path), /record 1 is out of order/);
  } finally {
    await t.done();
  }
});

test('lookups made while a retention copies the file find what they would have found before', async () => {
  const t = await tempPath();
  try {
    const journal = await VersionJournal.open(t.path);
    for (let i = 1; i <= 3000; i++) await journal.record({ snapshot: S, position: i }, T + i * 1_000);
    const lookups = Array.from({ length: 400 }, (_, k) => 1500 + k);
    const pruning = journal.prune(T + 1_500_500);
    const found = await Promise.all(lookups.map((p) => journal.find({ snapshot: S, position: p })));
    assert.equal(await pruning, 1499);
    for (const [k, f] of found.entries()) assert.equal(f?.from, formatIso(T + (1500 + k) * 1_000), `position ${1500 + k}`);
    assert.equal(await journal.find({ snapshot: S, position: 1499 }), null);
    await journal.record({ snapshot: S, position: 3001 }, T + 3_001_000);
    await journal.close();
    const reopened = await VersionJournal.open(t.path);
    assert.equal(reopened.size, 1503, 'the 1,502 kept, the one recorded after the copy, and the stop');
    assert.equal((await reopened.find({ snapshot: S, position: 3001 }))?.from, formatIso(T + 3_001_000));
    await reopened.close();
  } finally {
    await t.done();
  }
});

test('a prune that meets a damaged record stops resolving versions, and recording and closing go on without failing', async () => {
  const t = await tempPath();
  try {
    const DAY = 24 * 60 * 60 * 1000;
    const journal = await VersionJournal.open(t.path);
    for (let p = 1; p <= 8; p++) await journal.record({ snapshot: S, position: p }, T + p * DAY);
    // A byte of record 6, among those a prune keeps, flipped after the file was opened.
    const bytes = await readFile(t.path);
    bytes[32 + 6 * 104 + 40]! ^= 0xff;
    await writeFile(t.path, bytes);
    assert.equal(await journal.prune(T + 6.5 * DAY), 0);
    assert.match(journal.unavailable ?? '', /record 6 fails its CRC/);
    await journal.record({ snapshot: S, position: 9 }, T + 9 * DAY);
    await assert.rejects(journal.find({ snapshot: S, position: 9 }), { code: ErrorCode.HISTORY });
    await journal.close();
  } finally {
    await t.done();
  }
});

test('records are copied by a prune beside appends, and a clock stepped back never ends a state before it began', async () => {
  const t = await tempPath();
  try {
    const DAY = 24 * 60 * 60 * 1000;
    const journal = await VersionJournal.open(t.path);
    for (let p = 1; p <= 20_000; p++) await journal.record({ snapshot: S, position: p }, T + p * 1_000);
    const pruned = journal.prune(T + 10_000 * 1_000 + 500);
    // Recorded while the prune copies: every one is in the new file.
    const late = Array.from({ length: 20 }, (_, i) => journal.record({ snapshot: S, position: 20_001 + i }, T + 30 * DAY + i));
    assert.equal(await pruned, 9_999);
    await Promise.all(late);
    assert.equal(journal.size, 20_001 + 20 - 10_000);
    for (const p of [10_000, 15_000, 20_000, 20_020]) assert.ok((await journal.find({ snapshot: S, position: p })) !== null, `position ${p}`);
    // The clock steps back a day: the state recorded then begins when the one before it did, not before.
    await journal.record({ snapshot: S, position: 20_021 }, T + 29 * DAY);
    const stepped = await journal.find({ snapshot: S, position: 20_020 });
    assert.equal(stepped?.until, stepped?.from);
    await journal.close();
    const reopened = await VersionJournal.open(t.path);
    assert.equal((await reopened.find({ snapshot: S, position: 20_021 }))?.from, formatIso(T + 30 * DAY + 19));
    await reopened.close();
  } finally {
    await t.done();
  }
});

test('the state served at an instant: the last begun at or before it, back past a stop; with its data-as-of time', async () => {
  const t = await tempPath();
  try {
    const journal = await VersionJournal.open(t.path);
    assert.equal(await journal.stateAt(T), null);
    assert.equal(await journal.firstAt(), null);
    await journal.record({ snapshot: S, position: 1 }, T, T - 500);
    await journal.record({ snapshot: S, position: 2 }, T + 1_000, T + 900);
    await journal.close(T + 5_000);
    const again = await VersionJournal.open(t.path);
    await again.record({ snapshot: S, position: 3 }, T + 9_000, T + 8_000);
    const at = async (instant: number) => {
      const found = await again.stateAt(instant);
      return found === null ? null : [found.state.position, found.from, found.dataAsOf];
    };
    assert.equal(await at(T - 1), null, 'before the first');
    assert.deepEqual(await at(T), [1, T, T - 500]);
    assert.deepEqual(await at(T + 999), [1, T, T - 500]);
    assert.deepEqual(await at(T + 1_000), [2, T + 1_000, T + 900]);
    assert.deepEqual(await at(T + 7_000), [2, T + 1_000, T + 900], 'stopped: the state it stopped serving');
    assert.deepEqual(await at(T + 60_000), [3, T + 9_000, T + 8_000]);
    assert.equal(await again.firstAt(), T);
    await again.close();
  } finally {
    await t.done();
  }
});

test('a record of format 1 is rewritten in this format at open, each state kept, its data-as-of time unknown (0)', async () => {
  const t = await tempPath();
  try {
    // Format 1: a 32-byte header naming 96-byte records, each with its CRC over the record with the CRC's bytes 0.
    const head = Buffer.alloc(32);
    head.write('UPIRVERS', 0, 'latin1');
    head.writeUInt32LE(1, 8);
    head.writeUInt32LE(96, 12);
    const records = [1, 2].map((position) => {
      const r = Buffer.alloc(96);
      r[0] = 1;
      r[1] = S.length;
      r.writeDoubleLE(position, 8);
      r.writeDoubleLE(position, 16);
      r.writeDoubleLE(T + position * 1_000, 24);
      r.write(S, 32, 'latin1');
      r.writeUInt32LE(crc32(r), 4);
      return r;
    });
    await mkdir(dirname(t.path), { recursive: true });
    await writeFile(t.path, Buffer.concat([head, ...records]));
    const journal = await VersionJournal.open(t.path);
    assert.equal((await stat(t.path)).size, 32 + 104 * 2);
    assert.deepEqual(await journal.find({ snapshot: S, position: 1 }), { version: `${S}+1`, from: formatIso(T + 1_000), until: formatIso(T + 2_000), snapshot: S, position: 1 });
    assert.equal((await journal.stateAt(T + 2_500))?.dataAsOf, 0);
    await journal.record({ snapshot: S, position: 3 }, T + 3_000, T + 2_900);
    await journal.close();
    const reopened = await VersionJournal.open(t.path);
    assert.equal((await reopened.stateAt(T + 3_000))?.dataAsOf, T + 2_900);
    await reopened.close();
  } finally {
    await t.done();
  }
});
