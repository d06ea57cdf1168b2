import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { AdminStateError } from '../common/errors.js';

/**
 * How much each key is used: requests and 429s per hour, and when it was
 * last used. Serving threads count in a UsageCounter and hand the counts to
 * the main thread every few seconds, which adds them to a UsageLedger (the
 * data directory's, or the fleet store's, where every replica adds to the
 * same rows).
 */

/** One key's counts since the last hand-over: id, requests, of which 429s. */
export type UsageEntry = readonly [keyId: string, requests: number, limited: number];

export interface KeyUsage {
  readonly requests: number;
  readonly limited: number;
  /** Epoch ms of the last hand-over that counted a request, or null. */
  readonly lastUsedAt: number | null;
}

export interface UsageLedger {
  /** Add counts handed over at `at` (epoch ms) to the hour they fall in. */
  add(entries: readonly UsageEntry[], at: number): Promise<void>;
  /** Each key's counts over the hours from the one holding `from` on, and its last use ever. */
  since(from: number): Promise<Map<string, KeyUsage>>;
  /** Keep what is counted (a ledger that writes later writes now). */
  flush(): Promise<void>;
}

export const HOUR_MS = 3_600_000;
/** Hours a ledger keeps: a full day behind the current hour. */
export const KEPT_HOURS = 25;

/** A serving thread's counts: a map lookup and two additions per keyed request. */
export class UsageCounter {
  #counts = new Map<string, [number, number]>();

  count(keyId: string, limited: boolean): void {
    let c = this.#counts.get(keyId);
    if (c === undefined) {
      c = [0, 0];
      this.#counts.set(keyId, c);
    }
    c[0]++;
    if (limited) c[1]++;
  }

  /** The counts since the last drain, and start afresh. */
  drain(): UsageEntry[] {
    if (this.#counts.size === 0) return [];
    const out: UsageEntry[] = [];
    for (const [id, [requests, limited]] of this.#counts) out.push([id, requests, limited]);
    this.#counts = new Map();
    return out;
  }
}

/** Check a list of usage entries that crossed a boundary (a thread message, a file); throws what `fail` makes. */
export function readUsageEntries(value: unknown, fail: (why: string) => Error): UsageEntry[] {
  if (!Array.isArray(value)) throw fail('usage entries are not a list');
  for (const e of value) {
    if (!Array.isArray(e) || e.length !== 3 || typeof e[0] !== 'string' || !isCount(e[1]) || !isCount(e[2]) || e[2] > e[1]) {
      throw fail('a usage entry is not [key id, requests, 429s]');
    }
  }
  return value as UsageEntry[];
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

interface UsageFile {
  readonly version: 1;
  /** [hour start epoch ms, entries]. */
  readonly hours: [number, UsageEntry[]][];
  /** [key id, epoch ms]. */
  readonly lastUsed: [string, number][];
}

export function usageFilePath(dir: DataDir): string {
  return join(dir.state, 'key-usage.json');
}

/**
 * The usage of a data directory's keys: kept in memory and written to
 * `state/key-usage.json` at most every `writeEveryMs` (and on flush), so a
 * restart loses at most that much counting.
 */
export class FileUsageLedger implements UsageLedger {
  readonly #path: string;
  readonly #writeEveryMs: number;
  readonly #hours = new Map<number, Map<string, [number, number]>>();
  readonly #lastUsed = new Map<string, number>();
  #dirty = false;
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string, writeEveryMs: number) {
    this.#path = path;
    this.#writeEveryMs = writeEveryMs;
  }

  static async open(path: string, writeEveryMs = 10_000): Promise<FileUsageLedger> {
    const ledger = new FileUsageLedger(path, writeEveryMs);
    let text: string | null = null;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new AdminStateError(`cannot read key usage ${path}: ${(error as Error).message}`, { cause: error });
    }
    if (text !== null) ledger.#restore(text);
    return ledger;
  }

  #restore(text: string): void {
    const fail = (why: string) => new AdminStateError(`key usage ${this.#path}: ${why}`);
    let file: Partial<UsageFile>;
    try {
      file = JSON.parse(text) as Partial<UsageFile>;
    } catch {
      throw fail('not JSON');
    }
    if (typeof file !== 'object' || file === null || file.version !== 1 || !Array.isArray(file.hours) || !Array.isArray(file.lastUsed)) {
      throw fail('not a version 1 usage file');
    }
    for (const h of file.hours) {
      if (!Array.isArray(h) || !isCount(h[0]) || h[0] % HOUR_MS !== 0) throw fail('an hour is not [start, entries]');
      this.#addTo(h[0], readUsageEntries(h[1], fail));
    }
    for (const l of file.lastUsed) {
      if (!Array.isArray(l) || typeof l[0] !== 'string' || !isCount(l[1])) throw fail('a last use is not [key id, time]');
      this.#lastUsed.set(l[0], l[1]);
    }
  }

  async add(entries: readonly UsageEntry[], at: number): Promise<void> {
    if (entries.length === 0) return;
    const hour = at - (at % HOUR_MS);
    this.#addTo(hour, entries);
    for (const [id, requests] of entries) if (requests > 0) this.#lastUsed.set(id, Math.max(at, this.#lastUsed.get(id) ?? 0));
    for (const h of this.#hours.keys()) if (h <= hour - KEPT_HOURS * HOUR_MS) this.#hours.delete(h);
    this.#dirty = true;
    if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        void this.flush().catch(() => {});
      }, this.#writeEveryMs).unref();
    }
  }

  #addTo(hour: number, entries: readonly UsageEntry[]): void {
    let counts = this.#hours.get(hour);
    if (counts === undefined) {
      counts = new Map();
      this.#hours.set(hour, counts);
    }
    for (const [id, requests, limited] of entries) {
      const c = counts.get(id);
      if (c === undefined) counts.set(id, [requests, limited]);
      else {
        c[0] += requests;
        c[1] += limited;
      }
    }
  }

  async since(from: number): Promise<Map<string, KeyUsage>> {
    const firstHour = from - (from % HOUR_MS);
    const out = new Map<string, { requests: number; limited: number; lastUsedAt: number | null }>();
    for (const [id, at] of this.#lastUsed) out.set(id, { requests: 0, limited: 0, lastUsedAt: at });
    for (const [hour, counts] of this.#hours) {
      if (hour < firstHour) continue;
      for (const [id, [requests, limited]] of counts) {
        const u = out.get(id) ?? { requests: 0, limited: 0, lastUsedAt: null };
        u.requests += requests;
        u.limited += limited;
        out.set(id, u);
      }
    }
    return out;
  }

  flush(): Promise<void> {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const write = this.#writing.then(async () => {
      if (!this.#dirty) return;
      this.#dirty = false;
      const file: UsageFile = {
        version: 1,
        hours: [...this.#hours].map(([hour, counts]) => [hour, [...counts].map(([id, [r, l]]) => [id, r, l] as const)]),
        lastUsed: [...this.#lastUsed],
      };
      try {
        await writeFileAtomic(this.#path, Buffer.from(JSON.stringify(file)), 0o600);
      } catch (error) {
        this.#dirty = true;
        throw new AdminStateError(`cannot write key usage ${this.#path}: ${(error as Error).message}`, { cause: error });
      }
    });
    // The next write waits for this one, whether or not it failed.
    this.#writing = write.catch(() => {});
    return write;
  }
}
