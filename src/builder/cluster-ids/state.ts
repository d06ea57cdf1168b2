import { compareBytes, encodeInto, hashBytes } from './key-bytes.js';

/**
 * What a build remembers of cluster numbers for the next one (numbering.ts
 * says how it is used; state-file.ts how it is kept).
 */
export interface ClusterIdState {
  /** The next number to hand out; every number below it has been used. */
  readonly nextNumber: number;
  /** Cluster number by lower-cased VPA key, for every clustered VPA; 0 when none. */
  numberOf(key: string): number;
  /** Number of clustered VPA keys held. */
  readonly size: number;
}

export const MAX_NUMBER = 0xffffffff;

/** Room to encode the key being looked up; grown to the longest key asked for. */
let scratch = new Uint8Array(1024);

// The state can hold millions of keys, so it is kept packed rather than as a
// Map of strings: one UTF-8 blob of keys, their offsets and numbers, all in
// ascending order of (hash of the key, key bytes), with the hashes alongside.
// That order turns the rebuild's millions of lookups into one sequential
// merge of two sorted lists; random probes into a state of this size cost
// several cache and TLB misses each, which dominated the rebuild. A single
// lookup is a binary search over the hashes.
export class PackedClusterIdState implements ClusterIdState {
  readonly nextNumber: number;
  readonly keyBytes: Uint8Array;
  readonly keyOffsets: Uint32Array;
  readonly numbers: Uint32Array;
  readonly hashes: Uint32Array;

  /** The entries must already be in (hash, key bytes) order without duplicates. */
  constructor(nextNumber: number, keyBytes: Uint8Array, keyOffsets: Uint32Array, numbers: Uint32Array, hashes: Uint32Array) {
    this.nextNumber = nextNumber;
    this.keyBytes = keyBytes;
    this.keyOffsets = keyOffsets;
    this.numbers = numbers;
    this.hashes = hashes;
  }

  get size(): number {
    return this.numbers.length;
  }

  numberOf(key: string): number {
    if (typeof key !== 'string') return 0;
    if (scratch.length < key.length * 3) scratch = new Uint8Array(key.length * 3);
    const end = encodeInto(key, scratch, 0);
    const hash = hashBytes(scratch, 0, end);
    const { hashes, keyBytes, keyOffsets } = this;
    // Lower bound of `hash`, then the (almost always single) entry with that hash.
    let lo = 0;
    let hi = hashes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (hashes[mid]! < hash) lo = mid + 1;
      else hi = mid;
    }
    for (let e = lo; e < hashes.length && hashes[e] === hash; e++) {
      if (compareBytes(keyBytes, keyOffsets[e]!, keyOffsets[e + 1]!, scratch, 0, end) === 0) return this.numbers[e]!;
    }
    return 0;
  }
}

export function emptyClusterIdState(): ClusterIdState {
  return new PackedClusterIdState(1, new Uint8Array(0), new Uint32Array(1), new Uint32Array(0), new Uint32Array(0));
}
