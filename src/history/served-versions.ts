import { HistoryError } from '../common/errors.js';
import { formatIso } from '../common/time.js';
import { dataVersion } from '../engine/delta-data.js';

/**
 * The record of what was served and when: every data version (the
 * `X-Data-Version` of an answer, `<snapshot id>` or `<snapshot id>+<position>`)
 * with the instant it began to be served, written durably before any answer
 * carries it. A version read from a screening record months later is resolved
 * through it (`GET /v1/data-versions/{version}`, docs/api.md). The embedded
 * server keeps it in its data directory (version-journal.ts), the fleet in
 * its store (store/served-versions.ts).
 */
export interface ServedVersions {
  /**
   * Record that `state` is served from `at` (epoch ms), durably, before it is
   * served. Never rejects: a record that cannot be written is logged, and the
   * state is served all the same (screening comes first).
   */
  record(state: ServedState, at: number, dataAsOf?: number, answersRecorded?: boolean): Promise<void>;
  /** The state served at `at` (epoch ms): the last that began at or before it (the server may have stopped since); null before the first. */
  stateAt(at: number): Promise<ServedAt | null>;
  /** When the first state recorded began to be served, null with none. */
  firstAt(): Promise<number | null>;
  /** When the last record was written, epoch ms (0 or less: none): a state recorded after it is recorded later. */
  readonly lastAt: number;
  /** Whether `state` was recorded as served before: a server serves a state again under a new version rather than record one version twice. */
  served(state: ServedState): boolean;
  /** The record of a version, null for one never served; rejects (HistoryError) when the record cannot be read. */
  find(state: ServedState): Promise<DataVersionRecord | null>;
  /** The highest position recorded so far (0 where positions are not the server's own: the fleet's are the log's). */
  readonly highestPosition: number;
  /** Why versions cannot be resolved now, or null when they can. */
  readonly unavailable: string | null;
  /** The server stops serving: recorded where the record keeps it (the embedded one), and the record closed. */
  close(): Promise<void>;
}

/**
 * A state served at an instant: when it began, when the newest evidence it
 * held was ingested (its X-Data-As-Of; 0: not known), and whether its
 * answers were recorded in the history of answers.
 */
export interface ServedAt {
  readonly state: ServedState;
  readonly from: number;
  readonly dataAsOf: number;
  readonly answersRecorded: boolean;
}

/** A state served: a snapshot, and the position of the delta over it (0: none). */
export interface ServedState {
  readonly snapshot: string;
  readonly position: number;
}

/** A data version as GET /v1/data-versions/{version} answers it. */
export interface DataVersionRecord {
  readonly version: string;
  /** When it began to be served (RFC 3339). */
  readonly from: string;
  /** When the next state replaced it, or the server serving it stopped; null while it is served. */
  readonly until: string | null;
  readonly snapshot: string;
  /** The delta's position over the snapshot: its place in the data directory's sequence of changes, or the fleet's log position; 0 for the snapshot alone. */
  readonly position: number;
}

/** How long the record of versions served is kept by default, days (serve --history-days). */
export const DEFAULT_HISTORY_DAYS = 400;
/** Why versions are not resolved with --history-days 0. */
export const HISTORY_OFF = 'the record of data versions served is off on this server (--history-days 0)';
const DAY_MS = 24 * 60 * 60 * 1000;

/** The retention of --history-days N, ms. */
export function historyKeepMs(days: number): number {
  return days * DAY_MS;
}

/** A snapshot id as X-Data-Version carries it: 1 to 64 visible ASCII characters. */
const SNAPSHOT_ID = /^[\x21-\x7e]{1,64}$/;
const POSITION = /^[1-9][0-9]{0,15}$/;

/**
 * The state a data version names, or null for text that is not one: after
 * the last "+" comes a position (snapshot ids the service makes hold none).
 */
export function parseDataVersion(version: string): ServedState | null {
  const plus = version.lastIndexOf('+');
  if (plus < 0) return SNAPSHOT_ID.test(version) ? { snapshot: version, position: 0 } : null;
  const snapshot = version.slice(0, plus);
  const position = Number(version.slice(plus + 1));
  return SNAPSHOT_ID.test(snapshot) && POSITION.test(version.slice(plus + 1)) && Number.isSafeInteger(position) ? { snapshot, position } : null;
}

/** The answer for a state served from `from` until `until` (epoch ms; null while served). */
export function dataVersionRecord(state: ServedState, from: number, until: number | null): DataVersionRecord {
  return { version: dataVersion(state.snapshot, state.position), from: formatIso(from), until: until === null ? null : formatIso(until), snapshot: state.snapshot, position: state.position };
}

/** A record that cannot be kept or read, for `why` (a file refused at start): nothing is recorded, and no version is resolved. */
export function unavailableVersions(why: string): ServedVersions {
  return {
    unavailable: why,
    highestPosition: 0,
    lastAt: 0,
    record: () => Promise.resolve(),
    served: () => false,
    find: () => Promise.reject(new HistoryError(why)),
    stateAt: () => Promise.reject(new HistoryError(why)),
    firstAt: () => Promise.reject(new HistoryError(why)),
    close: () => Promise.resolve(),
  };
}
