import type pg from 'pg';
import type { Logger } from '../common/logger.js';
import { ErrorCode, StoreError, UpiRiskError } from '../common/errors.js';
import { storeError, type StoreLocation } from '../store/postgres.js';
import { StoreNotifications } from '../store/store-notifications.js';
import { JournaledWatchStore, type JournalLine } from './journaled-watch-store.js';

/** How often a follower looks for journal lines it was not told of, ms. */
const POLL_MS = 1000;
/** Rewrite the journal once it holds this many times the rows of a fresh one (and at least MIN_COMPACT_ROWS). */
const COMPACT_FACTOR = 4;
const MIN_COMPACT_ROWS = 10_000;

export function watchChannel(location: StoreLocation): string {
  return `${location.schema}_watch`;
}

/**
 * Watchlists of the fleet: the journal is the store's `watch_journal`
 * table. Every follower replays it at start and follows it (NOTIFY, with a
 * poll behind), so each holds the same watchlists; a change is written as
 * a row, then applied once this follower has caught up to it, so the
 * answer to a change already shows it. Writers take turns on the journal's
 * head row, so a reader never skips a position.
 */
export class PostgresWatchStore extends JournaledWatchStore {
  readonly #pool: pg.Pool;
  readonly #location: StoreLocation;
  readonly #logger: Logger;
  #position = 0;
  /** Rows applied since the journal's last rewrite (or its start), and how many the rewrite wrote. */
  #rowsSinceImage = 0;
  #imageRows = 0;
  #reads: Promise<void> = Promise.resolve();
  #notifications: StoreNotifications | null = null;
  #timer: NodeJS.Timeout | null = null;
  readonly #listeners: (() => void)[] = [];

  private constructor(pool: pg.Pool, location: StoreLocation, logger: Logger) {
    super();
    this.#pool = pool;
    this.#location = location;
    this.#logger = logger;
  }

  static async open(pool: pg.Pool, location: StoreLocation, logger: Logger): Promise<PostgresWatchStore> {
    const store = new PostgresWatchStore(pool, location, logger);
    await store.catchUp();
    store.#notifications = new StoreNotifications(location, [watchChannel(location)], () => void store.catchUp().catch(() => {}), logger);
    const poll = () => {
      store.#timer = setTimeout(() => {
        store.catchUp().catch((error: Error) => logger.error({ err: error.message }, 'watchlist journal not followed; retrying'));
        poll();
      }, POLL_MS).unref();
    };
    poll();
    return store;
  }

  /** Called after lines written by another follower were applied (new events to deliver, say). */
  onApplied(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Apply every line after the last one applied: reads one at a time, each after those asked for before it. */
  catchUp(): Promise<void> {
    const read = this.#reads.then(() => this.#read());
    this.#reads = read.catch(() => {});
    return read;
  }

  async #read(): Promise<void> {
    let rows: { position: string; line: unknown }[];
    try {
      rows = (await this.#pool.query<{ position: string; line: unknown }>('SELECT position, line FROM watch_journal WHERE position > $1 ORDER BY position', [this.#position])).rows;
    } catch (error) {
      throw storeError(this.#location, error);
    }
    for (const row of rows) {
      const reset = row.line as { op?: unknown; rows?: unknown } | null;
      if (reset?.op === 'reset') {
        this.#rowsSinceImage = 0;
        this.#imageRows = typeof reset.rows === 'number' ? reset.rows : 0;
      }
      this.#rowsSinceImage++;
      try {
        this.apply(row.line as JournalLine, (why) => new StoreError(ErrorCode.STORE_DATA, `watch_journal row ${row.position}: ${why}`));
      } catch (error) {
        // A row this service did not write: reported, and passed over so that the rest still apply.
        this.#logger.error({ err: (error as Error).message }, 'watchlist journal row refused');
      }
      this.#position = Number(row.position);
    }
    if (rows.length > 0) for (const listener of this.#listeners) listener();
  }

  /** A change another follower acknowledged before this one was asked for is applied here first. */
  protected override beforeChange(): Promise<void> {
    return this.catchUp();
  }

  /** Written as a row (its turn taken on the journal's head), announced, then applied here in journal order. */
  protected async commit(line: JournalLine): Promise<void> {
    await this.#write(async (client) => {
      await client.query('INSERT INTO watch_journal (line) VALUES ($1)', [JSON.stringify(line)]);
    });
    await this.catchUp();
  }

  /**
   * Rewrite the journal as the rows that make the present state, once it
   * has grown well past them (the lease holder asks, after a screening
   * pass). In one transaction holding the head: the rows up to now are
   * read and applied, a `reset` and the image are written after them, and
   * the rows before are deleted. A follower reading on meets the reset
   * first and rebuilds from the image.
   */
  async compactIfGrown(minRows = MIN_COMPACT_ROWS): Promise<boolean> {
    if (this.#rowsSinceImage <= Math.max(minRows, COMPACT_FACTOR * this.#imageRows)) return false;
    let rows = 0;
    await this.#write(async (client) => {
      // Caught up under the lock: no row can come between the image and what it describes.
      await this.catchUp();
      const lines = this.image();
      const image: JournalLine[] = [{ op: 'reset', rows: lines.length + 1 }, ...lines];
      const written = await client.query<{ position: string }>(
        'INSERT INTO watch_journal (line) SELECT line FROM unnest($1::jsonb[]) WITH ORDINALITY AS u(line, n) ORDER BY n RETURNING position',
        [image.map((l) => JSON.stringify(l))],
      );
      await client.query('DELETE FROM watch_journal WHERE position < $1', [Math.min(...written.rows.map((r) => Number(r.position)))]);
      rows = image.length;
    });
    this.#logger.info({ rows }, 'watchlist journal rewritten');
    await this.catchUp();
    return true;
  }

  /** One transaction holding the journal's head, announced on commit: writers take turns, so positions become visible in order. */
  async #write(work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw storeError(this.#location, error);
    }
    try {
      await client.query('BEGIN');
      await client.query('SELECT singleton FROM watch_journal_head FOR UPDATE');
      await work(client);
      await client.query('SELECT pg_notify($1, $2)', [watchChannel(this.#location), 'changed']);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error instanceof UpiRiskError ? error : storeError(this.#location, error);
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    await this.#notifications?.close();
    await this.#reads;
  }
}
