import type { Components } from '../clustering.js';
import { fmix32 } from '../../engine/hash.js';
import { FNV_OFFSET, FNV_PRIME, compareBytes, compareEntries, encodeInto, grow, hashBytes, keyWord } from './key-bytes.js';
import { sortEntries, type Collected, type Entries } from './ordering.js';
import { MAX_NUMBER, PackedClusterIdState, type ClusterIdState } from './state.js';

/**
 * Stable public cluster numbers (`MC-<number>`) across rebuilds.
 *
 * The state remembers, for every VPA that was clustered in the last build, the
 * number its cluster had, plus the next number never handed out. A rebuild
 * then resolves the new components against it:
 *
 *  1. Votes. Every clustered VPA that had a number votes for its new
 *     component. Each old number goes to the component holding most of its
 *     old members (ties: the part whose smallest old-member key sorts first).
 *     So a persisting cluster keeps its number, and on a split the largest
 *     part keeps it, even when that part merged with other clusters.
 *  2. Merges. A component that received several numbers keeps the smallest
 *     (numbers are handed out increasingly, so that is the oldest); the rest
 *     are retired.
 *  3. Fresh numbers. Components that received none (new clusters and the
 *     smaller parts of splits) get nextNumber, nextNumber + 1, ... in order of
 *     their smallest member key, so the result does not depend on VpaId order.
 *
 * Numbers are never reused: nextNumber only grows, and a retired or vanished
 * number stays below it.
 *
 * Keys are compared as UTF-8 bytes (code point order); VPA keys are
 * lower-cased ASCII, where that is plain string order. Keys are used as given:
 * callers pass the canonical lower-cased form.
 */

/**
 * Cluster numbers for `components` (see the algorithm at the top of this
 * file), and the state to persist for the next rebuild.
 *
 * `keyOf` must give each clustered VPA its own key (a RangeError otherwise,
 * since a shared key would make the state ambiguous). It is called once per
 * clustered VPA, in VpaId order.
 */
export function assignClusterNumbers(
  components: Components,
  keyOf: (vpaId: number) => string,
  previous: ClusterIdState,
): { numbers: Uint32Array; state: ClusterIdState } {
  const { count, of, sizes } = components;
  if (!(of instanceof Int32Array)) throw new TypeError('components.of must be an Int32Array');
  if (!(sizes instanceof Uint32Array)) throw new TypeError('components.sizes must be a Uint32Array');
  if (!Number.isInteger(count) || count < 0 || count !== sizes.length) {
    throw new RangeError(`components.count must equal components.sizes.length (${sizes.length}), got ${String(count)}`);
  }
  if (typeof keyOf !== 'function') throw new TypeError('keyOf must be a function');
  const previousNext = previous.nextNumber;
  if (!Number.isInteger(previousNext) || previousNext < 1 || previousNext > MAX_NUMBER + 1) {
    throw new RangeError(`previous.nextNumber must be a positive integer, got ${String(previousNext)}`);
  }

  // Each pass is its own function: one function holding all these loops gets
  // optimised on the stack loop by loop and deoptimised at each new loop,
  // which cost more than the work itself.
  const packedPrevious = previous instanceof PackedClusterIdState ? previous : null;
  const collected = collectKeys(of, count, sizes, keyOf, packedPrevious === null ? previous : null);
  const entries = sortEntries(collected);
  if (packedPrevious !== null) mergeOldNumbers(entries, packedPrevious);
  else countOld(entries);
  const componentNumber = resolveOldNumbers(entries, count);
  const nextNumber = assignFreshNumbers(entries, componentNumber, Math.max(previousNext, entries.maxOld + 1));

  // The per-entry component array becomes the per-entry number array in place.
  const { entryComponent, clustered } = entries;
  const entryNumber = new Uint32Array(entryComponent.buffer, entryComponent.byteOffset, clustered);
  for (let e = 0; e < clustered; e++) entryNumber[e] = componentNumber[entryComponent[e]!]!;
  return {
    numbers: componentNumber,
    state: new PackedClusterIdState(nextNumber, entries.blob, entries.keyOffsets, entryNumber, entries.hashes),
  };
}


/**
 * Pass 1, in VpaId order: encode and hash each clustered VPA's key, and ask a
 * foreign previous state for its number (a packed one is merged later).
 */
function collectKeys(
  of: Int32Array,
  count: number,
  sizes: Uint32Array,
  keyOf: (vpaId: number) => string,
  foreignPrevious: ClusterIdState | null,
): Collected {
  const clustered = countClustered(sizes, of.length);
  const keyOffsets = new Uint32Array(clustered + 1);
  const hashes = new Uint32Array(clustered);
  const entryComponent = new Int32Array(clustered);
  const oldNumber = foreignPrevious === null ? null : new Uint32Array(clustered);
  let blob: Uint8Array = new Uint8Array(Math.max(64, clustered * 24));
  let position = 0;
  let entry = 0;

  for (let v = 0; v < of.length; v++) {
    const c = of[v]!;
    if (c < 0) {
      if (c !== -1) throw new RangeError(`components.of[${v}] = ${c} is neither -1 nor a component index`);
      continue;
    }
    if (c >= count) throw new RangeError(`components.of[${v}] = ${c} is not below components.count (${count})`);
    if (entry === clustered) throw new RangeError(`components.of has more clustered VPAs than components.sizes adds up to (${clustered})`);

    const key = keyOf(v);
    if (typeof key !== 'string') throw new TypeError(`keyOf(${v}) did not return a string`);
    if (blob.length - position < key.length * 3) blob = grow(blob, position + key.length * 3);
    const start = position;
    // Copy and hash in one walk over an ASCII key; anything else goes the long way.
    let h = FNV_OFFSET;
    let ascii = true;
    const keyLength = key.length;
    for (let i = 0; i < keyLength; i++) {
      const code = key.charCodeAt(i);
      if (code >= 0x80) {
        ascii = false;
        break;
      }
      blob[position++] = code;
      h = Math.imul(h ^ code, FNV_PRIME);
    }
    if (!ascii) position = encodeInto(key, blob, start);
    hashes[entry] = ascii ? fmix32(h) : hashBytes(blob, start, position);
    keyOffsets[entry + 1] = position;
    entryComponent[entry] = c;
    if (oldNumber !== null) oldNumber[entry] = checkedNumber(foreignPrevious!.numberOf(key), key);
    entry++;
  }
  // Only the total matters here (per-component sizes are not used), and it
  // bounds every array above.
  if (entry !== clustered) throw new RangeError(`components.of has ${entry} clustered VPAs, components.sizes adds up to ${clustered}`);
  return { clustered, blob, length: position, keyOffsets, hashes, entryComponent, oldNumber };
}

function checkedNumber(old: number, key: string): number {
  if (old !== 0 && (!Number.isInteger(old) || old < 0 || old > MAX_NUMBER)) {
    throw new RangeError(`previous.numberOf("${key}") returned ${String(old)}, not a cluster number`);
  }
  return old;
}

function countClustered(sizes: Uint32Array, vpaCount: number): number {
  let clustered = 0;
  for (let c = 0; c < sizes.length; c++) {
    if (sizes[c]! < 1) throw new RangeError(`components.sizes[${c}] must be at least 1`);
    clustered += sizes[c]!;
  }
  if (clustered > vpaCount) {
    throw new RangeError(`components.sizes add up to ${clustered}, more than components.of.length (${vpaCount})`);
  }
  return clustered;
}

/** Previous numbers by a merge of the two (hash, key bytes)-ordered lists. */
function mergeOldNumbers(entries: Entries, previous: PackedClusterIdState): void {
  const { clustered, hashes, blob, keyOffsets, oldNumber } = entries;
  const { hashes: oldHashes, keyBytes: oldBlob, keyOffsets: oldOffsets, numbers: oldNumbers } = previous;
  const oldCount = oldHashes.length;
  let i = 0;
  let j = 0;
  while (i < clustered && j < oldCount) {
    const h = hashes[i]!;
    const oldH = oldHashes[j]!;
    if (h < oldH) i++;
    else if (h > oldH) j++;
    else {
      const cmp = compareBytes(blob, keyOffsets[i]!, keyOffsets[i + 1]!, oldBlob, oldOffsets[j]!, oldOffsets[j + 1]!);
      if (cmp < 0) i++;
      else if (cmp > 0) j++;
      else oldNumber[i++] = oldNumbers[j++]!;
    }
  }
  countOld(entries);
}

function countOld(entries: Entries): void {
  const { clustered, oldNumber } = entries;
  let maxOld = 0;
  let withOld = 0;
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) {
      withOld++;
      if (old > maxOld) maxOld = old;
    }
  }
  entries.maxOld = maxOld;
  entries.withOld = withOld;
}

/**
 * Pass 2: bucket the entries that had a number by that number (counting
 * sort), hand each old number to the component with most of its members, and
 * let each component keep the smallest it receives. Answers the number per
 * component, 0 where none was received.
 */
function resolveOldNumbers(entries: Entries, count: number): Uint32Array {
  const { clustered, oldNumber, entryComponent, maxOld, withOld } = entries;
  const bucketStart = new Uint32Array(maxOld + 2);
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) bucketStart[old + 1]!++;
  }
  for (let o = 1; o < bucketStart.length; o++) bucketStart[o]! += bucketStart[o - 1]!;
  const bucketed = new Uint32Array(withOld);
  const fill = bucketStart.slice(0, maxOld + 1);
  for (let e = 0; e < clustered; e++) {
    const old = oldNumber[e]!;
    if (old !== 0) bucketed[fill[old]!++] = e;
  }

  const componentNumber = new Uint32Array(count);
  const tally = new Uint32Array(count);
  for (let o = 1; o <= maxOld; o++) {
    const from = bucketStart[o]!;
    const to = bucketStart[o + 1]!;
    if (from === to) continue;
    let best = -1;
    let bestCount = 0;
    let tie = false;
    for (let k = from; k < to; k++) {
      const c = entryComponent[bucketed[k]!]!;
      const n = ++tally[c]!;
      if (n > bestCount) {
        best = c;
        bestCount = n;
        tie = false;
      } else if (n === bestCount && c !== best) {
        tie = true;
      }
    }
    if (tie) best = breakTie(bucketed, from, to, entryComponent, tally, bestCount, entries.blob, entries.keyOffsets);
    for (let k = from; k < to; k++) tally[entryComponent[bucketed[k]!]!] = 0;
    // Numbers arrive in ascending order, so the first one a component receives is its smallest.
    if (componentNumber[best] === 0) componentNumber[best] = o;
  }
  return componentNumber;
}

/**
 * Pass 3: fresh numbers from `nextNumber` on, in order of each unnumbered
 * component's smallest key; answers the new nextNumber. Only unnumbered
 * components need their smallest key (few, on a rebuild). Keys are compared
 * by their first eight bytes (two big-endian words, zero-padded, so a smaller
 * prefix means a smaller key) before touching the blob.
 */
function assignFreshNumbers(entries: Entries, componentNumber: Uint32Array, nextNumber: number): number {
  const { clustered, entryComponent, blob, keyOffsets } = entries;
  const count = componentNumber.length;
  let freshCount = 0;
  for (let c = 0; c < count; c++) if (componentNumber[c] === 0) freshCount++;
  if (freshCount === 0) return nextNumber;
  if (nextNumber + freshCount > MAX_NUMBER + 1) throw new RangeError('cluster numbers exhausted');

  const minEntry = new Int32Array(count).fill(-1);
  const minHigh = new Uint32Array(count);
  const minLow = new Uint32Array(count);
  for (let e = 0; e < clustered; e++) {
    const c = entryComponent[e]!;
    if (componentNumber[c] !== 0) continue;
    const start = keyOffsets[e]!;
    const end = keyOffsets[e + 1]!;
    const high = keyWord(blob, start, end);
    const current = minEntry[c]!;
    if (current >= 0 && high > minHigh[c]!) continue;
    const low = keyWord(blob, start + 4, end);
    if (
      current < 0 ||
      high < minHigh[c]! ||
      low < minLow[c]! ||
      (low === minLow[c] && compareEntries(blob, keyOffsets, e, current) < 0)
    ) {
      minEntry[c] = e;
      minHigh[c] = high;
      minLow[c] = low;
    }
  }

  // Sort the unnumbered components by their smallest key, with the prefixes
  // gathered side by side so most comparisons stay in cache.
  const freshComponent = new Uint32Array(freshCount);
  const freshHigh = new Uint32Array(freshCount);
  const freshLow = new Uint32Array(freshCount);
  const freshMin = new Uint32Array(freshCount);
  for (let c = 0, k = 0; c < count; c++) {
    if (componentNumber[c] !== 0) continue;
    if (minEntry[c]! < 0) throw new RangeError(`component ${c} has no members in components.of`);
    freshComponent[k] = c;
    freshHigh[k] = minHigh[c]!;
    freshLow[k] = minLow[c]!;
    freshMin[k] = minEntry[c]!;
    k++;
  }
  const order = new Uint32Array(freshCount);
  for (let k = 0; k < freshCount; k++) order[k] = k;
  order.sort(
    (a, b) =>
      freshHigh[a]! - freshHigh[b]! ||
      freshLow[a]! - freshLow[b]! ||
      compareEntries(blob, keyOffsets, freshMin[a]!, freshMin[b]!),
  );
  for (let k = 0; k < freshCount; k++) componentNumber[freshComponent[order[k]!]!] = nextNumber++;
  return nextNumber;
}

/** Among components tied at `bestCount` votes, the one whose smallest voting key sorts first. */
function breakTie(
  bucketed: Uint32Array,
  from: number,
  to: number,
  entryComponent: Int32Array,
  tally: Uint32Array,
  bestCount: number,
  blob: Uint8Array,
  keyOffsets: Uint32Array,
): number {
  let best = -1;
  let bestEntry = -1;
  for (let k = from; k < to; k++) {
    const e = bucketed[k]!;
    const c = entryComponent[e]!;
    if (tally[c] !== bestCount) continue;
    if (bestEntry < 0 || compareEntries(blob, keyOffsets, e, bestEntry) < 0) {
      best = c;
      bestEntry = e;
    }
  }
  return best;
}
