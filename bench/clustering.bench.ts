/**
 * Cluster formation and cluster id assignment at production scale.
 *
 *   node dist/bench/clustering.bench.js [--vpas 10000000] [--cap 500] [--seed 1]
 *
 * The membership is generated outside the timings and shaped like real
 * intelligence: most VPAs sit on one or two urls of their own, gangs of 2-300
 * share chains of pages, a few pages below the cap list hundreds of random
 * VPAs, and a few aggregator pages list thousands (over the cap, so they link
 * nothing). The rebuild drops 1% of urls, so it exercises splits and
 * vanishing clusters against the persisted state of the first build.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { findClusters, type Components, type UrlMembership } from '../src/builder/clustering.js';
import { assignClusterNumbers } from '../src/builder/cluster-ids/numbering.js';
import { emptyClusterIdState } from '../src/builder/cluster-ids/state.js';
import { readClusterIdState, writeClusterIdState } from '../src/builder/cluster-ids/state-file.js';
import { mulberry32 } from '../test/fixtures/random.js';

const { values } = parseArgs({
  options: {
    vpas: { type: 'string', default: '1000000' },
    cap: { type: 'string', default: '500' },
    seed: { type: 'string', default: '1' },
  },
});
const vpaCount = Number(values.vpas);
const cap = Number(values.cap);
const seed = Number(values.seed);
if (!Number.isInteger(vpaCount) || vpaCount < 1000) throw new RangeError('--vpas must be an integer >= 1000');
if (!Number.isInteger(cap) || cap < 1) throw new RangeError('--cap must be a positive integer');

// Seeded, so runs are comparable.
const random = mulberry32(seed);
const randomInt = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

class MembershipBuilder {
  offsets: Uint32Array = new Uint32Array(1 << 16);
  vpas: Uint32Array = new Uint32Array(1 << 16);
  urlCount = 0;
  pairCount = 0;

  push(vpa: number): void {
    if (this.pairCount === this.vpas.length) this.vpas = growArray(this.vpas);
    this.vpas[this.pairCount++] = vpa;
  }

  endUrl(): void {
    if (this.urlCount + 2 > this.offsets.length) this.offsets = growArray(this.offsets);
    this.offsets[++this.urlCount] = this.pairCount;
  }

  finish(): UrlMembership {
    return { offsets: this.offsets.slice(0, this.urlCount + 1), vpas: this.vpas.slice(0, this.pairCount) };
  }
}

function growArray(array: Uint32Array): Uint32Array {
  const grown = new Uint32Array(array.length * 2);
  grown.set(array);
  return grown;
}

function generate(): UrlMembership {
  // Random VpaIds for neighbours, so gangs are not contiguous in memory.
  const perm = new Uint32Array(vpaCount);
  for (let i = 0; i < vpaCount; i++) perm[i] = i;
  for (let i = vpaCount - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
  }
  const out = new MembershipBuilder();
  let p = 0;
  while (p < vpaCount) {
    if (random() < 0.05) {
      // A gang: mostly small, sometimes up to 300, linked by a chain of pages
      // that overlap by one member.
      const size = Math.min(
        vpaCount - p,
        random() < 0.03 ? randomInt(50, 300) : Math.min(300, 2 + Math.floor(-6 * Math.log(1 - random()))),
      );
      if (size >= 2) {
        const window = randomInt(2, Math.min(size, 25));
        for (let start = 0; start < size - 1; start += window - 1) {
          const end = Math.min(size, start + window);
          for (let k = start; k < end; k++) out.push(perm[p + k]!);
          out.endUrl();
        }
        for (let k = 0; k < size; k++) {
          if (random() < 0.4) {
            out.push(perm[p + k]!);
            out.endUrl();
          }
        }
        p += size;
        continue;
      }
    }
    // A lone VPA on one or two pages of its own.
    out.push(perm[p]!);
    out.endUrl();
    if (random() < 0.45) {
      out.push(perm[p]!);
      out.endUrl();
    }
    p++;
  }
  // Pages under the cap listing many random VPAs: these do link.
  const listPages = Math.max(1, Math.round(vpaCount / 1_000_000));
  for (let i = 0; i < listPages; i++) pushRandomPage(out, randomInt(Math.min(100, cap), cap));
  // Aggregators over the cap: thousands of unrelated VPAs that must not fuse.
  const aggregators = Math.max(3, Math.round((vpaCount / 1_000_000) * 3));
  for (let i = 0; i < aggregators; i++) pushRandomPage(out, randomInt(cap + 1, Math.max(cap + 1, 20_000)));
  return out.finish();
}

function pushRandomPage(out: MembershipBuilder, size: number): void {
  const stamp = new Set<number>();
  while (stamp.size < Math.min(size, vpaCount)) stamp.add(Math.floor(random() * vpaCount));
  for (const v of stamp) out.push(v);
  out.endUrl();
}

/** Drop about `fraction` of the urls (splits some clusters, dissolves others). */
function dropUrls(membership: UrlMembership, fraction: number): UrlMembership {
  const out = new MembershipBuilder();
  const { offsets, vpas } = membership;
  for (let u = 0; u + 1 < offsets.length; u++) {
    if (random() < fraction) continue;
    for (let k = offsets[u]!; k < offsets[u + 1]!; k++) out.push(vpas[k]!);
    out.endUrl();
  }
  return out.finish();
}

function summary(components: Components): { clustered: number; largest: number } {
  let clustered = 0;
  let largest = 0;
  for (const size of components.sizes) {
    clustered += size;
    if (size > largest) largest = size;
  }
  return { clustered, largest };
}

// Collect the generator's garbage before each timed step, so a step is not
// billed for it.
v8.setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** Wall and CPU milliseconds of one call (CPU time shows through a busy machine). */
function timed<T>(fn: () => T): [T, number, number] {
  collect();
  const cpu = process.cpuUsage();
  const start = performance.now();
  const result = fn();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return [result, wall, (used.user + used.system) / 1000];
}

async function timedAsync<T>(fn: () => Promise<T>): Promise<[T, number, number]> {
  collect();
  const cpu = process.cpuUsage();
  const start = performance.now();
  const result = await fn();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return [result, wall, (used.user + used.system) / 1000];
}

/**
 * VPA-shaped keys (phone-number and name handles across a few providers) in
 * one latin1 blob, as the build holds them; keyOf decodes one on demand.
 * Their order is unrelated to VpaId order.
 */
function generateKeys(): (vpaId: number) => string {
  const providers = ['ybl', 'okaxis', 'oksbi', 'paytm', 'ibl', 'axl', 'upi', 'okhdfcbank'];
  const offsets = new Uint32Array(vpaCount + 1);
  let blob = Buffer.alloc(vpaCount * 24);
  let length = 0;
  for (let v = 0; v < vpaCount; v++) {
    const unique = v.toString(36);
    const handle =
      random() < 0.6
        ? `${randomInt(6, 9)}${String(randomInt(0, 999_999_999)).padStart(9, '0')}${unique}`
        : `user.${unique}.${randomInt(0, 99)}`;
    const key = `${handle}@${providers[randomInt(0, providers.length - 1)]}`;
    if (blob.length - length < key.length) {
      const grown = Buffer.alloc(blob.length * 2);
      blob.copy(grown);
      blob = grown;
    }
    length += blob.write(key, length, 'latin1');
    offsets[v + 1] = length;
  }
  const keys = blob;
  return (v) => keys.toString('latin1', offsets[v]!, offsets[v + 1]!);
}

const rows: Record<string, string | number>[] = [];
/** Time `fn` and add a table row; `detail` describes the result. */
function step<T>(name: string, fn: () => T, detail: (result: T) => string): T {
  const [result, wall, cpu] = timed(fn);
  rows.push({ step: name, 'wall ms': Math.round(wall), 'cpu ms': Math.round(cpu), detail: detail(result) });
  return result;
}
async function stepAsync<T>(name: string, fn: () => Promise<T>, detail: (result: T) => Promise<string> | string): Promise<T> {
  const [result, wall, cpu] = await timedAsync(fn);
  rows.push({ step: name, 'wall ms': Math.round(wall), 'cpu ms': Math.round(cpu), detail: await detail(result) });
  return result;
}

const first = step('generate membership (input, untimed)', generate, (m) => `${m.offsets.length - 1} urls, ${m.vpas.length} (VPA, url) pairs`);
const keyOf = step('generate keys (input, untimed)', generateKeys, () => 'one latin1 blob');

const components = step(
  'findClusters',
  () => findClusters(vpaCount, first, cap),
  (c) => {
    const { clustered, largest } = summary(c);
    return `${c.count} clusters, ${clustered} clustered VPAs, largest ${largest}`;
  },
);

// The caller's share of assignClusterNumbers: one keyOf per clustered VPA.
step(
  'keyOf per clustered VPA (caller cost, inside the next rows)',
  () => {
    let chars = 0;
    for (let v = 0; v < vpaCount; v++) if (components.of[v]! >= 0) chars += keyOf(v).length;
    return chars;
  },
  (chars) => `${chars} key chars`,
);

const firstAssignment = step(
  'assignClusterNumbers (first build)',
  () => assignClusterNumbers(components, keyOf, emptyClusterIdState()),
  (r) => `nextNumber ${r.state.nextNumber}`,
);

const dir = await mkdtemp(join(tmpdir(), 'upi-risk-bench-'));
try {
  const path = join(dir, 'cluster-ids.bin');
  await stepAsync(
    'writeClusterIdState',
    () => writeClusterIdState(path, firstAssignment.state),
    async () => `${((await stat(path)).size / 1048576).toFixed(1)} MiB`,
  );
  const previous = await stepAsync('readClusterIdState', () => readClusterIdState(path), (p) => `${p.size} keys`);

  step(
    'assignClusterNumbers (unchanged rebuild)',
    () => assignClusterNumbers(components, keyOf, previous),
    (r) => {
      let same = 0;
      for (let c = 0; c < components.count; c++) if (r.numbers[c] === firstAssignment.numbers[c]) same++;
      return `${same} of ${components.count} numbers unchanged`;
    },
  );

  const second = dropUrls(first, 0.01);
  const changed = step('findClusters (1% of urls dropped)', () => findClusters(vpaCount, second, cap), (c) => `${c.count} clusters`);
  step(
    'assignClusterNumbers (changed rebuild)',
    () => assignClusterNumbers(changed, keyOf, previous),
    (r) => {
      let kept = 0;
      for (const n of r.numbers) if (n < previous.nextNumber) kept++;
      return `${kept} numbers kept, ${changed.count - kept} fresh, nextNumber ${r.state.nextNumber}`;
    },
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}

console.log(`clustering bench: ${vpaCount} VPAs, cap ${cap}, seed ${seed}, node ${process.version}, ${os.availableParallelism()} CPUs, load ${os.loadavg()[0]!.toFixed(1)}`);
console.table(rows);
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
