import type pg from 'pg';
import type { Logger } from '../common/logger.js';
import { beforeDeadline } from '../common/deadline.js';
import { connectStore, holdsAdvisoryLock, redactStoreUrl, type StoreLocation } from '../store/postgres.js';

/**
 * Which follower screens watched VPAs and delivers their events: the one
 * holding a session advisory lock on a connection of its own. The others
 * try for it every `pollMs`; when the holder's connection ends (a crash, a
 * network cut), PostgreSQL lets the lock go and another takes over. While
 * it holds the lease, a follower runs what `onAcquired` starts, and stops
 * it when the lease is lost.
 *
 * The holder also asks its connection every `pollMs` whether the lock is
 * still held, and gives the lease up when the answer is no or does not
 * come within `checkMs`: a connection cut without either side hearing of
 * it (a half-open socket, a failover) would otherwise leave it screening
 * while the store has let the lock go to another, and each change would
 * be made twice, as events of two ids.
 */
/** How long the holder waits for its connection to confirm the lease, ms. */
const DEFAULT_CHECK_MS = 5_000;

export class WatchLease {
  readonly #location: StoreLocation;
  readonly #logger: Logger;
  readonly #onAcquired: () => Promise<() => Promise<void>>;
  readonly #pollMs: number;
  #client: pg.Client | null = null;
  #stop: (() => Promise<void>) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  readonly #checkMs: number;

  constructor(location: StoreLocation, logger: Logger, onAcquired: () => Promise<() => Promise<void>>, pollMs = 2000, checkMs = DEFAULT_CHECK_MS) {
    this.#location = location;
    this.#logger = logger;
    this.#onAcquired = onAcquired;
    this.#pollMs = pollMs;
    this.#checkMs = checkMs;
  }

  get held(): boolean {
    return this.#client !== null;
  }

  /** Try now, then every `pollMs` while not held; check it as often while held. */
  start(): void {
    const tick = () => {
      void (this.#client === null ? this.#try() : this.#check()).finally(() => {
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
      const got = (await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [this.#lockName()])).rows[0]?.got === true;
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

  /** Give the lease up unless its connection says, within `checkMs`, that the lock is still held. */
  async #check(): Promise<void> {
    const client = this.#client;
    if (client === null || this.#closed) return;
    const held = await beforeDeadline(holdsAdvisoryLock(client, this.#lockName()), this.#checkMs, 'the lease was not confirmed in time').catch(() => false);
    if (held || this.#client !== client) return;
    this.#client = null;
    this.#logger.error({ store: redactStoreUrl(this.#location.url), checkMs: this.#checkMs }, 'the watchlist lease could not be confirmed on its connection; giving it up, another follower takes over');
    await this.#release();
    // Not waited for: a connection that does not answer may not answer its end either.
    void client.end().catch(() => {});
  }

  #lockName(): string {
    return `upi-risk watch ${this.#location.schema}`;
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
