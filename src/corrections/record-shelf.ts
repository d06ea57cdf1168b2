import { lowerBound } from '../common/lower-bound.js';
import type { RecordFilter, RecordPage } from './dispute-store.js';
import type { OwnedRecord } from './dispute-records.js';

/**
 * Records held in memory by id, with their ids in order (ids sort by
 * time), so a page newest first starts where its cursor is instead of
 * sorting everything on every page. Records are replaced, never removed.
 */
export class RecordShelf<R extends OwnedRecord> {
  readonly #byId = new Map<string, R>();
  /** Ascending. */
  readonly #ids: string[] = [];

  get(id: string): R | null {
    return this.#byId.get(id) ?? null;
  }

  /** Add a record, or replace the one with its id. */
  put(record: R): void {
    if (!this.#byId.has(record.id)) {
      const ids = this.#ids;
      // New ids are mostly the newest, so this is mostly a push.
      if (ids.length === 0 || record.id > ids[ids.length - 1]!) ids.push(record.id);
      else ids.splice(lowerBound(ids.length, (i) => ids[i]! < record.id), 0, record.id);
    }
    this.#byId.set(record.id, record);
  }

  /** Up to `limit` records matching `filter` with ids before `cursor` (exclusive; null: from the newest), newest first. */
  page(filter: RecordFilter, cursor: string | null, limit: number): RecordPage<R> {
    const ids = this.#ids;
    const matches = (record: R) => (filter.owner === null || record.owner === filter.owner) && (filter.status === null || record.status === filter.status);
    let i = cursor === null ? ids.length : lowerBound(ids.length, (at) => ids[at]! < cursor);
    const items: R[] = [];
    while (i > 0 && items.length < limit) {
      const record = this.#byId.get(ids[--i]!)!;
      if (matches(record)) items.push(record);
    }
    while (i > 0) if (matches(this.#byId.get(ids[--i]!)!)) return { items, next: items.at(-1)!.id };
    return { items, next: null };
  }

  values(): IterableIterator<R> {
    return this.#byId.values();
  }
}
