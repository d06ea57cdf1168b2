import { lowerBound } from '../common/lower-bound.js';

/**
 * A watchlist's event ids in id order (ids sort by time), for paging its
 * events newest first without sorting them all on every page: new ids wait
 * in a batch, merged in when a page is read; ids of events no longer kept
 * stay in the order until they outnumber the rest, and are skipped as they
 * are met.
 */
export class EventOrder {
  /** Ascending; may hold ids no longer kept. */
  #sorted: string[] = [];
  /** Added since the last read, in any order. */
  #added: string[] = [];
  #dropped = 0;

  add(id: string): void {
    this.#added.push(id);
  }

  /** An id no longer kept (its event trimmed). */
  drop(): void {
    this.#dropped++;
  }

  /**
   * Up to `limit` kept ids before `cursor` (exclusive; null: from the
   * newest), newest first, and whether any kept id comes after them.
   */
  page(cursor: string | null, limit: number, kept: (id: string) => boolean): { ids: string[]; more: boolean } {
    this.#settle(kept);
    const sorted = this.#sorted;
    let i = cursor === null ? sorted.length : lowerBound(sorted.length, (at) => sorted[at]! < cursor);
    const ids: string[] = [];
    while (i > 0 && ids.length < limit) {
      const id = sorted[--i]!;
      if (kept(id)) ids.push(id);
    }
    while (i > 0) if (kept(sorted[--i]!)) return { ids, more: true };
    return { ids, more: false };
  }

  #settle(kept: (id: string) => boolean): void {
    if (this.#added.length > 0) {
      const added = this.#added.sort();
      this.#added = [];
      const sorted = this.#sorted;
      // New ids are mostly newer than every one before: then they are appended.
      if (sorted.length === 0 || added[0]! > sorted[sorted.length - 1]!) for (const id of added) sorted.push(id);
      else this.#sorted = mergeSorted(sorted, added);
    }
    // Dropped ids outnumbering the kept ones: keep the kept alone.
    if (this.#dropped > this.#sorted.length / 2) {
      this.#sorted = this.#sorted.filter(kept);
      this.#dropped = 0;
    }
  }
}

function mergeSorted(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = new Array<string>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = a[i]! <= b[j]! ? a[i++]! : b[j++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}
