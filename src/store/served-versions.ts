import type pg from 'pg';
import { HistoryError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { dataVersionRecord, type DataVersionRecord, type ServedAt, type ServedState, type ServedVersions } from '../history/served-versions.js';
import { storeError, storeWholeNumber, type StoreLocation } from './postgres.js';
import { firstRecordedAt, recordedStateAt } from './answer-history-store.js';

/** States held for a store that cannot be written to, at most: past this the oldest are dropped (and logged). */
const MAX_PENDING = 10_000;
/** How often a follower drops the rows of states that ended before the retention. */
const PRUNE_EVERY_MS = 24 * 60 * 60 * 1000;
/** How soon states that could not be written are tried again. */
const RETRY_MS = 5_000;

/**
 * The fleet's record of the data versions served (migration 0010), written
 * by every follower before it serves a state. A state first served by
 * several followers keeps the earliest time; the state after it, in the
 * order of snapshot ids and positions, ends it. While the store cannot be
 * written the follower serves on (it holds what it merged), and the states
 * wait to be written with the next. With a retention (`keepMs`), each
 * follower drops the rows of states that ended before it once a day (the
 * same rows whoever does it).
 */
export class StoreServedVersions implements ServedVersions {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;
  readonly #logger: Logger;
  #pending: { readonly state: ServedState; readonly at: number }[] = [];
  #failing = false;
  /** Writes, one at a time, in order. */
  #writing: Promise<void> = Promise.resolve();
  #pruning: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  #closed = false;
  /** Followers name states by the log's positions and record their own times; none orders its times after another's. */
  readonly lastAt = 0;

  constructor(pool: pg.Pool, location: StoreLocation, logger: Logger = silentLogger, keepMs?: number) {
    this.#pool = pool;
    this.#location = location;
    this.#logger = logger;
    if (keepMs !== undefined) {
      const prune = () =>
        void this.prune(Date.now() - keepMs).catch((error: Error) => this.#logger.warn({ err: error.message }, 'old rows of served data versions not dropped; the next look tries again'));
      this.#pruning = setInterval(prune, PRUNE_EVERY_MS);
      this.#pruning.unref();
      prune();
    }
  }

  /** The state the fleet's history of answers recorded as served at `at` (store/answer-history-store.ts). */
  stateAt(at: number): Promise<ServedAt | null> {
    return recordedStateAt(this.#pool, this.#location, at);
  }

  firstAt(): Promise<number | null> {
    return firstRecordedAt(this.#pool, this.#location);
  }

  /**
   * Drop the rows of states that ended before `cutoff` (epoch ms): every row
   * before the last one that began before it, which was still served then.
   * Resolves to the rows dropped.
   */
  async prune(cutoff: number): Promise<number> {
    try {
      const { rowCount } = await this.#pool.query(
        `DELETE FROM served_versions WHERE (snapshot, position) <
           (SELECT snapshot, position FROM served_versions WHERE served_at_ms < $1 ORDER BY snapshot DESC, position DESC LIMIT 1)`,
        [Math.round(cutoff)],
      );
      return rowCount ?? 0;
    } catch (error) {
      throw storeError(this.#location, error);
    }
  }

  /** While states served wait to be written, versions are not resolved: an answer now could deny one served, or end another too late. */
  get unavailable(): string | null {
    return this.#failing ? `the store cannot take the record of data versions served; ${this.#pending.length} wait to be recorded, and versions are resolved again once they are` : null;
  }

  readonly highestPosition = 0;

  /** A fleet version is the log's position: a state served again is the same state, under the same version. */
  served(): boolean {
    return false;
  }

  record(state: ServedState, at: number): Promise<void> {
    this.#pending.push({ state, at });
    if (this.#pending.length > MAX_PENDING) {
      const dropped = this.#pending.splice(0, this.#pending.length - MAX_PENDING);
      this.#logger.error({ dropped: dropped.length }, 'the store has been unreachable too long: the oldest served data versions waiting to be recorded are dropped');
    }
    return this.#flush();
  }

  #flush(): Promise<void> {
    const run = this.#writing.then(async () => {
      if (this.#pending.length === 0) return;
      // Taken out whole: a state recorded while this one is written waits for the next.
      const batch = this.#pending.splice(0);
      try {
        await this.#pool.query(
          `INSERT INTO served_versions (snapshot, position, served_at_ms)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])
           ON CONFLICT (snapshot, position) DO UPDATE SET served_at_ms = LEAST(served_versions.served_at_ms, EXCLUDED.served_at_ms)`,
          [batch.map((p) => p.state.snapshot), batch.map((p) => p.state.position), batch.map((p) => Math.round(p.at))],
        );
      } catch (error) {
        if (!this.#failing) this.#logger.warn({ err: (error as Error).message, waiting: batch.length }, 'served data versions not recorded in the store yet; serving goes on, and they are recorded with the next');
        this.#failing = true;
        this.#pending.unshift(...batch);
        this.#retryLater();
        return;
      }
      if (this.#failing) this.#logger.info({ recorded: batch.length }, 'served data versions recorded in the store again');
      this.#failing = false;
    });
    this.#writing = run;
    return run;
  }

  /** While states wait, the store is tried again every RETRY_MS, whether or not the follower serves a new one. */
  #retryLater(): void {
    if (this.#retry !== null || this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.#flush();
    }, RETRY_MS);
    this.#retry.unref();
  }

  async find(state: ServedState): Promise<DataVersionRecord | null> {
    await this.#flush();
    const why = this.unavailable;
    if (why !== null) throw new HistoryError(why);
    let rows: { served_at_ms: string; next_at_ms: string | null }[];
    try {
      ({ rows } = await this.#pool.query<{ served_at_ms: string; next_at_ms: string | null }>(
        `SELECT served_at_ms,
                (SELECT n.served_at_ms FROM served_versions n WHERE (n.snapshot, n.position) > ($1, $2) ORDER BY n.snapshot, n.position LIMIT 1) AS next_at_ms
           FROM served_versions WHERE snapshot = $1 AND position = $2`,
        [state.snapshot, state.position],
      ));
    } catch (error) {
      throw storeError(this.#location, error);
    }
    const row = rows[0];
    if (row === undefined) return null;
    const from = this.#time(row.served_at_ms);
    return dataVersionRecord(state, from, row.next_at_ms === null ? null : Math.max(from, this.#time(row.next_at_ms)));
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pruning !== null) clearInterval(this.#pruning);
    if (this.#retry !== null) clearTimeout(this.#retry);
    await this.#flush();
    if (this.#pending.length > 0) this.#logger.error({ dropped: this.#pending.length }, 'served data versions not recorded in the store before the stop: those versions will not be resolved');
  }

  #time(text: string): number {
    return storeWholeNumber(this.#location, text, 'served_versions.served_at_ms');
  }
}
