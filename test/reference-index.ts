import { NOT_FOUND } from '../src/common/brand.js';
import type { KeyIndex } from '../src/engine/key-index.js';

// Keys and matchable queries are ASCII; beyond it toLowerCase folds 'K' (Kelvin) to 'k'.
// eslint-disable-next-line no-control-regex -- all of ASCII, its control characters included
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/**
 * The reference KeyIndex: a plain Map from lower-cased key to id. Simple
 * enough to be evidently right, so the conformance suite can hold VpaIndex
 * to it; not meant for production sizes (a Map costs far more per key).
 */
export class ReferenceIndex implements KeyIndex {
  readonly size: number;
  readonly #ids = new Map<string, number>();
  readonly #keys: readonly string[];

  /** Key i gets id i. Throws RangeError for a non-ASCII key or a duplicate (ignoring case). */
  constructor(keys: readonly string[]) {
    const lowered: string[] = [];
    for (const key of keys) {
      if (!ASCII_ONLY.test(key)) throw new RangeError(`key is not ASCII: ${JSON.stringify(key)}`);
      const lower = key.toLowerCase();
      if (this.#ids.has(lower)) throw new RangeError(`duplicate key: ${JSON.stringify(lower)}`);
      this.#ids.set(lower, lowered.length);
      lowered.push(lower);
    }
    this.#keys = lowered;
    this.size = lowered.length;
  }

  lookup(query: string): number {
    if (!ASCII_ONLY.test(query)) return NOT_FOUND;
    return this.#ids.get(query.toLowerCase()) ?? NOT_FOUND;
  }

  keyOf(id: number): string {
    const key = Number.isInteger(id) ? this.#keys[id] : undefined;
    if (key === undefined) throw new RangeError(`no key with id ${id} (size ${this.size})`);
    return key;
  }
}
