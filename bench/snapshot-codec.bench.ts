/**
 * Snapshot codec and loading costs on a synthetic snapshot.
 *
 *   node --expose-gc dist/bench/snapshot-codec.bench.js [--vpas 1000000] [--runs 3] [--no-baseline] [--json FILE]
 *
 * Reports encode (framing + CRC + validation), decode of bytes in memory
 * (plain and into shared memory), loading from a file (read + verify +
 * decode, on this thread and off it, with the longest event-loop stall seen
 * here meanwhile), the atomic write, the file size, and msgpackr's own
 * typed-array encoding as a baseline. File reads come from the page cache.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Packr, Unpackr } from 'msgpackr';
import { dataDir } from '../src/common/data-dir.js';
import { decodeSnapshot } from '../src/engine/snapshot-format/decode.js';
import { encodeSnapshot } from '../src/engine/snapshot-format/encode.js';
import { ARRAY_FIELDS, type SnapshotData } from '../src/engine/snapshot-data.js';
import { readSnapshotFile, writeSnapshot } from '../src/engine/snapshot-files.js';
import { loadSnapshotOffThread } from '../src/engine/snapshot-loader.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { wholeNumberOption, writeBenchReport } from './support/report.js';

const { values: args } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    'no-baseline': { type: 'boolean', default: false },
    json: { type: 'string' },
  },
  strict: true,
});
// 0 VPAs is allowed: an empty snapshot still goes through every step.
const vpas = args.vpas === '0' ? 0 : wholeNumberOption('vpas', args.vpas);
const runs = wholeNumberOption('runs', args.runs);

interface Row {
  step: string;
  'median ms': number;
  'min ms': number;
  'MB/s': number | string;
  note: string;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function time<T>(runs: number, fn: () => T | Promise<T>): Promise<{ times: number[]; last: T }> {
  const times: number[] = [];
  let last!: T;
  for (let i = 0; i < runs; i++) {
    last = undefined as T; // let the previous result go before the next run allocates
    gc?.();
    const started = performance.now();
    last = await fn();
    times.push(performance.now() - started);
  }
  return { times, last };
}

function row(step: string, times: number[], bytes: number, note = ''): Row {
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return {
    step,
    'median ms': round(median),
    'min ms': round(sorted[0]!),
    'MB/s': bytes > 0 ? Math.round(bytes / 1e6 / (median / 1000)) : '',
    note,
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function totalBytes(parts: readonly Uint8Array[]): number {
  return parts.reduce((sum, part) => sum + part.byteLength, 0);
}

function isShared(data: SnapshotData): boolean {
  return ARRAY_FIELDS.every((field) => data[field].buffer instanceof SharedArrayBuffer);
}

async function main(): Promise<void> {
  console.log(`snapshot codec bench: ${vpas.toLocaleString('en')} VPAs, ${runs} runs${gc ? '' : ' (run with --expose-gc for steadier figures)'}`);

  const started = performance.now();
  const data = fakeSnapshot(vpas);
  console.log(`fabricated in ${round(performance.now() - started)} ms`);

  const rows: Row[] = [];
  // Each step's median, under a name for the JSON report.
  const medians: Record<string, number> = {};
  const add = (figure: string, r: Row): void => {
    rows.push(r);
    medians[figure] = r['median ms'];
  };
  const encoded = await time(runs, () => encodeSnapshot(data));
  const fileSize = totalBytes(encoded.last);
  add('encodeMs', row('encode (views + CRC + checks)', encoded.times, fileSize, `${encoded.last.length} parts, no array copied`));

  // A step's last result is dropped when it returns, so the next step's runs do not hold it.
  const step = async <T>(figure: string, label: string, fn: () => T | Promise<T>, note: (last: T) => string): Promise<void> => {
    const timed = await time(runs, fn);
    add(figure, row(label, timed.times, fileSize, note(timed.last)));
  };

  const bytes = Buffer.concat(encoded.last);
  encoded.last.length = 0;
  await step('decodeMs', 'decode, in memory', () => decodeSnapshot(bytes), () => 'arrays are views of the bytes');
  await step('decodeSharedMs', 'decode, in memory, shared: true', () => decodeSnapshot(bytes, { shared: true }), (last) => `copied into one SAB: ${isShared(last)}`);

  // Event-loop stalls seen here while a worker loads the file.
  const stalls: number[] = [];
  const root = await mkdtemp(join(tmpdir(), 'upi-risk-bench-'));
  try {
    const dir = dataDir(root);
    const written = await time(1, () => writeSnapshot(dir, data));
    const path = written.last;
    add('writeMs', row('writeSnapshot (atomic, fsync)', written.times, fileSize, 'once'));
    if ((await stat(path)).size !== fileSize) throw new Error('written file size differs from the encoded size');

    await step('readMs', 'readSnapshotFile', () => readSnapshotFile(path), () => 'read + CRC + checks');
    await step('readSharedMs', 'readSnapshotFile, shared: true', () => readSnapshotFile(path, { shared: true }), (last) => `read into a SAB: ${isShared(last)}`);
    await step(
      'loadOffThreadMs',
      'loadSnapshotOffThread',
      async () => {
        const delay = monitorEventLoopDelay({ resolution: 5 });
        delay.enable();
        const result = await loadSnapshotOffThread(path);
        delay.disable();
        stalls.push(delay.max / 1e6);
        return result;
      },
      (last) => `worker; main-thread stall max ${round(Math.max(...stalls))} ms; SAB: ${isShared(last)}`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }

  if (!args['no-baseline']) {
    // msgpackr's typed-array extension (moreTypes) for the same content, for comparison.
    const packr = new Packr({ useRecords: false, moreTypes: true });
    const unpackr = new Unpackr({ useRecords: false, moreTypes: true });
    const plain = { meta: data.meta, arrays: Object.fromEntries(ARRAY_FIELDS.map((field) => [field, data[field]])) };
    const packed = await time(runs, () => packr.pack(plain));
    const size = packed.last.byteLength;
    add('baselinePackMs', row('baseline: msgpackr pack', packed.times, size, `${size} bytes, one copy of everything`));
    const unpacked = await time(runs, (): unknown => unpackr.unpack(packed.last));
    add('baselineUnpackMs', row('baseline: msgpackr unpack', unpacked.times, size, 'copies every array, no CRC'));
  }

  console.table(rows);

  const sizes = ARRAY_FIELDS.map((field) => ({ field, bytes: data[field].byteLength }))
    .sort((a, b) => b.bytes - a.bytes)
    .map(({ field, bytes: b }) => ({ field, MB: round(b / 1e6), 'bytes/VPA': vpas > 0 ? round(b / vpas) : 0 }));
  console.table(sizes);
  console.table([
    {
      VPAs: vpas,
      'file bytes': fileSize,
      'file MB': round(fileSize / 1e6),
      'bytes/VPA': vpas > 0 ? round(fileSize / vpas) : 0,
      sources: data.meta.sourceCount,
      urls: data.meta.urlCount,
      clusters: data.meta.clusterCount,
    },
  ]);

  if (args.json !== undefined) {
    writeBenchReport(args.json, 'snapshot-codec', vpas, {
      runs,
      ...medians,
      loadOffThreadStallMaxMs: round(Math.max(...stalls)),
      fileBytes: fileSize,
      bytesPerVpa: vpas > 0 ? round(fileSize / vpas) : 0,
    });
  }
}

await main();
