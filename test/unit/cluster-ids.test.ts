import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mkdtemp, rm, readFile, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { findClusters, type Components } from '../../src/builder/clustering.js';
import { assignClusterNumbers } from '../../src/builder/cluster-ids/numbering.js';
import { emptyClusterIdState, type ClusterIdState } from '../../src/builder/cluster-ids/state.js';
import { readClusterIdState, writeClusterIdState } from '../../src/builder/cluster-ids/state-file.js';
import { UpiRiskError } from '../../src/common/errors.js';
import { dataDir } from '../../src/common/data-dir.js';

/**
 * A build from named groups: each inner list is the key set of one url, so
 * every list of two or more keys becomes (part of) a cluster. VpaIds follow
 * the order keys appear in `universe` (or first appearance), which tests can
 * shuffle to show results do not depend on it.
 */
function build(urls: readonly (readonly string[])[], universe?: readonly string[]) {
  const keys = universe ? [...universe] : [...new Set(urls.flat())];
  const id = new Map(keys.map((key, i) => [key, i]));
  const offsets = new Uint32Array(urls.length + 1);
  const vpas: number[] = [];
  urls.forEach((url, u) => {
    for (const key of url) vpas.push(id.get(key)!);
    offsets[u + 1] = vpas.length;
  });
  const components = findClusters(keys.length, { offsets, vpas: Uint32Array.from(vpas) }, 500);
  return { components, keyOf: (v: number) => keys[v]! };
}

/** Run a build against `previous`; answer number by sorted member list, and the new state. */
function run(urls: readonly (readonly string[])[], previous: ClusterIdState, universe?: readonly string[]) {
  const { components, keyOf } = build(urls, universe);
  const { numbers, state } = assignClusterNumbers(components, keyOf, previous);
  return { byCluster: describeClusters(components, keyOf, numbers), numbers, state };
}

function describeClusters(components: Components, keyOf: (v: number) => string, numbers: Uint32Array): Map<string, number> {
  const members: string[][] = Array.from({ length: components.count }, () => []);
  components.of.forEach((c, v) => {
    if (c >= 0) members[c]!.push(keyOf(v));
  });
  return new Map(members.map((list, c) => [list.sort().join(','), numbers[c]!]));
}

function entries(map: Map<string, number>): [string, number][] {
  return [...map].sort((a, b) => a[1] - b[1]);
}

describe('assignClusterNumbers', () => {
  it('first build numbers 1..k in order of smallest member key', () => {
    const { byCluster, state } = run([['m@x', 'n@x'], ['c@x', 'z@x'], ['a@x', 'q@x', 'r@x']], emptyClusterIdState());
    assert.deepEqual(entries(byCluster), [
      ['a@x,q@x,r@x', 1],
      ['c@x,z@x', 2],
      ['m@x,n@x', 3],
    ]);
    assert.equal(state.nextNumber, 4);
    assert.equal(state.size, 7);
    assert.equal(state.numberOf('q@x'), 1);
    assert.equal(state.numberOf('z@x'), 2);
    assert.equal(state.numberOf('nobody@x'), 0);
  });

  it('fresh assignment order does not depend on VpaId order', () => {
    const urls = [['m@x', 'n@x'], ['c@x', 'z@x'], ['a@x', 'q@x', 'r@x'], ['solo@x']];
    const keys = [...new Set(urls.flat())];
    const reference = entries(run(urls, emptyClusterIdState(), keys).byCluster);
    for (const universe of [[...keys].reverse(), [...keys].sort(), ['z@x', 'solo@x', 'a@x', 'n@x', 'c@x', 'r@x', 'm@x', 'q@x']]) {
      assert.deepEqual(entries(run(urls, emptyClusterIdState(), universe).byCluster), reference);
    }
  });

  it('an unchanged rebuild keeps every number', () => {
    const urls = [['a@x', 'b@x'], ['c@x', 'd@x', 'e@x'], ['f@x', 'g@x']];
    const first = run(urls, emptyClusterIdState());
    const second = run(urls, first.state, ['g@x', 'f@x', 'e@x', 'd@x', 'c@x', 'b@x', 'a@x']);
    assert.deepEqual(entries(second.byCluster), entries(first.byCluster));
    assert.equal(second.state.nextNumber, first.state.nextNumber);
  });

  it('a grown cluster keeps its number and a new cluster gets a fresh one', () => {
    const first = run([['b@x', 'c@x']], emptyClusterIdState());
    const second = run([['b@x', 'c@x'], ['c@x', 'a@x'], ['y@x', 'z@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['a@x,b@x,c@x', 1],
      ['y@x,z@x', 2],
    ]);
  });

  it('a merge keeps the smallest number', () => {
    const first = run([['a@x', 'b@x'], ['c@x', 'd@x'], ['e@x', 'f@x']], emptyClusterIdState());
    assert.deepEqual([...first.byCluster.values()].sort(), [1, 2, 3]);
    // 2 and 3 merge, then 1 merges with the result in a later build.
    const second = run([['a@x', 'b@x'], ['c@x', 'd@x', 'e@x', 'f@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['a@x,b@x', 1],
      ['c@x,d@x,e@x,f@x', 2],
    ]);
    const third = run([['a@x', 'b@x', 'f@x'], ['c@x', 'd@x', 'e@x', 'f@x']], second.state);
    assert.deepEqual(entries(third.byCluster), [['a@x,b@x,c@x,d@x,e@x,f@x', 1]]);
    assert.equal(third.state.nextNumber, 4);
  });

  it('a split: the largest part keeps the number, the others get fresh ones', () => {
    const first = run([['a@x', 'b@x', 'c@x', 'd@x', 'e@x', 'f@x', 'g@x']], emptyClusterIdState());
    const second = run([['a@x', 'b@x'], ['c@x', 'd@x', 'e@x'], ['f@x', 'g@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['c@x,d@x,e@x', 1],
      ['a@x,b@x', 2],
      ['f@x,g@x', 3],
    ]);
  });

  it('a split into equal parts: the part whose smallest key sorts first keeps the number', () => {
    const first = run([['m@x', 'n@x', 'b@x', 'c@x']], emptyClusterIdState());
    const second = run([['m@x', 'n@x'], ['c@x', 'b@x']], first.state, ['n@x', 'm@x', 'c@x', 'b@x']);
    assert.deepEqual(entries(second.byCluster), [
      ['b@x,c@x', 1],
      ['m@x,n@x', 2],
    ]);
  });

  it('a newcomer joining one part does not decide a tie between parts', () => {
    const first = run([['m@x', 'n@x', 'b@x', 'c@x']], emptyClusterIdState());
    // a@x joins the m/n part; the b/c part still has the smaller old member.
    const second = run([['m@x', 'n@x', 'a@x'], ['c@x', 'b@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['b@x,c@x', 1],
      ['a@x,m@x,n@x', 2],
    ]);
  });

  it('never reuses a retired number', () => {
    const first = run([['a@x', 'b@x'], ['c@x', 'd@x'], ['e@x', 'f@x']], emptyClusterIdState());
    // Cluster 3 (e, f) disappears; cluster 2 merges into 1.
    const second = run([['a@x', 'b@x', 'c@x', 'd@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [['a@x,b@x,c@x,d@x', 1]]);
    assert.equal(second.state.nextNumber, 4);
    assert.equal(second.state.numberOf('e@x'), 0);
    // The old members come back as clusters: they get new numbers, not 2 or 3.
    const third = run([['a@x', 'b@x'], ['c@x', 'd@x'], ['e@x', 'f@x']], second.state);
    assert.deepEqual(entries(third.byCluster), [
      ['a@x,b@x', 1],
      ['c@x,d@x', 4],
      ['e@x,f@x', 5],
    ]);
    assert.equal(third.state.nextNumber, 6);
    // An empty build retires everything but keeps the counter.
    const fourth = run([], third.state);
    assert.equal(fourth.state.size, 0);
    assert.equal(fourth.state.nextNumber, 6);
    const fifth = run([['x@x', 'y@x']], fourth.state);
    assert.deepEqual(entries(fifth.byCluster), [['x@x,y@x', 6]]);
  });

  it('merge and split together: each old number follows most of its members, then the smallest wins', () => {
    // 1 = {a,b,c,d,e}, 2 = {p,q}, 3 = {x,y}.
    const first = run([['a@x', 'b@x', 'c@x', 'd@x', 'e@x'], ['p@x', 'q@x'], ['x@x', 'y@x']], emptyClusterIdState());
    assert.deepEqual(entries(first.byCluster), [
      ['a@x,b@x,c@x,d@x,e@x', 1],
      ['p@x,q@x', 2],
      ['x@x,y@x', 3],
    ]);
    // 1 splits into {a,b} and {c,d,e}; {c,d,e} merges with 3; {a,b} merges with 2.
    // Number 1 follows its majority {c,d,e} into the component that also holds 3, which keeps 1.
    // {a,b,p,q} receives 2 only. Number 3 is retired.
    const second = run([['a@x', 'b@x', 'p@x', 'q@x'], ['c@x', 'd@x', 'e@x', 'x@x', 'y@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['c@x,d@x,e@x,x@x,y@x', 1],
      ['a@x,b@x,p@x,q@x', 2],
    ]);
    // 2's {a,b,p,q} splits 2-2: the part with the smaller key (a@x) keeps 2, {p,q} is fresh.
    const third = run([['a@x', 'b@x'], ['p@x', 'q@x'], ['c@x', 'd@x', 'e@x', 'x@x', 'y@x']], second.state);
    assert.deepEqual(entries(third.byCluster), [
      ['c@x,d@x,e@x,x@x,y@x', 1],
      ['a@x,b@x', 2],
      ['p@x,q@x', 4],
    ]);
    assert.equal(third.state.nextNumber, 5);
  });

  it('a larger old cluster split across a merge: the component with most of it gets the number', () => {
    // 1 = {a..f} (6 members), 2 = {s,t}.
    const first = run([['a@x', 'b@x', 'c@x', 'd@x', 'e@x', 'f@x'], ['s@x', 't@x']], emptyClusterIdState());
    // {a,b} joins 2; {c,d,e,f} stays alone. 1 goes to {c,d,e,f}; {a,b,s,t} keeps 2.
    const second = run([['a@x', 'b@x', 's@x', 't@x'], ['c@x', 'd@x', 'e@x', 'f@x']], first.state);
    assert.deepEqual(entries(second.byCluster), [
      ['c@x,d@x,e@x,f@x', 1],
      ['a@x,b@x,s@x,t@x', 2],
    ]);
    // Most of 1 ({c,d,e}) joins 2's component: numbers 1 and 2 both land there and 1 wins;
    // {f} with newcomer g is fresh.
    const third = run([['a@x', 'b@x', 'c@x', 'd@x', 'e@x', 's@x', 't@x'], ['f@x', 'g@x']], second.state);
    assert.deepEqual(entries(third.byCluster), [
      ['a@x,b@x,c@x,d@x,e@x,s@x,t@x', 1],
      ['f@x,g@x', 3],
    ]);
    assert.equal(third.state.nextNumber, 4);
  });

  it('refuses a keyOf that gives two VPAs the same key, and inconsistent components', () => {
    const { components } = build([['a@x', 'b@x']]);
    assert.throws(() => assignClusterNumbers(components, () => 'same@x', emptyClusterIdState()), {
      name: 'RangeError',
      message: /same@x/,
    });
    const bad: Components = { count: 1, of: Int32Array.of(0, 0, 0), sizes: Uint32Array.of(2) };
    assert.throws(() => assignClusterNumbers(bad, (v) => `k${v}@x`, emptyClusterIdState()), { name: 'RangeError' });
    const empty: Components = { count: 2, of: Int32Array.of(0, 0, 0, 0), sizes: Uint32Array.of(2, 2) };
    assert.throws(() => assignClusterNumbers(empty, (v) => `k${v}@x`, emptyClusterIdState()), {
      name: 'RangeError',
      message: /component 1 has no members/,
    });
    const outOfRange: Components = { count: 1, of: Int32Array.of(0, 1), sizes: Uint32Array.of(2) };
    assert.throws(() => assignClusterNumbers(outOfRange, (v) => `k${v}@x`, emptyClusterIdState()), { name: 'RangeError' });
  });

  it('keeps keys whose hashes collide apart', async () => {
    // FNV-1a, the state's key hash before its bijective finaliser: these pairs collide.
    const fnv = (key: string) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
      return h >>> 0;
    };
    assert.equal(fnv('76mmiq@x'), fnv('2391dx@x'));
    assert.equal(fnv('1vakn1q@x'), fnv('mu7er9@x'));
    const urls = [['76mmiq@x', 'a@x'], ['2391dx@x', 'b@x'], ['1vakn1q@x', 'mu7er9@x']];
    const first = run(urls, emptyClusterIdState());
    assert.deepEqual(entries(first.byCluster), [
      ['1vakn1q@x,mu7er9@x', 1],
      ['2391dx@x,b@x', 2],
      ['76mmiq@x,a@x', 3],
    ]);
    for (const [key, n] of [['76mmiq@x', 3], ['2391dx@x', 2], ['1vakn1q@x', 1], ['mu7er9@x', 1]] as const) {
      assert.equal(first.state.numberOf(key), n, key);
    }
    const path = join(await mkdtemp(join(tmpdir(), 'upi-risk-collide-')), 'ids.bin');
    await writeClusterIdState(path, first.state);
    const loaded = await readClusterIdState(path);
    // The colliding keys now sit in different clusters: each must keep following its own.
    const second = run([['76mmiq@x', 'b@x'], ['2391dx@x', 'a@x'], ['1vakn1q@x', 'z@x']], loaded);
    assert.deepEqual(entries(second.byCluster), [
      ['1vakn1q@x,z@x', 1],
      ['2391dx@x,a@x', 2],
      ['76mmiq@x,b@x', 3],
    ]);
    await rm(dirname(path), { recursive: true, force: true });
  });

  it('handles non-ASCII keys', () => {
    const first = run([['é@x', 'ü@x'], ['a@x', 'b@x']], emptyClusterIdState());
    assert.deepEqual(entries(first.byCluster), [
      ['a@x,b@x', 1],
      ['é@x,ü@x', 2],
    ]);
    assert.equal(first.state.numberOf('ü@x'), 2);
  });

  it('accepts a previous state of another implementation', () => {
    const previous: ClusterIdState = {
      nextNumber: 10,
      size: 2,
      numberOf: (key) => (key === 'a@x' || key === 'b@x' ? 7 : 0),
    };
    const { byCluster, state } = run([['a@x', 'b@x'], ['c@x', 'd@x']], previous);
    assert.deepEqual(entries(byCluster), [
      ['a@x,b@x', 7],
      ['c@x,d@x', 10],
    ]);
    assert.equal(state.nextNumber, 11);
  });
});

/**
 * The documented algorithm written the slow, obvious way over key sets:
 * returns the number of each component (given as its sorted keys).
 */
function naiveAssign(clusters: string[][], previous: Map<string, number>, previousNext: number) {
  const votes = new Map<number, Map<number, string[]>>();
  clusters.forEach((keys, c) => {
    for (const key of keys) {
      const old = previous.get(key);
      if (old === undefined) continue;
      const byComponent = votes.get(old) ?? new Map<number, string[]>();
      votes.set(old, byComponent);
      byComponent.set(c, [...(byComponent.get(c) ?? []), key]);
    }
  });
  const numbers = clusters.map(() => 0);
  for (const old of [...votes.keys()].sort((a, b) => a - b)) {
    const candidates = [...votes.get(old)!].map(([c, keys]) => ({ c, votes: keys.length, smallest: [...keys].sort()[0]! }));
    candidates.sort((a, b) => b.votes - a.votes || (a.smallest < b.smallest ? -1 : 1));
    const winner = candidates[0]!.c;
    if (numbers[winner] === 0) numbers[winner] = old;
  }
  let next = Math.max(previousNext, Math.max(0, ...votes.keys()) + 1);
  const fresh = clusters.map((keys, c) => ({ c, smallest: [...keys].sort()[0]! })).filter(({ c }) => numbers[c] === 0);
  fresh.sort((a, b) => (a.smallest < b.smallest ? -1 : 1));
  for (const { c } of fresh) numbers[c] = next++;
  return { numbers, next };
}

describe('assignClusterNumbers against the naive algorithm', () => {
  it('agrees over random sequences of rebuilds', () => {
    const pool = Array.from({ length: 14 }, (_, i) => `k${i.toString(36)}@x`);
    const buildArb = fc.array(fc.array(fc.constantFrom(...pool), { maxLength: 5 }), { maxLength: 8 });
    const buildsArb = fc.array(buildArb, { minLength: 1, maxLength: 6 });
    const orderArb = fc.shuffledSubarray(pool, { minLength: pool.length });
    fc.assert(
      fc.property(buildsArb, orderArb, (builds, initialOrder) => {
        const order = [...initialOrder];
        let state = emptyClusterIdState();
        let previous = new Map<string, number>();
        let previousNext = 1;
        const everSeen = new Set<number>();
        for (const urls of builds) {
          // Vary VpaId order between builds: it must not matter.
          const { components, keyOf } = build(urls, order);
          const result = assignClusterNumbers(components, keyOf, state);
          const clusters: string[][] = Array.from({ length: components.count }, () => []);
          components.of.forEach((c, v) => {
            if (c >= 0) clusters[c]!.push(keyOf(v));
          });
          const expected = naiveAssign(clusters, previous, previousNext);
          assert.deepEqual([...result.numbers], expected.numbers);
          assert.equal(result.state.nextNumber, expected.next);
          // Never reused: a number is either carried from the previous build or new.
          const carried = new Set(previous.values());
          for (const n of result.numbers) assert.ok(carried.has(n) || !everSeen.has(n), `number ${n} reused`);
          for (const n of result.numbers) everSeen.add(n);
          previous = new Map(clusters.flatMap((keys, c) => keys.map((key) => [key, result.numbers[c]!] as const)));
          previousNext = result.state.nextNumber;
          state = result.state;
          assert.equal(state.size, previous.size);
          for (const key of pool) assert.equal(state.numberOf(key), previous.get(key) ?? 0);
          order.reverse();
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('cluster id state persistence', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'upi-risk-cluster-ids-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a missing file reads as the empty state', async () => {
    const state = await readClusterIdState(join(root, 'missing', 'cluster-ids.bin'));
    assert.equal(state.nextNumber, 1);
    assert.equal(state.size, 0);
    assert.equal(state.numberOf('a@x'), 0);
  });

  it('round-trips through the data directory', async () => {
    const dir = dataDir(join(root, 'data'));
    const first = run([['a@x', 'b@x'], ['c@x', 'd@x', 'é@x'], ['e@x', 'f@x']], emptyClusterIdState());
    const second = run([['a@x', 'b@x', 'c@x', 'd@x', 'é@x']], first.state);
    await writeClusterIdState(dir.clusterIds, second.state);
    const loaded = await readClusterIdState(dir.clusterIds);
    assert.equal(loaded.nextNumber, second.state.nextNumber);
    assert.equal(loaded.size, second.state.size);
    for (const key of ['a@x', 'b@x', 'c@x', 'd@x', 'é@x', 'e@x', 'f@x', 'zz@x']) {
      assert.equal(loaded.numberOf(key), second.state.numberOf(key), key);
    }
    // A rebuild from the loaded state answers what a rebuild from memory does.
    const urls = [['a@x', 'b@x'], ['c@x', 'd@x', 'é@x'], ['e@x', 'f@x']];
    assert.deepEqual(entries(run(urls, loaded).byCluster), entries(run(urls, second.state).byCluster));

    await writeClusterIdState(dir.clusterIds, emptyClusterIdState());
    const empty = await readClusterIdState(dir.clusterIds);
    assert.equal(empty.size, 0);
    assert.equal(empty.nextNumber, 1);
  });

  it('refuses corrupt, truncated, foreign and unknown-version files with ERR_CLUSTER_STATE', async () => {
    const path = join(root, 'bad', 'cluster-ids.bin');
    await mkdir(join(root, 'bad'), { recursive: true });
    const { state } = run([['a@x', 'b@x'], ['c@x', 'd@x']], emptyClusterIdState());
    await writeClusterIdState(path, state);
    const good = await readFile(path);

    const refuses = async (bytes: Uint8Array, message: RegExp) => {
      await writeFile(path, bytes);
      await assert.rejects(readClusterIdState(path), (error: unknown) => {
        assert.ok(error instanceof UpiRiskError);
        assert.equal(error.code, 'ERR_CLUSTER_STATE');
        assert.match(error.message, message);
        return true;
      });
    };

    const flipped = Buffer.from(good);
    flipped[flipped.length - 3]! ^= 0xff;
    await refuses(flipped, /checksum/);
    await refuses(good.subarray(0, good.length - 1), /truncated: the header announces/);
    await refuses(good.subarray(0, 7), /truncated/);
    await refuses(Buffer.from('{"nextNumber": 3}\n'), /magic/);

    const future = Buffer.from(good);
    future.writeUInt32LE(3, 8);
    await refuses(future, /version 3/);
  });

  it('reads a version 1 file (its own 16-byte header) and refuses a damaged one', async () => {
    const { Packr } = await import('msgpackr');
    const { crc32 } = await import('node:zlib');
    const body = new Packr({ useRecords: false }).pack({
      nextNumber: 3,
      keyBytes: Buffer.from('a@x'),
      keyOffsets: new Uint8Array(Uint32Array.from([0, 3]).buffer),
      numbers: new Uint8Array(Uint32Array.from([2]).buffer),
    });
    const header = Buffer.alloc(16);
    header.write('UPCI', 0, 'latin1');
    header.writeUInt32LE(1, 4);
    header.writeUInt32LE(body.length, 8);
    header.writeUInt32LE(crc32(body), 12);
    const path = join(root, 'version-1.bin');
    await writeFile(path, Buffer.concat([header, body]));
    const state = await readClusterIdState(path);
    assert.equal(state.nextNumber, 3);
    assert.equal(state.numberOf('a@x'), 2);
    // Written back in the current framing, and read again the same.
    await writeClusterIdState(path, state);
    assert.equal((await readFile(path)).subarray(0, 8).toString('latin1'), 'UPIRCIDS');
    assert.equal((await readClusterIdState(path)).numberOf('a@x'), 2);

    await writeFile(path, Buffer.concat([header, body.subarray(0, body.length - 1)]));
    await assert.rejects(readClusterIdState(path), { code: 'ERR_CLUSTER_STATE', message: /header says/ });
    const later = Buffer.concat([header, body]);
    later.writeUInt32LE(2, 4);
    await writeFile(path, later);
    await assert.rejects(readClusterIdState(path), { code: 'ERR_CLUSTER_STATE', message: /version 2/ });
  });

  it('refuses a well-formed file whose content is inconsistent', async () => {
    // Hand-built bodies whose checksum matches but whose content is wrong.
    const { Packr } = await import('msgpackr');
    const { crc32 } = await import('node:zlib');
    const fileOf = (keys: string, offsets: number[], numbers: number[], nextNumber: number) => {
      const body = new Packr({ useRecords: false }).pack({
        nextNumber,
        keyBytes: Buffer.from(keys),
        keyOffsets: new Uint8Array(Uint32Array.from(offsets).buffer),
        numbers: new Uint8Array(Uint32Array.from(numbers).buffer),
      });
      const header = Buffer.alloc(16);
      header.write('UPCI', 0, 'latin1');
      header.writeUInt32LE(1, 4);
      header.writeUInt32LE(body.length, 8);
      header.writeUInt32LE(crc32(body), 12);
      return Buffer.concat([header, body]);
    };
    const path = join(root, 'inconsistent.bin');
    const refuses = async (file: Buffer, message: RegExp) => {
      await writeFile(path, file);
      await assert.rejects(readClusterIdState(path), { code: 'ERR_CLUSTER_STATE', message });
    };
    await refuses(fileOf('a@xb@x', [0, 3, 6], [1, 5], 2), /outside/);
    await refuses(fileOf('a@xa@x', [0, 3, 6], [1, 1], 2), /repeated/);
    await refuses(fileOf('a@xb@x', [0, 3], [1, 1], 2), /numbers/);
    await refuses(fileOf('a@xb@x', [0, 4, 3], [1, 1], 2), /keyOffsets/);
    // The same two keys in both orders: exactly one is the stored order.
    const results = await Promise.allSettled(
      [fileOf('a@xb@x', [0, 3, 6], [1, 1], 2), fileOf('b@xa@x', [0, 3, 6], [1, 1], 2)].map(async (file, i) => {
        const own = join(root, `order-${i}.bin`);
        await writeFile(own, file);
        return readClusterIdState(own);
      }),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
  });

  it('finds every key of a large state after a round trip', async () => {
    // Large enough that hash buckets hold many keys each, so reading it back
    // (which checks the stored order) exercises the sort within buckets.
    const keys = Array.from({ length: 100_000 }, (_, i) => `vpa${(i * 7919) % 100_000}.${i}@bank`);
    const urls: string[][] = [];
    for (let i = 0; i < keys.length; i += 5) urls.push(keys.slice(i, i + 5));
    const { state, byCluster } = run(urls, emptyClusterIdState());
    assert.equal(byCluster.size, 20_000);
    const path = join(root, 'large.bin');
    await writeClusterIdState(path, state);
    const loaded = await readClusterIdState(path);
    for (let i = 0; i < keys.length; i++) {
      assert.equal(loaded.numberOf(keys[i]!), state.numberOf(keys[i]!));
      assert.equal(state.numberOf(keys[i]!), byCluster.get(keys.slice(i - (i % 5), i - (i % 5) + 5).sort().join(',')));
    }
    assert.equal(loaded.numberOf('vpa1.0@bank'), 0);
  });

  it('refuses to write a state it cannot enumerate', async () => {
    const foreign: ClusterIdState = { nextNumber: 1, size: 0, numberOf: () => 0 };
    await assert.rejects(writeClusterIdState(join(root, 'x.bin'), foreign), { name: 'TypeError' });
  });
});
