/**
 * Cluster formation: two flagged VPAs are related when they were observed on
 * the same url, and a cluster is a connected component of two or more VPAs.
 *
 * Sized for ~10 million VPAs and ~15 million (VPA, url) pairs, so the hot
 * loops touch only typed arrays: a union-find over one Int32Array (negative
 * entries are roots holding minus the component size; union by size plus path
 * halving keep finds near constant), and no per-VPA or per-url objects.
 */

/** url u's VPAs are vpas[offsets[u] .. offsets[u+1]); distinct within a url. */
export interface UrlMembership {
  readonly offsets: Uint32Array;
  readonly vpas: Uint32Array;
}

export interface Components {
  /** Number of clusters (components of size >= 2). */
  readonly count: number;
  /** Per VPA: component index 0..count-1, or -1 for a VPA related to no other. */
  readonly of: Int32Array;
  /** Per component: number of member VPAs (always >= 2). */
  readonly sizes: Uint32Array;
}

/**
 * Default cap on distinct VPAs per url. An aggregator page (a forum dump, a
 * "scam numbers list") can list thousands of unrelated accounts; linking them
 * would fuse them into one meaningless giant cluster, so a url seen with more
 * VPAs than this relates none of them. Gang pages are far smaller.
 */
export const DEFAULT_URL_MEMBER_CAP = 500;

import { freshArrays, type ArrayAllocator } from '../common/scratch-arrays.js';

/** Int32Array holds the union-find, so ids must fit in it. */
const MAX_VPA_COUNT = 0x7fffffff;

/**
 * Connected components of the "seen on the same url" relation.
 *
 * - A url with at most `urlMemberCap` distinct VPAs relates all of them; one
 *   with more relates none (it stays a source of each VPA elsewhere, it just
 *   does not link).
 * - Duplicate VpaIds inside one url's list are tolerated and counted once
 *   against the cap; a url with no or one VPA links nothing.
 * - Components are numbered in order of their smallest VpaId, so the result
 *   depends only on the relation, not on url order.
 *
 * `of` comes from `scratch`, valid as long as what `scratch` hands out is;
 * the union-find is memory of its own, gone with this call: a build then
 * lays out the snapshot's columns without it (bench/MEASUREMENTS.md#assembly-arrays-let-go).
 *
 * Throws TypeError for arrays of the wrong type and RangeError (naming the
 * argument) for out-of-range values: a bad offset or VpaId would otherwise
 * read or write outside the arrays silently.
 */
export function findClusters(vpaCount: number, membership: UrlMembership, urlMemberCap: number, scratch: ArrayAllocator = freshArrays): Components {
  if (!Number.isInteger(vpaCount) || vpaCount < 0 || vpaCount > MAX_VPA_COUNT) {
    throw new RangeError(`vpaCount must be an integer in 0..${MAX_VPA_COUNT}, got ${String(vpaCount)}`);
  }
  if (!Number.isInteger(urlMemberCap) || urlMemberCap < 1) {
    throw new RangeError(`urlMemberCap must be a positive integer, got ${String(urlMemberCap)}`);
  }
  if (membership === null || typeof membership !== 'object') throw new TypeError('membership must be an object');
  const { offsets, vpas } = membership;
  if (!(offsets instanceof Uint32Array)) throw new TypeError('membership.offsets must be a Uint32Array');
  if (!(vpas instanceof Uint32Array)) throw new TypeError('membership.vpas must be a Uint32Array');
  validateMembership(vpaCount, offsets, vpas);

  // parent[i] >= 0: i's parent; parent[i] < 0: i is a root of a component of size -parent[i].
  const parent = new Int32Array(vpaCount).fill(-1);
  const urlCount = offsets.length - 1;
  // Distinct-member stamps (url index + 1), only needed for urls longer than
  // the cap, so allocated on first use.
  let stamp: Uint32Array | null = null;

  for (let u = 0; u < urlCount; u++) {
    const start = offsets[u]!;
    const end = offsets[u + 1]!;
    const length = end - start;
    if (length < 2) continue;
    if (length > urlMemberCap) {
      // Only a list longer than the cap can hold more than `cap` distinct VPAs.
      stamp ??= new Uint32Array(vpaCount);
      const mark = u + 1;
      let distinct = 0;
      for (let k = start; k < end && distinct <= urlMemberCap; k++) {
        const v = vpas[k]!;
        if (stamp[v] !== mark) {
          stamp[v] = mark;
          distinct++;
        }
      }
      if (distinct > urlMemberCap) continue;
    }
    // Union every member into the first one's component; keep its current root
    // in hand so it is not re-found for each member. Duplicates are no-ops.
    let root = find(parent, vpas[start]!);
    for (let k = start + 1; k < end; k++) {
      const other = find(parent, vpas[k]!);
      if (other === root) continue;
      // Union by size: the smaller tree hangs under the larger root.
      const rootSize = parent[root]!;
      const otherSize = parent[other]!;
      if (rootSize <= otherSize) {
        parent[root] = rootSize + otherSize;
        parent[other] = root;
      } else {
        parent[other] = rootSize + otherSize;
        parent[root] = other;
        root = other;
      }
    }
  }

  return label(parent, vpaCount, scratch);
}

/** Root of v's tree, halving the path on the way (every node skips to its grandparent). */
function find(parent: Int32Array, v: number): number {
  let p = parent[v]!;
  while (p >= 0) {
    const grand = parent[p]!;
    if (grand < 0) return p;
    parent[v] = grand;
    v = grand;
    p = parent[v]!;
  }
  return v;
}

/**
 * Number components of size >= 2 in order of their smallest VpaId. Walking
 * VpaIds upwards meets each component first at its smallest member; the label
 * is parked at the component's root slot in `of` (a root is either already
 * visited, so labelled, or still -1), so no second per-VPA array is needed.
 */
function label(parent: Int32Array, vpaCount: number, scratch: ArrayAllocator): Components {
  const of = scratch.zeroed(Int32Array, vpaCount).fill(-1);
  let sizes = new Uint32Array(16);
  let count = 0;
  for (let v = 0; v < vpaCount; v++) {
    const root = find(parent, v);
    const size = -parent[root]!;
    if (size < 2) continue;
    let component = of[root]!;
    if (component < 0) {
      component = count++;
      of[root] = component;
      if (component === sizes.length) {
        const grown = new Uint32Array(sizes.length * 2);
        grown.set(sizes);
        sizes = grown;
      }
      sizes[component] = size;
    }
    of[v] = component;
  }
  return { count, of, sizes: sizes.slice(0, count) };
}

function validateMembership(vpaCount: number, offsets: Uint32Array, vpas: Uint32Array): void {
  if (offsets.length < 1) throw new RangeError('membership.offsets must have length urlCount + 1 (at least 1)');
  if (offsets[0] !== 0) throw new RangeError(`membership.offsets[0] must be 0, got ${offsets[0]}`);
  let previous = 0;
  for (let u = 1; u < offsets.length; u++) {
    const offset = offsets[u]!;
    if (offset < previous) {
      throw new RangeError(`membership.offsets must be non-decreasing; offsets[${u}] = ${offset} < ${previous}`);
    }
    previous = offset;
  }
  if (previous !== vpas.length) {
    throw new RangeError(`membership.offsets must end at membership.vpas.length (${vpas.length}), got ${previous}`);
  }
  for (let k = 0; k < vpas.length; k++) {
    if (vpas[k]! >= vpaCount) {
      throw new RangeError(`membership.vpas[${k}] = ${vpas[k]} is not a VpaId below vpaCount (${vpaCount})`);
    }
  }
}
