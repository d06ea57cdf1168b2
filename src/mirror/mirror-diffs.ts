import type { MirrorChanges } from './mirror-cut.js';
import { MIRROR_KIND_DIFF, comparePrefixes, encodeMirrorFile } from './mirror-format.js';

/** A prefix's entry in one older version and now (-1: none). */
interface Change {
  readonly hi: number;
  readonly lo: number;
  readonly before: number;
  after: number;
}

/**
 * What changed since each of the last `keep` mirror versions, so that a
 * client holding any of them fetches a diff to the newest instead of the
 * full file. Fed the changes from one version to the next (mirror-cut.ts);
 * a prefix changed back to what an older version held drops out of that
 * version's diff. A version whose changes grow past `shareLimit` of the
 * entries is let go: its full file costs about as much.
 */
export class MirrorDiffs {
  readonly #keep: number;
  readonly #shareLimit: number;
  /** Per older version kept, its changes to the newest, by prefix. */
  readonly #since = new Map<number, Map<string, Change>>();

  constructor(keep: number, shareLimit: number) {
    this.#keep = keep;
    this.#shareLimit = shareLimit;
  }

  /** Version `version` was made from `previous` (0 for none) with `changes`, and holds `count` entries. */
  advance(previous: number, version: number, changes: MirrorChanges, count: number): void {
    if (previous > 0) this.#since.set(previous, new Map());
    for (const [from, since] of this.#since) {
      for (let i = 0; i < changes.count; i++) {
        const key = `${changes.hi[i]!}:${changes.lo[i]!}`;
        const held = since.get(key);
        if (held === undefined) since.set(key, { hi: changes.hi[i]!, lo: changes.lo[i]!, before: changes.before[i]!, after: changes.after[i]! });
        else if (held.before === changes.after[i]!) since.delete(key);
        else held.after = changes.after[i]!;
      }
      if (from < version - this.#keep || since.size > Math.max(1, count) * this.#shareLimit) this.#since.delete(from);
    }
  }

  /** The versions a diff is kept from, newest first. */
  versions(): number[] {
    return [...this.#since.keys()].sort((a, b) => b - a);
  }

  /**
   * The diffs to offer with the newest version: newest first, while their
   * files hold at most `budgetBytes` together (older diffs hold more).
   */
  offered(budgetBytes: number): { readonly from: number; readonly bytes: Uint8Array }[] {
    const offered: { from: number; bytes: Uint8Array }[] = [];
    let left = budgetBytes;
    for (const from of this.versions()) {
      const bytes = this.file(from);
      if (bytes.length > left) break;
      left -= bytes.length;
      offered.push({ from, bytes });
    }
    return offered;
  }

  /** The diff file from version `from` to the newest: its entries put in, its prefixes taken out, each sorted. */
  file(from: number): Uint8Array {
    const since = this.#since.get(from);
    if (since === undefined) throw new RangeError(`no diff is kept from mirror version ${from}`);
    const changes = [...since.values()].sort((a, b) => comparePrefixes(a.hi, a.lo, b.hi, b.lo));
    const put = changes.filter((c) => c.after >= 0);
    const removed = changes.filter((c) => c.after < 0);
    return encodeMirrorFile(
      MIRROR_KIND_DIFF,
      { count: put.length, hi: Uint32Array.from(put, (c) => c.hi), lo: Uint32Array.from(put, (c) => c.lo), meta: Uint8Array.from(put, (c) => c.after) },
      { count: removed.length, hi: Uint32Array.from(removed, (c) => c.hi), lo: Uint32Array.from(removed, (c) => c.lo) },
    );
  }
}
