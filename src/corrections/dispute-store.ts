import type { Dispute, Report } from './dispute-records.js';

/** Which records a listing holds: one key's (null: every key's), of one status (null: any). */
export interface RecordFilter {
  readonly owner: string | null;
  readonly status: string | null;
}

/** Newest first; `next` is the cursor of the page after (the last id), null on the last. */
export interface RecordPage<R> {
  readonly items: R[];
  readonly next: string | null;
}

/**
 * Where disputes and reports live, each owned by the key that made it: the
 * data directory's journal (FileDisputeStore) or the fleet store's tables
 * (PostgresDisputeStore). What is acknowledged is stored: every method that
 * changes something resolves once it is durable.
 */
export interface DisputeStore {
  /**
   * Store a new open dispute, unless its owner has an open dispute of its
   * VPA already: then that one is returned, and nothing is stored. At most
   * one dispute of a key and VPA is open at a time, whichever replica is
   * asked.
   */
  openDispute(dispute: Dispute): Promise<Dispute>;
  dispute(id: string): Promise<Dispute | null>;
  disputes(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Dispute>>;
  /**
   * Change a dispute: `change` runs with the dispute held, so no other
   * change of it runs meanwhile (on any replica), and what it returns is
   * stored. Null, with nothing run, when there is no such dispute; what
   * `change` throws is thrown, and nothing is stored.
   */
  changeDispute(id: string, change: (current: Dispute) => Promise<Dispute>): Promise<Dispute | null>;
  /**
   * Store a new report. With an `idempotencyKey` (the caller's
   * Idempotency-Key), unless its owner stored a report with that key
   * already: then that one is returned, and nothing is stored. A key names
   * one report of its owner for ever, whichever replica is asked.
   */
  addReport(report: Report, idempotencyKey?: string | null): Promise<Report>;
  /** The report its owner stored with `idempotencyKey`, or null. */
  reportByIdempotencyKey(owner: string, idempotencyKey: string): Promise<Report | null>;
  report(id: string): Promise<Report | null>;
  reports(filter: RecordFilter, cursor: string | null, limit: number): Promise<RecordPage<Report>>;
  /** As changeDispute, for a report. */
  changeReport(id: string, change: (current: Report) => Promise<Report>): Promise<Report | null>;
  close(): Promise<void>;
}
