import type pg from 'pg';
import type { Logger } from '../common/logger.js';
import { connectStore, redactStoreUrl, type StoreLocation } from '../store/postgres.js';

/**
 * Which follower screens watched VPAs and delivers their events: the one
 * holding a session advisory lock on a connection of its own. The others
 * try for it every `pollMs`; when the holder's connection ends (a crash, a
 * network cut), PostgreSQL lets the lock go and another takes over. While
 * it holds the lease, a follower runs what `onAcquired` starts, and stops
 * it when the lease is lost.
 */
export class WatchLease {
  readonly #location: StoreLocation;
  readonly #logger: Logger;
  readonly #onAcquired: () => Promise<() => Promise<void>>;
  readonly #pollMs: number;
  #client: pg.Client | null = null;
  #stop: (() => Promise<void>) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(location: StoreLocation, logger: Logger, onAcquired: () => Promise<() => Promise<void>>, pollMs = 2000) {
    this.#location = location;
    this.#logger = logger;
    this.#onAcquired = onAcquired;
    this.#pollMs = pollMs;
  }

  get held(): boolean {
    return this.#client !== null;
  }

  /** Try now, then every `pollMs` while not held. */
  start(): void {
    const tick = () => {
      void this.#try().finally(() => {
        if (!this.#closed) this.#timer = setTimeout(tick, this.#pollMs).unref();
      });
    };
    tick();
  }

  async #try(): Promise<void> {
    if (this.#client !== null || this.#closed) return;
    let client: pg.Client;
    try {
      client = await connectStore(this.#location);
    } catch {
      return;
    }
    client.on('error', () => {});
    try {
      const got = (await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [`upi-risk watch ${this.#location.schema}`])).rows[0]?.got === true;
      if (!got || this.#closed) {
        await client.end().catch(() => {});
        return;
      }
    } catch {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    client.once('end', () => {
      if (this.#client !== client) return;
      this.#client = null;
      this.#logger.error({ store: redactStoreUrl(this.#location.url) }, 'lost the watchlist lease with its connection; another follower takes over');
      void this.#release();
    });
    this.#logger.info({ schema: this.#location.schema }, 'watchlist lease taken: this follower screens watched VPAs and delivers their events');
    this.#stop = await this.#onAcquired();
  }

  async #release(): Promise<void> {
    const stop = this.#stop;
    this.#stop = null;
    await stop?.();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    await this.#release();
    await client?.end().catch(() => {});
  }
}
