/**
 * The record of data versions served (history/version-journal.ts): what it
 * adds to every change of what is served, and what a lookup of a version
 * costs.
 *
 * - record: the append and fdatasync each change waits for before it is
 *   served, `--states` of them in a row, alone and while another writer
 *   streams `--pressure-mib` to a file beside it (as a compaction writes its
 *   snapshot); each per state, milliseconds.
 * - find: GET /v1/data-versions' lookup in a record of `--states` states,
 *   in process, for random versions served (bisection, about log2(states)
 *   reads of 96 bytes), microseconds.
 *
 * The directory is the bench's data root (var/bench), on the disk data
 * directories live on, not a tmpfs.
 *
 *   node dist/bench/version-record.bench.js [--states 5000] [--pressure-mib 1024] [--json FILE]
 *
 * (--vpas is accepted, as by every micro bench, and ignored.)
 */
import { open, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VersionJournal } from '../src/history/version-journal.js';
import { percentile, round3, wholeNumberOption, writeBenchReport } from './support/report.js';

const { values } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    time: { type: 'string', default: '2000' },
    states: { type: 'string', default: '5000' },
    'pressure-mib': { type: 'string', default: '1024' },
    json: { type: 'string' },
  },
  strict: true,
});
const states = wholeNumberOption('states', values.states);
const pressureMiB = wholeNumberOption('pressure-mib', values['pressure-mib']);
const SNAPSHOT = '20261128T090000000Z-00bench';
const T0 = Date.parse('2026-01-01T00:00:00Z');

interface Spread {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

function spread(samples: number[]): Spread {
  const sorted = samples.sort((a, b) => a - b);
  return { p50: round3(percentile(sorted, 0.5)), p99: round3(percentile(sorted, 0.99)), max: round3(sorted[sorted.length - 1]!), mean: round3(sorted.reduce((s, x) => s + x, 0) / sorted.length) };
}

/** Record `count` states after `from`, each timed (ms). */
async function recordStates(journal: VersionJournal, from: number, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 1; i <= count; i++) {
    const started = performance.now();
    await journal.record({ snapshot: SNAPSHOT, position: from + i }, T0 + (from + i) * 10_000);
    times.push(performance.now() - started);
  }
  return times;
}

/** Write `mib` MiB to `path` in 1 MiB pieces, flushed every 64 MiB, until done or `stop()` is true. */
async function streamWrites(path: string, mib: number, stop: () => boolean): Promise<void> {
  const file = await open(path, 'w');
  const piece = Buffer.alloc(2 ** 20, 7);
  try {
    for (let i = 0; i < mib && !stop(); i++) {
      await file.write(piece, 0, piece.length, null);
      if (i % 64 === 63) await file.datasync();
    }
  } finally {
    await file.close();
  }
}

await mkdir(join('var', 'bench'), { recursive: true });
const dir = await mkdtemp(join('var', 'bench', 'version-record-'));
try {
  const journal = await VersionJournal.open(join(dir, 'history', 'versions.bin'));
  const alone = await recordStates(journal, 0, states);
  let done = false;
  const pressure = streamWrites(join(dir, 'pressure.bin'), pressureMiB, () => done);
  const underPressure = await recordStates(journal, states, states);
  done = true;
  await pressure;

  const total = journal.size;
  const lookups: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const position = 1 + Math.floor(Math.random() * total);
    const started = performance.now();
    const found = await journal.find({ snapshot: SNAPSHOT, position });
    lookups.push((performance.now() - started) * 1000);
    if (found === null) throw new Error(`position ${position} not found`);
  }
  await journal.close();

  const figures = { states: total, bytesPerState: 96, recordMs: spread(alone), recordUnderWritesMs: spread(underPressure), pressureMiB, findMicros: spread(lookups) };
  console.log(`node ${process.version}, ${total} states recorded in ${dir}`);
  console.log(`record (append + fdatasync), ms:        p50 ${figures.recordMs.p50}, p99 ${figures.recordMs.p99}, max ${figures.recordMs.max}`);
  console.log(`record beside ${pressureMiB} MiB written, ms: p50 ${figures.recordUnderWritesMs.p50}, p99 ${figures.recordUnderWritesMs.p99}, max ${figures.recordUnderWritesMs.max}`);
  console.log(`find of a version among ${total}, µs:     p50 ${figures.findMicros.p50}, p99 ${figures.findMicros.p99}, max ${figures.findMicros.max}`);
  if (values.json !== undefined) writeBenchReport(values.json, 'version-record', null, figures);
} finally {
  await rm(dir, { recursive: true, force: true });
}
