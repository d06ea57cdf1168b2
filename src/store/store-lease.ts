import type pg from 'pg';
import { messageOf } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { beforeDeadline } from '../common/deadline.js';
import { connectStore, holdsAdvisoryLock, redactStoreUrl, type StoreLocation } from './postgres.js';

/**
 * Which follower does a duty of the fleet that one at a time must do
 * (screening watched VPAs and delivering their events; recording the
 * history of answers): the one holding a session advisory lock, named for
 * the duty, on a connection of its own. The others
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

/** A duty one follower at a time does: `lock` names its advisory lock, `name` and `duty` its log lines. */
export interface LeasedDuty {
  readonly lock: string;
  /** Such as "watchlist". */
  readonly name: string;
  /** What the holder does, such as "screens watched VPAs and delivers their events". */
  readonly duty: string;
}

export class StoreLease {
  readonly #location: StoreLocation;
  readonly #duty: LeasedDuty;
  readonly #logger: Logger;
  /** Given the backend pid of the lease's connection: a write made for the lease checks it still holds the lock (holdsAdvisoryLock). */
  readonly #onAcquired: (pid: number) => Promise<() => Promise<void>>;
  readonly #pollMs: number;
  #client: pg.Client | null = null;
  #stop: (() => Promise<void>) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  readonly #checkMs: number;

  constructor(location: StoreLocation, duty: LeasedDuty, logger: Logger, onAcquired: (pid: number) => Promise<() => Promise<void>>, pollMs = 2000, checkMs = DEFAULT_CHECK_MS) {
    this.#location = location;
    this.#duty = duty;
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
      void (this.#client === null ? this.#try() : this.#check())
        .catch((error: unknown) => this.#logger.error({ err: messageOf(error) }, `the ${this.#duty.name} lease could not be tried or checked; tried again`))
        .finally(() => {
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
    let pid: number;
    try {
      const row = (await client.query<{ got: boolean; pid: number }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got, pg_backend_pid() AS pid', [this.lockName])).rows[0];
      pid = row?.pid ?? 0;
      if (row?.got !== true || this.#closed) {
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
      this.#logger.error({ store: redactStoreUrl(this.#location.url) }, `lost the ${this.#duty.name} lease with its connection; another follower takes over`);
      void this.#release();
    });
    this.#logger.info({ schema: this.#location.schema }, `${this.#duty.name} lease taken: this follower ${this.#duty.duty}`);
    let stop: () => Promise<void>;
    try {
      stop = await this.#onAcquired(pid);
    } catch (error) {
      // Nothing started: the lease goes, and is tried for again.
      this.#logger.error({ err: messageOf(error) }, `starting what the ${this.#duty.name} lease holds failed; it is given up`);
      if (this.#client === client) this.#client = null;
      void client.end().catch(() => {});
      return;
    }
    // Lost, given up or closed while it started: what it started stops now.
    if (this.#client !== client || this.#closed) await stop();
    else this.#stop = stop;
  }

  /** Give the lease up unless its connection says, within `checkMs`, that the lock is still held. */
  async #check(): Promise<void> {
    const client = this.#client;
    if (client === null || this.#closed) return;
    const held = await beforeDeadline(holdsAdvisoryLock(client, this.lockName), this.#checkMs, 'the lease was not confirmed in time').catch(() => false);
    if (held || this.#client !== client) return;
    this.#client = null;
    this.#logger.error({ store: redactStoreUrl(this.#location.url), checkMs: this.#checkMs }, `the ${this.#duty.name} lease could not be confirmed on its connection; giving it up, another follower takes over`);
    // Ended first, so that the lock goes while what the lease started stops; not waited for: a connection that does not answer may not answer its end either.
    void client.end().catch(() => {});
    await this.#release();
  }

  /** The advisory lock's name: one per duty and schema. */
  get lockName(): string {
    return `upi-risk ${this.#duty.lock} ${this.#location.schema}`;
  }

  /** Stop what the lease started; a stop that fails is logged (nothing awaits some releases: a failure must not end the process). */
  async #release(): Promise<void> {
    const stop = this.#stop;
    this.#stop = null;
    await stop?.().catch((error: unknown) => this.#logger.error({ err: messageOf(error) }, `stopping what the ${this.#duty.name} lease started failed`));
  }

  /** Give the lease up now (what it started is stopped); it is tried for again after `pollMs`. */
  async giveUp(): Promise<void> {
    const client = this.#client;
    if (client === null) return;
    this.#client = null;
    this.#logger.warn({ schema: this.#location.schema }, `${this.#duty.name} lease given up`);
    const ended = client.end().catch(() => {});
    await this.#release();
    await ended;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    // Not waited for, as in #check: a connection that does not answer may not answer its end either.
    void client?.end().catch(() => {});
    await this.#release();
  }
}
