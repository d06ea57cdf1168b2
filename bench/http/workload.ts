/**
 * Request lists for the HTTP scenarios, drawn from the snapshot the server
 * will serve: single lookups and batch bodies with a set share of known
 * (flagged) VPAs among unknown ones of realistic shapes, cluster ids, and
 * range lookups (the hash prefixes of the same mix of VPAs).
 * Also the mean answer size of each list, so the bare ceiling server can
 * return bodies of the same size.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NOT_FOUND } from '../../src/common/brand.js';
import { BATCH_ANSWER_BOUND, answerBatchBody } from '../../src/api/batch-answer.js';
import { ByteScratch } from '../../src/common/byte-scratch.js';
import { SnapshotView } from '../../src/engine/snapshot-view.js';
import { ServingView } from '../../src/engine/serving-view.js';
import { formatClusterId } from '../../src/engine/verdict.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { mulberry32 } from '../../test/fixtures/random.js';
import { hashRangesHere } from '../../src/engine/hash-ranges.js';
import { PREFIX_DIGITS, answerRange, parseRangePrefix } from '../../src/api/range-answer.js';
import { vpaHashHex } from '../../src/vpa/vpa-hash.js';

export interface Workload {
  readonly singleFile: string;
  readonly batchFile: string;
  readonly clusterFile: string;
  readonly rangeFile: string;
  /** Mean answer body size in bytes, per scenario. */
  readonly singleBytes: number;
  readonly batchBytes: number;
  readonly clusterBytes: number;
  readonly rangeBytes: number;
  /** Share of known VPAs among single lookups and batch items. */
  readonly hitRatio: number;
}

export interface WorkloadOptions {
  readonly hitRatio: number;
  readonly singles?: number;
  readonly batches?: number;
  readonly clusters?: number;
  readonly ranges?: number;
  readonly seed?: number;
  /**
   * VPAs of a live delta (bench/http/delta.ts): this share of the known
   * VPAs drawn is one of them instead of one of the snapshot's.
   */
  readonly delta?: { readonly vpas: readonly string[]; readonly share: number };
}

const PROVIDERS = ['ybl', 'okaxis', 'okhdfcbank', 'okicici', 'oksbi', 'paytm', 'ibl', 'axl', 'apl', 'upi', 'ptyes', 'pthdfc'];
const NAMES = ['anil', 'bhavna', 'chetan', 'deepika', 'farhan', 'gita', 'harsh', 'isha', 'jatin', 'kiran', 'lata', 'mohit'];

export async function writeWorkload(view: SnapshotView, dir: string, options: WorkloadOptions): Promise<Workload> {
  // Seeded, so every run sends the same requests.
  const next = mulberry32(options.seed ?? 7);
  const data = view.data;
  const vpaCount = data.meta.vpaCount;
  const index = new VpaIndex(data, data.maxKeyLength);

  const delta = options.delta;
  const known = (): string => {
    const fromDelta = delta !== undefined && delta.vpas.length > 0 && next() < delta.share;
    const key = fromDelta ? delta!.vpas[Math.floor(next() * delta!.vpas.length)]! : index.keyOf(Math.floor(next() * vpaCount));
    // Callers send VPAs as users typed them; matching ignores case.
    return next() < 0.25 ? key.toUpperCase() : key;
  };
  const unknown = (): string => {
    for (;;) {
      const provider = PROVIDERS[Math.floor(next() * PROVIDERS.length)]!;
      const handle =
        next() < 0.6
          ? String(6_000_000_000 + Math.floor(next() * 3_999_999_999))
          : `${NAMES[Math.floor(next() * NAMES.length)]!}.${Math.floor(next() * 1e6)}`;
      const vpa = `${handle}@${provider}`;
      if (view.lookup(vpa) === NOT_FOUND) return vpa;
    }
  };
  const vpa = () => (next() < options.hitRatio ? known() : unknown());

  const singles: string[] = [];
  let singleBytes = 0;
  for (let i = 0; i < (options.singles ?? 20_000); i++) {
    const upi = vpa();
    singles.push(`/v1/verify/upi?upi=${encodeURIComponent(upi)}`);
    singleBytes += Buffer.byteLength(JSON.stringify(view.verdict(upi)));
  }

  const bodies: string[] = [];
  let batchBytes = 0;
  const batchScratch = new ByteScratch(BATCH_ANSWER_BOUND);
  for (let i = 0; i < (options.batches ?? 2_000); i++) {
    const upis: string[] = [];
    for (let k = 0; k < 100; k++) upis.push(vpa());
    const body = JSON.stringify({ upis });
    bodies.push(body);
    const answer = answerBatchBody(new ServingView(view), Buffer.from(body), batchScratch);
    if (!(answer instanceof Uint8Array)) throw new Error(`workload batch refused: ${JSON.stringify(answer)}`);
    batchBytes += answer.length;
  }

  const clusters: string[] = [];
  let clusterBytes = 0;
  const clusterCount = data.meta.clusterCount;
  for (let i = 0; clusterCount > 0 && i < (options.clusters ?? 20_000); i++) {
    const id = formatClusterId(data.clusterNumber[Math.floor(next() * clusterCount)]!);
    clusters.push(`/v1/verify/upi/cluster/${id}`);
    clusterBytes += Buffer.byteLength(JSON.stringify(view.cluster(id)));
  }

  // The padded answers of one data version are all of one length: a few give it.
  const hashRanges = hashRangesHere(data);
  const ranges: string[] = [];
  const rangeScratch = new ByteScratch(1 << 20);
  let rangeBytes = 0;
  const rangeCount = options.ranges ?? 20_000;
  for (let i = 0; i < rangeCount; i++) {
    const prefix = vpaHashHex(vpa()).slice(0, PREFIX_DIGITS);
    ranges.push(`/v1/verify/upi/range/${prefix}`);
    if (i < 100) rangeBytes += answerRange(new ServingView(view), hashRanges, null, parseRangePrefix(prefix), true, rangeScratch).length;
  }

  const workload: Workload = {
    singleFile: join(dir, 'single.txt'),
    batchFile: join(dir, 'batch.txt'),
    clusterFile: join(dir, 'cluster.txt'),
    rangeFile: join(dir, 'range.txt'),
    singleBytes: Math.round(singleBytes / singles.length),
    batchBytes: Math.round(batchBytes / bodies.length),
    clusterBytes: clusters.length === 0 ? 0 : Math.round(clusterBytes / clusters.length),
    rangeBytes: Math.round(rangeBytes / Math.min(100, rangeCount)),
    hitRatio: options.hitRatio,
  };
  await writeFile(workload.singleFile, `${singles.join('\n')}\n`);
  await writeFile(workload.batchFile, `${bodies.join('\n')}\n`);
  await writeFile(workload.clusterFile, `${clusters.join('\n')}\n`);
  await writeFile(workload.rangeFile, `${ranges.join('\n')}\n`);
  return workload;
}
