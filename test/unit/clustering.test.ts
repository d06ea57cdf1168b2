import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_URL_MEMBER_CAP, findClusters, type Components, type UrlMembership } from '../../src/builder/clustering.js';

/** Membership from plain url lists. */
function membership(urls: readonly (readonly number[])[]): UrlMembership {
  const offsets = new Uint32Array(urls.length + 1);
  const vpas = new Uint32Array(urls.reduce((sum, url) => sum + url.length, 0));
  let at = 0;
  urls.forEach((url, u) => {
    vpas.set(url, at);
    at += url.length;
    offsets[u + 1] = at;
  });
  return { offsets, vpas };
}

/** Components as sorted member lists, in component order. */
function groups(result: Components): number[][] {
  const out: number[][] = Array.from({ length: result.count }, () => []);
  result.of.forEach((c, v) => {
    if (c >= 0) out[c]!.push(v);
  });
  return out;
}

/** Straightforward reference: adjacency lists and BFS, components ordered by smallest member. */
function naive(vpaCount: number, urls: readonly (readonly number[])[], cap: number): number[][] {
  const adjacent: Set<number>[] = Array.from({ length: vpaCount }, () => new Set());
  for (const url of urls) {
    const distinct = [...new Set(url)];
    if (distinct.length > cap) continue;
    for (const a of distinct) for (const b of distinct) if (a !== b) adjacent[a]!.add(b);
  }
  const seen = new Array<boolean>(vpaCount).fill(false);
  const out: number[][] = [];
  for (let start = 0; start < vpaCount; start++) {
    if (seen[start]) continue;
    seen[start] = true;
    const members = [start];
    for (let i = 0; i < members.length; i++) {
      for (const next of adjacent[members[i]!]!) {
        if (!seen[next]) {
          seen[next] = true;
          members.push(next);
        }
      }
    }
    if (members.length >= 2) out.push(members.sort((a, b) => a - b));
  }
  return out;
}

describe('findClusters', () => {
  it('joins a chain of urls transitively and leaves singletons at -1', () => {
    // 0-1 on url A, 1-2 on B, 2-3 on C: one cluster; 4 alone on D; 5 on nothing; 6-7 on E.
    const result = findClusters(8, membership([[1, 0], [2, 1], [3, 2], [4], [6, 7]]), DEFAULT_URL_MEMBER_CAP);
    assert.equal(result.count, 2);
    assert.deepEqual(groups(result), [
      [0, 1, 2, 3],
      [6, 7],
    ]);
    assert.deepEqual([...result.of], [0, 0, 0, 0, -1, -1, 1, 1]);
    assert.deepEqual([...result.sizes], [4, 2]);
  });

  it('numbers components by their smallest VpaId whatever the url order', () => {
    const result = findClusters(6, membership([[5, 4], [3, 1], [2, 0]]), 10);
    assert.deepEqual(groups(result), [
      [0, 2],
      [1, 3],
      [4, 5],
    ]);
  });

  it('a url with more than the cap links nothing, one with exactly the cap links', () => {
    const cap = 3;
    const over = findClusters(8, membership([[0, 1, 2, 3]]), cap);
    assert.equal(over.count, 0);
    assert.deepEqual([...over.of], [-1, -1, -1, -1, -1, -1, -1, -1]);

    const at = findClusters(8, membership([[0, 1, 2]]), cap);
    assert.deepEqual(groups(at), [[0, 1, 2]]);

    // The over-cap url does not link, but its VPAs still cluster through other urls.
    const mixed = findClusters(8, membership([[0, 1, 2, 3, 4], [3, 4], [5, 6, 7]]), cap);
    assert.deepEqual(groups(mixed), [
      [3, 4],
      [5, 6, 7],
    ]);
  });

  it('counts duplicate VpaIds in one url once, against the cap too', () => {
    // Five entries but three distinct VPAs: at the cap of 3, so it links.
    const result = findClusters(4, membership([[2, 0, 2, 1, 0]]), 3);
    assert.deepEqual(groups(result), [[0, 1, 2]]);
    // One VPA listed twice relates it to nobody.
    const alone = findClusters(2, membership([[1, 1]]), 3);
    assert.equal(alone.count, 0);
    assert.deepEqual([...alone.of], [-1, -1]);
    // Over the cap after de-duplication still links nothing.
    const over = findClusters(5, membership([[0, 1, 1, 2, 3]]), 3);
    assert.equal(over.count, 0);
  });

  it('handles empty input', () => {
    const none = findClusters(0, membership([]), DEFAULT_URL_MEMBER_CAP);
    assert.equal(none.count, 0);
    assert.equal(none.of.length, 0);
    assert.equal(none.sizes.length, 0);

    const noUrls = findClusters(3, membership([]), DEFAULT_URL_MEMBER_CAP);
    assert.deepEqual([...noUrls.of], [-1, -1, -1]);

    const emptyUrls = findClusters(3, membership([[], [], [1]]), DEFAULT_URL_MEMBER_CAP);
    assert.equal(emptyUrls.count, 0);
  });

  it('a cap of 1 links nothing', () => {
    assert.equal(findClusters(3, membership([[0, 1], [1, 2]]), 1).count, 0);
  });

  it('rejects bad arguments, naming them', () => {
    const good = membership([[0, 1]]);
    assert.throws(() => findClusters(-1, good, 5), { name: 'RangeError', message: /vpaCount/ });
    assert.throws(() => findClusters(1.5, good, 5), { name: 'RangeError', message: /vpaCount/ });
    assert.throws(() => findClusters(2, good, 0), { name: 'RangeError', message: /urlMemberCap/ });
    assert.throws(() => findClusters(2, good, Number.NaN), { name: 'RangeError', message: /urlMemberCap/ });
    assert.throws(() => findClusters(1, good, 5), { name: 'RangeError', message: /membership\.vpas\[1\]/ });
    assert.throws(() => findClusters(2, { offsets: new Uint32Array(0), vpas: new Uint32Array(0) }, 5), {
      name: 'RangeError',
      message: /membership\.offsets/,
    });
    assert.throws(() => findClusters(2, { offsets: Uint32Array.of(1, 2), vpas: Uint32Array.of(0, 1) }, 5), {
      name: 'RangeError',
      message: /membership\.offsets\[0\]/,
    });
    assert.throws(() => findClusters(2, { offsets: Uint32Array.of(0, 2, 1), vpas: Uint32Array.of(0, 1) }, 5), {
      name: 'RangeError',
      message: /non-decreasing/,
    });
    assert.throws(() => findClusters(2, { offsets: Uint32Array.of(0, 1), vpas: Uint32Array.of(0, 1) }, 5), {
      name: 'RangeError',
      message: /membership\.vpas\.length/,
    });
    assert.throws(() => findClusters(2, { offsets: [0, 2], vpas: Uint32Array.of(0, 1) } as unknown as UrlMembership, 5), {
      name: 'TypeError',
      message: /membership\.offsets/,
    });
  });

  it('matches a naive BFS on random graphs with random caps', () => {
    const scenario = fc
      .integer({ min: 0, max: 40 })
      .chain((vpaCount) =>
        fc.record({
          vpaCount: fc.constant(vpaCount),
          urls:
            vpaCount === 0
              ? fc.array(fc.constant<number[]>([]), { maxLength: 3 })
              : fc.array(fc.array(fc.integer({ min: 0, max: vpaCount - 1 }), { maxLength: 8 }), { maxLength: 30 }),
          cap: fc.integer({ min: 1, max: 9 }),
        }),
      );
    fc.assert(
      fc.property(scenario, ({ vpaCount, urls, cap }) => {
        const result = findClusters(vpaCount, membership(urls), cap);
        const expected = naive(vpaCount, urls, cap);
        assert.deepEqual(groups(result), expected);
        assert.equal(result.count, expected.length);
        assert.deepEqual([...result.sizes], expected.map((members) => members.length));
        assert.equal(result.of.length, vpaCount);
      }),
      { numRuns: 500 },
    );
  });
});
