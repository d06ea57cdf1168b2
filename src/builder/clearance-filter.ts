import { countsUnderClearance } from '../evidence/corrections.js';
import { ByteInterner } from './byte-interner.js';

/**
 * Clearances as build and merge tasks apply them to records, which hold
 * the VPA and url as bytes: a record of a cleared VPA counts only when
 * evidence/corrections.ts countsUnderClearance says so.
 */

/** An active clearance (evidence/corrections.ts) as a task takes it across threads. */
export interface ClearanceEntry {
  readonly upi: string;
  readonly createdAt: number;
  readonly urls: readonly string[];
}

/** Clearances found by a record's VPA bytes. */
export interface ClearanceTable {
  /** Whether the record whose VPA is raw[upiStart, urlStart) and url raw[urlStart, urlEnd) counts. */
  counts(raw: Uint8Array, upiStart: number, urlStart: number, urlEnd: number, capturedAt: number): boolean;
}

/** The clearances of a partition, found by the VPA's bytes; null when there are none. */
export function clearanceTable(entries: readonly ClearanceEntry[] | undefined): ClearanceTable | null {
  if (entries === undefined || entries.length === 0) return null;
  const keys = new ByteInterner(entries.length);
  const byId: { createdAt: number; urls: ReadonlySet<string> }[] = [];
  for (const entry of entries) {
    const bytes = Buffer.from(entry.upi, 'latin1');
    byId[keys.intern(bytes, 0, bytes.length)] = { createdAt: entry.createdAt, urls: new Set(entry.urls) };
  }
  return {
    counts(raw, upiStart, urlStart, urlEnd, capturedAt) {
      const id = keys.find(raw, upiStart, urlStart);
      if (id < 0) return true;
      const clearance = byId[id]!;
      return countsUnderClearance(clearance, capturedAt, Buffer.from(raw.buffer, raw.byteOffset + urlStart, urlEnd - urlStart).toString('utf8'));
    },
  };
}
